//! Per-episode rates (timesteps/s, bytes/s) over the last few seconds, from samples of the
//! episodes' counters taken by one thread every [`SAMPLE_EVERY`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::registry::{LiveEpisode, Registry};

/// How often the counters are sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The window rates are computed over.
pub const WINDOW: Duration = Duration::from_secs(5);

/// A rate pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    pub timesteps_per_s: f64,
    pub bytes_per_s: f64,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    received: u64,
    bytes: u64,
}

#[derive(Debug)]
struct Track {
    /// The episode's `opened` instant: a new episode under a reused id starts over.
    opened: Instant,
    samples: VecDeque<Sample>,
}

/// Recent samples of every open episode.
#[derive(Debug, Default)]
pub struct RateSampler {
    tracks: Mutex<HashMap<String, Track>>,
}

fn current(e: &LiveEpisode, at: Instant) -> Sample {
    Sample {
        at,
        received: e.stats.received.load(Ordering::Relaxed),
        bytes: e.stats.bytes.load(Ordering::Relaxed),
    }
}

impl RateSampler {
    /// Take one sample of every open episode and forget the episodes that left.
    pub fn sample(&self, registry: &Registry) {
        let now = Instant::now();
        let open = registry.episodes();
        let Ok(mut tracks) = self.tracks.lock() else {
            return;
        };
        tracks.retain(|id, t| {
            open.iter()
                .any(|e| &e.episode_id == id && e.opened == t.opened)
        });
        for e in &open {
            let t = tracks.entry(e.episode_id.clone()).or_insert_with(|| Track {
                opened: e.opened,
                // The episode started from zero when it opened.
                samples: VecDeque::from([Sample {
                    at: e.opened,
                    received: 0,
                    bytes: 0,
                }]),
            });
            t.samples.push_back(current(e, now));
            while t.samples.len() > 2
                && t.samples
                    .get(1)
                    .is_some_and(|s| now.duration_since(s.at) >= WINDOW)
            {
                t.samples.pop_front();
            }
        }
    }

    /// The rates of `e` over the window: from the oldest sample kept to its counters now.
    #[must_use]
    pub fn rates(&self, e: &LiveEpisode) -> Rates {
        let now = Instant::now();
        let oldest = self
            .tracks
            .lock()
            .ok()
            .and_then(|t| {
                t.get(&e.episode_id)
                    .filter(|t| t.opened == e.opened)
                    .and_then(|t| t.samples.front().copied())
            })
            .unwrap_or(Sample {
                at: e.opened,
                received: 0,
                bytes: 0,
            });
        rate_between(oldest, current(e, now))
    }
}

#[allow(clippy::cast_precision_loss)] // counters far below 2^52 in practice; a rate is approximate
fn rate_between(a: Sample, b: Sample) -> Rates {
    let dt = b.at.saturating_duration_since(a.at).as_secs_f64();
    if dt < 1e-3 {
        return Rates::default();
    }
    Rates {
        timesteps_per_s: b.received.saturating_sub(a.received) as f64 / dt,
        bytes_per_s: b.bytes.saturating_sub(a.bytes) as f64 / dt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_rate_between_samples() {
        let t0 = Instant::now();
        let a = Sample {
            at: t0,
            received: 100,
            bytes: 1000,
        };
        let b = Sample {
            at: t0 + Duration::from_secs(2),
            received: 300,
            bytes: 5000,
        };
        let r = rate_between(a, b);
        assert!((r.timesteps_per_s - 100.0).abs() < 1e-9);
        assert!((r.bytes_per_s - 2000.0).abs() < 1e-9);
        assert_eq!(rate_between(a, a), Rates::default());
    }
}
