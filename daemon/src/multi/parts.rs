//! The parts of a split multi-stream episode (`split EP`, see `control::split_multi`):
//! everything recorded so far becomes a finalized multi-stream episode (`EP`, then
//! `EP.0001`, ...), recording goes on into the next part, every stream cut at its own next
//! step boundary by its writer (exactly as a single-stream split, into
//! `EP.000N/streams/STREAM/`). The episode keeps its producer's id in the registry; its
//! index commits, joins and events go to the part recording now.
//!
//! Order (docs/DURABILITY.md, "Split multi-stream episodes"): [`MultiEpisode::begin_cut`]
//! creates the next part's directory, `streams/` and index (every stream `recording`)
//! before any stream is cut; each stream's writer then creates its folder in it;
//! [`MultiEpisode::finish_cut`] commits the finished part's index `complete` once every
//! cut stream's final manifest is committed.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::manifest::Manifest;

use super::{lock, MultiEpisode, State, StreamEnd};
use crate::episode_files::{commit_index, EventsLog};
use crate::session::cut_reason::{CutReason, LastCut};
use crate::session::parts::{part_id, PartControl, SplitError, SPLIT_MANIFEST_KEY};
use wshard_storage::layout::{validate_episode_id, EpisodeLayout, STREAMS_DIR};

/// `[rolling]` of a multi-stream episode: whether a cut is under way, and why rolling
/// stopped (a refused cut other than a stream with no timestep yet).
#[derive(Debug, Default)]
pub(crate) struct RollingState {
    cutting: std::sync::atomic::AtomicBool,
    stopped: std::sync::Mutex<Option<String>>,
    /// Parts cut by `[rolling]` so far.
    rolled: std::sync::atomic::AtomicU64,
    /// The last cut (`split EP` or `[rolling]`): the part it finished and why.
    last_cut: std::sync::Mutex<Option<LastCut>>,
}

/// The part of a multi-stream episode recording now.
#[derive(Clone, Debug)]
pub(crate) struct PartNow {
    pub(crate) number: u64,
    pub(crate) id: String,
    pub(crate) dir: PathBuf,
}

/// A finished part with streams still recording in it (their cut was refused: they ended
/// before their writer got to it). It is finalized when the last of them ends.
pub(crate) struct LeftBehind {
    dir: PathBuf,
    index: EpisodeIndex,
    waiting: BTreeSet<String>,
}

/// A cut begun: the next part exists, the streams are to be cut into it.
pub struct CutPlan {
    /// The finished part's number, id and directory.
    pub finished: String,
    finished_dir: PathBuf,
    /// The next part's number and id.
    pub number: u64,
    pub part: String,
    /// The streams recording at the cut, with their parts and how many parts each had
    /// finalized before it.
    pub streams: Vec<(String, Arc<PartControl>, u64)>,
}

/// The `split` object of a part's index metadata.
fn links(base: &str, number: u64, previous: Option<&str>, next: Option<&str>) -> Value {
    json!({"episode": base, "part": number, "previous": previous, "next": next})
}

impl MultiEpisode {
    /// `[rolling]`: take the right to make a cut (false when one is under way, or rolling
    /// stopped for the episode).
    pub fn begin_roll(&self) -> bool {
        if lock(&self.rolling.stopped).is_some() {
            return false;
        }
        !self
            .rolling
            .cutting
            .swap(true, std::sync::atomic::Ordering::AcqRel)
    }

