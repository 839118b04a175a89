//! Waiting: the bandwidth pacer ([`Pacer`], per part) and the retry backoff ([`Backoff`],
//! exponential with jitter). Every wait returns early when the daemon shuts down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest single sleep of a wait, so that shutdown is noticed.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// Sleep until `until` or until `stop` is set. Returns false when stopped.
pub fn wait_until(until: Instant, stop: &AtomicBool) -> bool {
    wait_until_or(until, stop, || false)
}

/// [`wait_until`], returning early (true) as soon as `wake` holds: a finalized episode
/// was handed over, an operator asked for a retry.
pub fn wait_until_or(until: Instant, stop: &AtomicBool, wake: impl Fn() -> bool) -> bool {
    loop {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let now = Instant::now();
        if now >= until || wake() {
            return true;
        }
        std::thread::sleep((until - now).min(WAIT_SLICE));
    }
}

/// Keeps the average upload rate at or under a limit: a send of `n` bytes may start once
/// the previous sends' time at the limit has passed. Bytes sent by time `t` are at most
/// `limit * t` plus one part.
#[derive(Debug)]
pub struct Pacer {
    bytes_per_s: u64,
    next: Option<Instant>,
}

impl Pacer {
    /// `bytes_per_s` 0: unlimited.
    #[must_use]
    pub fn new(bytes_per_s: u64) -> Self {
        Self {
            bytes_per_s,
            next: None,
        }
    }

    /// Wait until `n` bytes may be sent, and account for them. False when stopped.
    pub fn before_send(&mut self, n: u64, stop: &AtomicBool) -> bool {
        if self.bytes_per_s == 0 {
            return !stop.load(Ordering::Acquire);
        }
        let now = Instant::now();
        let start = self.next.map_or(now, |t| t.max(now));
        if !wait_until(start, stop) {
            return false;
        }
        let secs = n as f64 / self.bytes_per_s as f64;
        self.next = Some(start + Duration::from_secs_f64(secs));
        true
    }
}

/// Exponential backoff from `min` to `max`, each delay drawn in `[d/2, d]`.
#[derive(Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    cur: Duration,
}

impl Backoff {
    #[must_use]
    pub fn new(min: Duration, max: Duration) -> Self {
        Self { min, max, cur: min }
    }

    /// The delay after a transient failure; the next one doubles.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.cur.min(self.max);
        self.cur = (self.cur * 2).min(self.max);
        jitter(d)
    }

    /// The delay after a configuration-class failure (credentials, bucket, policy): the
    /// longest.
    pub fn long_delay(&mut self) -> Duration {
        self.cur = self.max;
        jitter(self.max)
    }

    /// A success: the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.cur = self.min;
    }
}

/// `d` scaled by a factor in `[1/2, 1]` (from the clock's nanoseconds: no RNG needed for
/// spreading a fleet's retries).
fn jitter(d: Duration) -> Duration {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let frac = 0.5 + f64::from(nanos % 1000) / 2000.0;
    d.mul_f64(frac).max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_backoff_doubles_to_the_max_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(400));
        let d: Vec<_> = (0..4).map(|_| b.next_delay()).collect();
        assert!(d[0] <= Duration::from_millis(100) && d[0] >= Duration::from_millis(50));
        assert!(d[2] <= Duration::from_millis(400) && d[2] >= Duration::from_millis(200));
        assert!(d[3] <= Duration::from_millis(400));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn upload_pacer_spaces_sends_by_their_size() {
        let stop = AtomicBool::new(false);
        let mut p = Pacer::new(1_000_000);
        let t0 = Instant::now();
        assert!(p.before_send(50_000, &stop));
        assert!(p.before_send(50_000, &stop));
        assert!(p.before_send(1, &stop));
        // Two sends of 50 ms at the limit must have passed before the third.
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }
}
