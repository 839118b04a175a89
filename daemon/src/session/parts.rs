//! The parts of a split episode: a recording episode `EP` may be cut while it records (the
//! control verb `split`, or `[rolling]` bounds); everything recorded so far becomes a
//! finalized `complete` episode and recording goes on into the next part, `EP.0001`,
//! `EP.0002`, ... on the same connection, the producer unaware.
//!
//! [`PartControl`] is what the writer, the finisher, the connection and the control socket
//! share about it: the part recording now, the parts finished so far, the current part's
//! size and time span, and the pending split requests. The registry keeps the episode under
//! the producer's id `EP` whatever part records; [`PartControl::current`] names the part.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crossbeam_channel::Sender;
use serde_json::{json, Value};
use wshard_storage::layout::validate_episode_id;

use super::cut_reason::{CutReason, LastCut};

/// Digits of a part number in a part id (`EP.0001`); more are used past 9999.
pub const PART_DIGITS: usize = 4;
/// The manifest key holding a part's links (`extra.split`).
pub const SPLIT_MANIFEST_KEY: &str = "split";

/// The id of part `n` (1-based; part 0 is `base` itself) of episode `base`.
#[must_use]
pub fn part_id(base: &str, n: u64) -> String {
    if n == 0 {
        base.to_owned()
    } else {
        format!("{base}.{n:0PART_DIGITS$}")
    }
}

/// What cut the part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitCause {
    /// The control verb `split` (`wshard split EPISODE`).
    Operator,
    /// `[rolling] max_bytes` or `max_duration_ms` (which one).
    Rolling(CutReason),
}

impl SplitCause {
    /// The reason `status` shows for the cut.
    #[must_use]
    pub fn reason(self) -> CutReason {
        match self {
            Self::Operator => CutReason::Split,
            Self::Rolling(r) => r,
        }
    }
}

/// A split that was made: the part finalized (asynchronously) and the part recording now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitDone {
    pub finished: String,
    pub recording: String,
    /// `t_ns` of the finished part's first and last timestep.
    pub first_t_ns: Option<i64>,
    pub last_t_ns: Option<i64>,
}

/// A cut of one stream of a multi-stream episode, asked by the episode's split
/// (`control::split_multi`): the stream goes on in `EpisodeLayout::stream(data_dir, part,
/// STREAM)`, whose episode directory and index exist already.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamCut {
    /// The multi-stream episode as its producer opened it (part 0).
    pub episode: String,
    /// The next part's number and id (`EP.000N`).
    pub number: u64,
    pub part: String,
    /// The data directory.
    pub data_dir: std::path::PathBuf,
}

/// A pending split request: `None` for a single-stream episode's own next part.
pub(crate) type SplitRequest = (Option<StreamCut>, Sender<SplitReply>);

/// Why a split was refused; nothing was cut, recording goes on in the same part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The next part's id breaks the episode id rule (too long for `max_episode_id_bytes`).
    #[error("episode `{episode}`: the next part's id `{part}` does not fit the episode id rule: {reason}")]
    PartIdTooLong {
        episode: String,
        part: String,
        reason: String,
    },
    /// The current part holds no timestep yet: cutting it would make an empty episode.
    #[error("episode `{episode}`: part `{part}` holds no timestep yet; nothing to split")]
    EmptyPart { episode: String, part: String },
    /// A directory with the next part's id exists already.
    #[error("episode `{episode}`: the next part `{part}` exists already in the data directory")]
    PartExists { episode: String, part: String },
    /// The episode failed on storage, or creating the next part failed.
    #[error("episode `{episode}`: {reason}")]
    Storage { episode: String, reason: String },
    /// The episode finalized before the writer got to the request.
    #[error("episode `{episode}` finalized before the split was made")]
    Finalized { episode: String },
}

/// What the chunk writer and the finisher switch to after a part's last chunk (made by
/// `super::split`).
pub(crate) struct NextPart {
    /// The finished part's `split` object, written into its final manifest.
    pub(crate) finished_links: Value,
    /// The next part's directory.
    pub(crate) layout: wshard_storage::layout::EpisodeLayout,
    /// The next part's manifest as committed at its creation.
    pub(crate) manifest: wshard::manifest::Manifest,
}

/// The writer's answer to a split request.
pub type SplitReply = Result<SplitDone, SplitError>;

/// What the current part holds, for status, metrics and the rolling bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PartState {
    /// The part recording now (`EP`, then `EP.0001`, ...).
    current: String,
    /// Part number of `current` (0 for `EP`): also how many parts were finished.
    number: u64,
    /// Parts cut by `[rolling]` so far.
    rolled: u64,
    /// Last split refused for `[rolling]` (rolling then stops for the episode).
    rolling_error: Option<String>,
    /// The last cut: the part it finished and why.
    last_cut: Option<LastCut>,
}