    /// `[rolling]`: the cut is over; `stop` says why rolling stops for the episode.
    pub fn end_roll(&self, stop: Option<String>) {
        if let Some(why) = stop {
            *lock(&self.rolling.stopped) = Some(why);
        }
        self.rolling
            .cutting
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Why `[rolling]` stopped for the episode, if it did.
    #[must_use]
    pub fn rolling_error(&self) -> Option<String> {
        lock(&self.rolling.stopped).clone()
    }

    /// A cut finished part `finished` for `reason` (counted when `[rolling]` made it).
    pub fn note_cut(&self, finished: &str, reason: CutReason) {
        if reason.is_rolling() {
            self.rolling
                .rolled
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        *lock(&self.rolling.last_cut) = Some(LastCut {
            finished: finished.to_owned(),
            reason,
        });
    }

    /// Parts cut by `[rolling]` so far.
    #[must_use]
    pub fn parts_rolled(&self) -> u64 {
        self.rolling
            .rolled
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last cut, if the episode was cut.
    #[must_use]
    pub fn last_cut(&self) -> Option<LastCut> {
        lock(&self.rolling.last_cut).clone()
    }

    /// The part recording now.
    #[must_use]
    pub fn current_part(&self) -> String {
        lock(&self.state).part.id.clone()
    }

    /// The number of the part recording now (0: the episode itself; also the parts
    /// finished).
    #[must_use]
    pub fn current_part_number(&self) -> u64 {
        lock(&self.state).part.number
    }

    /// Begin a cut: check every recording stream holds a timestep in the current part
    /// (`parts_of` finds its parts), then create the next part durably (its directory with a
    /// data directory fsync, `streams/`, its index listing every recording stream
    /// `recording`, linked to the finished part) and make it the part recording now
    /// (joins, index commits, events). Streams are cut by the caller after this.
    ///
    /// # Errors
    /// [`SplitError`]: the episode closed or failed, a stream with no timestep (or still
    /// opening), the next part's id too long or taken, a storage step (what it created is
    /// left for recovery, an empty episode; recording goes on in the same part).
    pub fn begin_cut(
        &self,
        parts_of: &dyn Fn(&str) -> Option<Arc<PartControl>>,
        max_id_bytes: usize,
    ) -> Result<CutPlan, SplitError> {
        let mut st = lock(&self.state);
        let base = self.id.clone();
        if st.index.closed || self.is_finalized() {
            return Err(SplitError::Finalized { episode: base });
        }
        if let Some(why) = &st.failed {
            return Err(SplitError::Storage {
                episode: base,
                reason: format!("an earlier index commit failed: {why}"),
            });
        }
        let empty = |what: String| SplitError::EmptyPart {
            episode: base.clone(),
            part: what,
        };
        if st.recording.is_empty() {
            return Err(empty(format!("{} (no stream records)", st.part.id)));
        }
        let mut streams = Vec::new();
        for name in &st.recording {
            match parts_of(name) {
                Some(p) if p.part_steps() > 0 => {
                    let done = p.parts_finalized();
                    streams.push((name.clone(), p, done));
                }
                _ => return Err(empty(format!("{} (stream `{name}`)", st.part.id))),
            }
        }
        let number = st.part.number.saturating_add(1);
        let id = part_id(&base, number);
        validate_episode_id(&id, max_id_bytes).map_err(|e| SplitError::PartIdTooLong {
            episode: base.clone(),
            part: id.clone(),
            reason: e.to_string(),
        })?;
        let storage = |what: &str, e: &dyn std::fmt::Display| SplitError::Storage {
            episode: base.clone(),
            reason: format!("creating part `{id}`: {what}: {e}"),
        };
        let dir = self.data_dir.join(&id);
        match self.fs.create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(SplitError::PartExists {
                    episode: base,
                    part: id,
                })
            }
            Err(e) => return Err(storage("create directory", &e)),
        }
        self.fs
            .sync_dir(&self.data_dir)
            .map_err(|e| storage("fsync the data directory", &e))?;
        self.fs
            .create_dir(&dir.join(STREAMS_DIR))
            .map_err(|e| storage("create streams directory", &e))?;
        let mut metadata = st.index.metadata.clone();
        metadata.insert(
            SPLIT_MANIFEST_KEY.into(),
            links(&base, number, Some(&st.part.id), None),
        );
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut index = EpisodeIndex::new(id.clone(), st.index.env_id.clone(), metadata, created);
        for s in &st.index.streams {
            if st.recording.contains(&s.name) {
                let mut e = s.clone();
                e.status = EpisodeStatus::Recording;
                e.steps = 0;
                e.chunks = 0;
                e.first_t_ns = None;
                e.last_t_ns = None;
                index.streams.push(e);
            }
        }
        // Its directory fsync makes `streams/` durable too.
        commit_index(&*self.fs, &dir, &index).map_err(|e| storage("commit index", &e))?;
        let finished = std::mem::replace(
            &mut st.part,
            PartNow {
                number,
                id: id.clone(),
                dir: dir.clone(),
            },
        );
        let mut old = std::mem::replace(&mut st.index, index);
        old.metadata.insert(
            SPLIT_MANIFEST_KEY.into(),
            links(
                &base,
                finished.number,
                finished_previous(&old).as_deref(),
                Some(&id),
            ),
        );
        // Events from now on are the next part's.
        *lock(&self.events) = EventsLog::new(self.fs.clone(), &dir, &id);
        let waiting = st.recording.clone();
        st.left_behind.push(LeftBehind {
            dir: finished.dir.clone(),
            index: old,
            waiting,
        });
        Ok(CutPlan {
            finished: finished.id,
            finished_dir: finished.dir,
            number,
            part: id,
            streams,
        })
    }

    /// Finish a cut: `cut` streams were cut (the finished part's first and last `t_ns` of
    /// each), the others stay in the finished part until they end (they leave the next
    /// part's index). Each cut stream's entry in the finished part takes its status and
    /// counts from its final manifest, read once its finisher committed it (`waited`: it
    /// did); the finished part's index is committed `complete` when no stream records in
    /// it any more.
    ///
    /// # Errors
    /// The index commit of either part (left for recovery).
    pub fn finish_cut(
        &self,
        plan: &CutPlan,
        cut: &[(String, Option<i64>, Option<i64>)],
    ) -> Result<(), SplitError> {
        let mut st = lock(&self.state);
        let storage = |what: &str, e: &dyn std::fmt::Display| SplitError::Storage {
            episode: self.id.clone(),
            reason: format!("{what}: {e}"),
        };
        let stayed: Vec<String> = plan
            .streams
            .iter()
            .map(|(n, _, _)| n.clone())
            .filter(|n| !cut.iter().any(|(c, _, _)| c == n))
            .collect();
        let Some(at) = st
            .left_behind
            .iter()
            .position(|l| l.dir == plan.finished_dir)
        else {
            return Ok(());
        };
        if !stayed.is_empty() {
            // A stream that ended meanwhile was entered in the next part: its end is
            // the finished part's.
            let ended: Vec<_> = st
                .index
                .streams
                .iter()
                .filter(|s| stayed.contains(&s.name) && !st.recording.contains(&s.name))
                .cloned()
                .collect();
            st.index.streams.retain(|s| !stayed.contains(&s.name));
            for n in &stayed {
                st.recording.remove(n);
            }
            let lb = &mut st.left_behind[at];
            lb.waiting.retain(|n| stayed.contains(n));
            for e in ended {
                lb.waiting.remove(&e.name);
                if let Some(s) = lb.index.stream_mut(&e.name) {
                    *s = e;
                }
            }
            self.commit(&mut st)
                .map_err(|e| storage("commit the next part's index", &e))?;
        } else {
            st.left_behind[at].waiting.clear();
        }
        let data_dir = self.data_dir.clone();
        let lb = &mut st.left_behind[at];
        for (name, first, last) in cut {
            let layout = EpisodeLayout::stream(&data_dir, &plan.finished, name);
            let m = Manifest::read_file(layout.manifest()).ok();
            if let Some(e) = lb.index.stream_mut(name) {
                e.status = m
                    .as_ref()
                    .and_then(|m| m.status.as_deref())
                    .and_then(EpisodeStatus::parse)
                    .unwrap_or(EpisodeStatus::Recording);
                e.steps = m.as_ref().map_or(0, |m| m.total_timesteps);
                e.chunks = m.as_ref().map_or(0, |m| m.chunks.len() as u64);
                e.first_t_ns = *first;
                e.last_t_ns = *last;
            }
        }
        let result = self.settle_left_behind(&mut st, at);
        result.map_err(|e| storage("commit the finished part's index", &e))
    }

    /// A stream that stayed in a finished part ended: its entry there, and the part
    /// finalized if it was the last. Returns whether `name` was one.
    pub(super) fn end_left_behind(&self, st: &mut State, name: &str, end: StreamEnd) -> bool {
        let Some(at) = st
            .left_behind
            .iter()
            .position(|l| l.waiting.contains(name) && !st.recording.contains(name))
        else {
            return false;
        };
        let lb = &mut st.left_behind[at];
        lb.waiting.remove(name);
        if let Some(s) = lb.index.stream_mut(name) {
            s.status = end.status;
            s.steps = end.steps;
            s.chunks = end.chunks;
            s.first_t_ns = end.first_t_ns;
            s.last_t_ns = end.last_t_ns;
        }
        if let Err(e) = self.settle_left_behind(st, at) {
            tracing::error!(episode = %self.id, "finished part's index not committed (recovery rebuilds it): {e}");
        }
        true
    }

    /// Commit finished part `at`: `complete` and forgotten when no stream records in it,
    /// else closed and still `recording`.
    fn settle_left_behind(
        &self,
        st: &mut State,
        at: usize,
    ) -> Result<(), crate::error::StorageError> {
        let lb = &mut st.left_behind[at];
        lb.index.closed = true;
        let done = lb.waiting.is_empty();
        if done {
            lb.index.status = EpisodeStatus::Complete;
        }
        let r = commit_index(&*self.fs, &lb.dir, &lb.index);
        if done && r.is_ok() {
            self.hand_off(&lb.dir);
        }
        if done {
            let id = lb.index.episode_id.clone();
            st.left_behind.remove(at);
            tracing::info!(episode = %self.id, part = %id, "multi-stream part finalized");
        }
        r
    }
}

/// The part before `index`'s part, from its `split` links.
fn finished_previous(index: &EpisodeIndex) -> Option<String> {
    index
        .metadata
        .get(SPLIT_MANIFEST_KEY)
        .and_then(|v| v.get("previous"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}
