//! The ring of a stream recorded in flight mode: which of its finalized chunks are still
//! on disk (their `t_ns` span and bytes), which of them trigger windows still need
//! (pins), and the latest `t_ns` received. The finisher asks it, after each chunk, how
//! many of the oldest chunks fall out of the ring ([`FlightRing::admit`]); the trigger
//! windows (`flight`) pin what they still have to copy.
//!
//! Bounds are honoured within one chunk: the ring keeps at least `max_ns` of `t_ns` and
//! `max_bytes` of chunk files when it has them, and drops its oldest chunk as soon as the
//! others alone reach a bound. The newest chunk is never dropped.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The bounds of a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingBounds {
    /// `t_ns` span kept (`flight.ring_seconds`).
    pub max_ns: u64,
    /// Chunk-file bytes kept (`flight.ring_bytes`).
    pub max_bytes: u64,
}

/// A finalized chunk the ring holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingChunk {
    pub chunk_index: u64,
    pub t_first: i64,
    pub t_last: i64,
    pub bytes: u64,
}

/// Who a stream is, as triggers name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingIdentity {
    /// The episode (single-stream) or the multi-stream episode the stream belongs to.
    pub episode_id: String,
    /// The stream's name in its multi-stream episode; `None` for an episode of its own.
    pub stream: Option<String>,
    /// The directory holding the stream's manifest and chunks.
    pub dir: PathBuf,
    /// The id the stream's files are named with (`{id}_manifest.wshard`).
    pub files_id: String,
    /// Marked `latched` at open: its last value goes into every window.
    pub latched: bool,
}