/// Shared by a session's threads, its registry entry and the control socket.
#[derive(Debug)]
pub struct PartControl {
    /// The producer's episode id (part 0).
    base: String,
    /// Only single-stream episodes are split (streams of a multi-stream episode are not).
    splittable: bool,
    /// `limits.max_episode_id_bytes`, which a part id must fit.
    max_id_bytes: usize,
    state: Mutex<PartState>,
    requests: Mutex<Vec<SplitRequest>>,
    /// Set while `requests` holds any: the writer's check without the lock.
    pending: std::sync::atomic::AtomicBool,
    /// Timestep record payload bytes in the current part.
    pub(crate) part_bytes: AtomicU64,
    /// Timesteps in the current part.
    pub(crate) part_steps: AtomicU64,
    /// `t_ns` of the current part's first and last timestep (`i64::MIN`: none).
    pub(crate) part_first_t_ns: std::sync::atomic::AtomicI64,
    pub(crate) part_last_t_ns: std::sync::atomic::AtomicI64,
    /// Timesteps and chunks of the parts already finalized (for CLOSE's count).
    pub(crate) finished_steps: AtomicU64,
    pub(crate) finished_chunks: AtomicU64,
    /// Parts whose final manifest the finisher committed.
    pub(crate) parts_finalized: AtomicU64,
    /// The session failed (no part of it is finalized any more).
    pub(crate) failed: std::sync::atomic::AtomicBool,
}

impl PartControl {
    /// The parts of episode `base`; `splittable` false for a stream of a multi-stream episode.
    #[must_use]
    pub fn new(base: &str, splittable: bool, max_id_bytes: usize) -> Self {
        Self {
            base: base.to_owned(),
            splittable,
            max_id_bytes,
            state: Mutex::new(PartState {
                current: base.to_owned(),
                ..PartState::default()
            }),
            requests: Mutex::new(Vec::new()),
            pending: std::sync::atomic::AtomicBool::new(false),
            part_bytes: AtomicU64::new(0),
            part_steps: AtomicU64::new(0),
            part_first_t_ns: std::sync::atomic::AtomicI64::new(i64::MIN),
            part_last_t_ns: std::sync::atomic::AtomicI64::new(i64::MIN),
            finished_steps: AtomicU64::new(0),
            finished_chunks: AtomicU64::new(0),
            parts_finalized: AtomicU64::new(0),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The parts of stream `stream` of a multi-stream episode, recording now in part
    /// `part` of it: not split on its own, but cut with its episode ([`StreamCut`]).
    #[must_use]
    pub fn for_stream(stream: &str, part: &str, max_id_bytes: usize) -> Self {
        let p = Self::new(stream, false, max_id_bytes);
        p.state().current = part.to_owned();
        p
    }

    fn state(&self) -> MutexGuard<'_, PartState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn requests(&self) -> MutexGuard<'_, Vec<SplitRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The producer's episode id.
    #[must_use]
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Whether the episode may be split (false for a stream of a multi-stream episode).
    #[must_use]
    pub fn splittable(&self) -> bool {
        self.splittable
    }

    /// The part recording now.
    #[must_use]
    pub fn current(&self) -> String {
        self.state().current.clone()
    }

    /// The current part's number (0 for `EP`): parts finished so far.
    #[must_use]
    pub fn number(&self) -> u64 {
        self.state().number
    }

    /// Parts cut by `[rolling]` so far.
    #[must_use]
    pub fn rolled(&self) -> u64 {
        self.state().rolled
    }

    /// The id the next part gets, checked against the episode id rule.
    ///
    /// # Errors
    /// [`SplitError::PartIdTooLong`].
    pub(crate) fn next_id(&self) -> Result<(u64, String), SplitError> {
        let n = self.state().number.saturating_add(1);
        let id = part_id(&self.base, n);
        match validate_episode_id(&id, self.max_id_bytes) {
            Ok(()) => Ok((n, id)),
            Err(e) => Err(SplitError::PartIdTooLong {
                episode: self.base.clone(),
                part: id,
                reason: e.to_string(),
            }),
        }
    }

    /// Ask the writer for a split; the answer comes on the returned channel.
    #[must_use]
    pub fn request_split(&self) -> crossbeam_channel::Receiver<SplitReply> {
        self.request(None)
    }

    /// Ask the writer of a stream to cut it into the next part of its episode.
    #[must_use]
    pub fn request_stream_cut(&self, cut: StreamCut) -> crossbeam_channel::Receiver<SplitReply> {
        self.request(Some(cut))
    }

    fn request(&self, cut: Option<StreamCut>) -> crossbeam_channel::Receiver<SplitReply> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.requests().push((cut, tx));
        self.pending.store(true, Ordering::Release);
        rx
    }

    /// The pending split requests, taken (for the writer).
    pub(crate) fn take_requests(&self) -> Vec<SplitRequest> {
        if !self.pending.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut r = self.requests();
        self.pending.store(false, Ordering::Release);
        std::mem::take(&mut *r)
    }

    /// Account `steps` timesteps of `bytes` payload bytes in all, their `t_ns` from
    /// `first` to `last`, to the current part (once per run of records the writer takes).
    pub(crate) fn add_steps(&self, steps: u64, bytes: u64, first: i64, last: i64) {
        self.part_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.part_steps.fetch_add(steps, Ordering::Relaxed);
        if self.part_first_t_ns.load(Ordering::Relaxed) == i64::MIN {
            self.part_first_t_ns.store(first, Ordering::Relaxed);
        }
        self.part_last_t_ns.store(last, Ordering::Relaxed);
    }

    /// `t_ns` of the current part's first and last timestep (`None` before one).
    #[must_use]
    pub fn part_t_range(&self) -> (Option<i64>, Option<i64>) {
        let first = self.part_first_t_ns.load(Ordering::Relaxed);
        let last = self.part_last_t_ns.load(Ordering::Relaxed);
        if first == i64::MIN {
            return (None, None);
        }
        (Some(first), Some(last))
    }

    /// Timesteps in the current part.
    #[must_use]
    pub fn part_steps(&self) -> u64 {
        self.part_steps.load(Ordering::Relaxed)
    }

    /// Of a stream's whole count (`steps` timesteps in `chunks` chunks, what its session's
    /// summary says), those in the part recording now (the finished parts' are theirs).
    #[must_use]
    pub fn part_counts(&self, steps: u64, chunks: u64) -> (u64, u64) {
        (
            steps.saturating_sub(self.finished_steps.load(Ordering::Relaxed)),
            chunks.saturating_sub(self.finished_chunks.load(Ordering::Relaxed)),
        )
    }

    /// Whether the session failed: no further part of it is finalized.
    #[must_use]
    pub fn session_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Parts whose final manifest is committed.
    #[must_use]
    pub fn parts_finalized(&self) -> u64 {
        self.parts_finalized.load(Ordering::Acquire)
    }

    /// Nanoseconds between the current part's first and last timestep.
    #[must_use]
    pub fn part_span_ns(&self) -> u64 {
        let first = self.part_first_t_ns.load(Ordering::Relaxed);
        let last = self.part_last_t_ns.load(Ordering::Relaxed);
        if first == i64::MIN {
            return 0;
        }
        u64::try_from(i128::from(last) - i128::from(first)).unwrap_or(0)
    }

    /// The writer cut the current part: `next` (number `n`) records now.
    pub(crate) fn cut(&self, n: u64, next: &str, cause: SplitCause) {
        let mut s = self.state();
        let finished = std::mem::replace(&mut s.current, next.to_owned());
        s.number = n;
        if cause.reason().is_rolling() {
            s.rolled += 1;
        }
        s.last_cut = Some(LastCut {
            finished,
            reason: cause.reason(),
        });
        drop(s);
        self.part_bytes.store(0, Ordering::Relaxed);
        self.part_steps.store(0, Ordering::Relaxed);
        self.part_first_t_ns.store(i64::MIN, Ordering::Relaxed);
        self.part_last_t_ns.store(i64::MIN, Ordering::Relaxed);
    }

    /// A rolling split was refused: rolling stops for this episode, with `why` in status.
    pub(crate) fn rolling_failed(&self, why: &SplitError) {
        self.state().rolling_error = Some(why.to_string());
    }

    /// Whether rolling was stopped for this episode by a refused split.
    #[must_use]
    pub(crate) fn rolling_stopped(&self) -> bool {
        self.state().rolling_error.is_some()
    }

    /// The parts as `status` shows them.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let s = self.state().clone();
        json!({
            "part": s.current,
            "part_number": s.number,
            "parts_finished": s.number,
            "parts_rolled": s.rolled,
            "part_bytes": self.part_bytes.load(Ordering::Relaxed),
            "part_timesteps": self.part_steps.load(Ordering::Relaxed),
            "part_seconds": self.part_span_ns() as f64 / 1e9,
            "rolling_error": s.rolling_error,
            "last_cut": s.last_cut.as_ref().map(LastCut::to_json),
        })
    }
}

/// The `split` object of a part's manifest: the episode it is a part of, its number, the
/// producer's seq that is its seq 0, and the parts before and after it.
#[must_use]
pub fn manifest_links(
    base: &str,
    number: u64,
    first_seq: u64,
    previous: Option<&str>,
    next: Option<&str>,
) -> Value {
    json!({
        "episode": base,
        "part": number,
        "first_seq": first_seq,
        "previous": previous,
        "next": next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_part_ids_and_rule() {
        assert_eq!(part_id("ep", 0), "ep");
        assert_eq!(part_id("ep", 1), "ep.0001");
        assert_eq!(part_id("ep", 12_345), "ep.12345");
        let fits = PartControl::new("abcd", true, 9);
        assert_eq!(fits.next_id(), Ok((1, "abcd.0001".to_owned())));
        let too_long = PartControl::new("abcd", true, 8);
        assert!(matches!(
            too_long.next_id(),
            Err(SplitError::PartIdTooLong { ref part, .. }) if part == "abcd.0001"
        ));
    }
}