impl RingIdentity {
    /// The name triggers use: `EPISODE` or `EPISODE/STREAM`.
    #[must_use]
    pub fn name(&self) -> String {
        match &self.stream {
            Some(s) => format!("{}/{s}", self.episode_id),
            None => self.episode_id.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct RingState {
    held: VecDeque<RingChunk>,
    /// Window id -> the oldest chunk index it still needs.
    pins: BTreeMap<u64, u64>,
    /// The index the next finalized chunk takes.
    next_index: u64,
    evicted_chunks: u64,
    evicted_bytes: u64,
}

/// What status shows of a ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingView {
    pub chunks: u64,
    pub bytes: u64,
    pub oldest_t_ns: Option<i64>,
    pub newest_t_ns: Option<i64>,
    pub evicted_chunks: u64,
    pub evicted_bytes: u64,
    pub pins: u64,
}

/// `seal_after_ns` when no window waits for a seal.
const NO_SEAL: i64 = i64::MAX;

/// The ring of one flight stream (shared by its finisher and the trigger windows).
#[derive(Debug)]
pub struct FlightRing {
    pub identity: RingIdentity,
    pub bounds: RingBounds,
    last_t_ns: AtomicI64,
    has_last: AtomicBool,
    /// A pending window ends at this `t_ns` ([`NO_SEAL`] when none): the writer seals the
    /// open chunk once it holds a timestep past it, so the window's last chunk is on disk
    /// right after its post-window, not at the next rotation.
    seal_after_ns: AtomicI64,
    /// A window's post-window deadline passed with the producer silent: the writer seals
    /// the open chunk at its next tick, whatever it holds.
    seal_now: AtomicBool,
    ended: AtomicBool,
    bytes_held: AtomicU64,
    state: Mutex<RingState>,
}

impl FlightRing {
    #[must_use]
    pub fn new(identity: RingIdentity, bounds: RingBounds) -> Self {
        Self {
            identity,
            bounds,
            last_t_ns: AtomicI64::new(0),
            has_last: AtomicBool::new(false),
            seal_after_ns: AtomicI64::new(NO_SEAL),
            seal_now: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            bytes_held: AtomicU64::new(0),
            state: Mutex::new(RingState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RingState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The connection accepted a timestep of `t_ns` (called once per batch, last step).
    pub fn note_t_ns(&self, t_ns: i64) {
        self.last_t_ns.store(t_ns, Ordering::Release);
        self.has_last.store(true, Ordering::Release);
    }

    /// A window needs the timesteps up to `end_ns`: seal the chunk that first holds one
    /// past it (the earliest such end wins while several windows are pending).
    pub fn seal_after(&self, end_ns: i64) {
        self.seal_after_ns.fetch_min(end_ns, Ordering::AcqRel);
    }

    /// Whether a chunk whose last timestep has `last_t_ns` must be sealed now for a
    /// window; true once per [`FlightRing::seal_after`].
    #[must_use]
    pub fn take_seal(&self, last_t_ns: i64) -> bool {
        let at = self.seal_after_ns.load(Ordering::Acquire);
        last_t_ns > at
            && self
                .seal_after_ns
                .compare_exchange(at, NO_SEAL, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// A window cannot wait for its post-window any longer (its wall-clock deadline
    /// passed): seal the open chunk at the writer's next tick, so that every timestep
    /// received is in a finalized chunk.
    pub fn seal_now(&self) {
        self.seal_now.store(true, Ordering::Release);
    }

    /// Whether the writer must seal its open chunk now ([`FlightRing::seal_now`]); true
    /// once per request.
    #[must_use]
    pub fn take_seal_now(&self) -> bool {
        self.seal_now.swap(false, Ordering::AcqRel)
    }

    /// The latest `t_ns` received, `None` before the first timestep.
    #[must_use]
    pub fn latest_t_ns(&self) -> Option<i64> {
        self.has_last
            .load(Ordering::Acquire)
            .then(|| self.last_t_ns.load(Ordering::Acquire))
    }

    /// The stream's last chunk is listed (closed, aborted or interrupted): nothing more
    /// comes.
    pub fn set_ended(&self) {
        self.ended.store(true, Ordering::Release);
    }

    #[must_use]
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// List a newly finalized chunk and return how many of the oldest chunks leave the
    /// ring (the caller removes them from the manifest, commits, then deletes the files).
    /// Pinned chunks and everything after them stay.
    pub fn admit(&self, chunk: RingChunk) -> Vec<RingChunk> {
        let mut st = self.lock();
        st.next_index = chunk.chunk_index + 1;
        st.held.push_back(chunk);
        let keep_from = st.pins.values().copied().min().unwrap_or(u64::MAX);
        let mut bytes: u64 = st.held.iter().map(|c| c.bytes).sum();
        let newest = chunk.t_last;
        let mut out = Vec::new();
        while st.held.len() > 1 {
            let (Some(front), Some(second)) = (st.held.front().copied(), st.held.get(1).copied())
            else {
                break;
            };
            if front.chunk_index >= keep_from {
                break;
            }
            let rest_bytes = bytes - front.bytes;
            let rest_span = u64::try_from(newest.saturating_sub(second.t_first)).unwrap_or(0);
            if rest_bytes < self.bounds.max_bytes && rest_span < self.bounds.max_ns {
                break;
            }
            bytes = rest_bytes;
            st.evicted_chunks += 1;
            st.evicted_bytes += front.bytes;
            st.held.pop_front();
            out.push(front);
        }
        self.bytes_held.store(bytes, Ordering::Relaxed);
        out
    }

    /// Pin, for window `window`, every held chunk from the one holding `from_t_ns` on
    /// (with `latched`, from the one holding the last step before it); chunks finalized
    /// later are covered too. Returns the first chunk index pinned.
    pub fn pin(&self, window: u64, from_t_ns: i64) -> u64 {
        let mut st = self.lock();
        let latched = self.identity.latched;
        let first = st
            .held
            .iter()
            .position(|c| c.t_last >= from_t_ns)
            .map(|p| {
                if latched && p > 0 && st.held[p].t_first >= from_t_ns {
                    p - 1
                } else {
                    p
                }
            })
            .or_else(|| latched.then(|| st.held.len().checked_sub(1)).flatten())
            .and_then(|p| st.held.get(p))
            .map_or(st.next_index, |c| c.chunk_index);
        st.pins.insert(window, first);
        first
    }

    /// Window `window` no longer needs anything of this ring.
    pub fn unpin(&self, window: u64) {
        self.lock().pins.remove(&window);
    }

    /// What status shows.
    #[must_use]
    pub fn view(&self) -> RingView {
        let st = self.lock();
        RingView {
            chunks: st.held.len() as u64,
            bytes: st.held.iter().map(|c| c.bytes).sum(),
            oldest_t_ns: st.held.front().map(|c| c.t_first),
            newest_t_ns: st.held.back().map(|c| c.t_last),
            evicted_chunks: st.evicted_chunks,
            evicted_bytes: st.evicted_bytes,
            pins: st.pins.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ring(max_ns: u64, max_bytes: u64, latched: bool) -> FlightRing {
        FlightRing::new(
            RingIdentity {
                episode_id: "ep".into(),
                stream: None,
                dir: PathBuf::from("/nowhere"),
                files_id: "ep".into(),
                latched,
            },
            RingBounds { max_ns, max_bytes },
        )
    }

    fn chunk(k: u64) -> RingChunk {
        let t = i64::try_from(k).unwrap() * 10;
        RingChunk {
            chunk_index: k,
            t_first: t,
            t_last: t + 9,
            bytes: 100,
        }
    }

    #[test]
    fn flight_ring_keeps_its_seconds_within_one_chunk() {
        let r = ring(25, u64::MAX, false);
        let mut evicted = Vec::new();
        for k in 0..10 {
            evicted.extend(r.admit(chunk(k)).into_iter().map(|c| c.chunk_index));
        }
        assert_eq!(evicted, (0..7).collect::<Vec<_>>());
        let v = r.view();
        // 25 ns kept at least, less than 25 + one chunk.
        assert_eq!((v.oldest_t_ns, v.newest_t_ns), (Some(70), Some(99)));
    }

    #[test]
    fn flight_ring_keeps_its_bytes_and_what_windows_pin() {
        let r = ring(u64::MAX, 250, false);
        for k in 0..3 {
            r.admit(chunk(k));
        }
        assert_eq!(r.view().chunks, 3);
        assert_eq!(r.pin(7, 15), 1);
        let mut gone: Vec<u64> = Vec::new();
        for k in 3..6 {
            gone.extend(r.admit(chunk(k)).iter().map(|c| c.chunk_index));
        }
        // Chunk 0 is not pinned; the pin holds everything from chunk 1 on.
        assert_eq!(gone, vec![0]);
        r.unpin(7);
        let gone: Vec<u64> = r.admit(chunk(6)).iter().map(|c| c.chunk_index).collect();
        assert_eq!(gone, vec![1, 2, 3]);
        assert_eq!(r.view().bytes, 300);
    }

    #[test]
    fn flight_ring_latched_pins_the_last_value_before_the_window() {
        let r = ring(u64::MAX, u64::MAX, true);
        r.admit(chunk(0));
        r.admit(chunk(1));
        assert_eq!(r.pin(1, 1000), 1);
        assert_eq!(r.pin(2, 10), 0);
        assert_eq!(ring(1, 1, false).pin(3, 0), 0);
    }

    #[test]
    fn flight_ring_seal_after_fires_once_past_the_earliest_end() {
        let ring = FlightRing::new(
            RingIdentity {
                episode_id: "e".into(),
                stream: None,
                dir: PathBuf::from("e"),
                files_id: "e".into(),
                latched: false,
            },
            RingBounds {
                max_ns: 1,
                max_bytes: 1,
            },
        );
        assert!(!ring.take_seal(i64::MAX - 1));
        ring.seal_after(100);
        ring.seal_after(200);
        assert!(!ring.take_seal(100), "not past the end yet");
        assert!(ring.take_seal(101));
        assert!(!ring.take_seal(300), "once per request");
        assert!(!ring.take_seal_now());
        ring.seal_now();
        assert!(ring.take_seal_now());
        assert!(!ring.take_seal_now(), "once per request");
    }
}
