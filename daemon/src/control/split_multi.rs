//! `split EP` of a multi-stream episode: every stream recording in it is cut at its own
//! next step boundary into the next part `EP.000N` (see `multi::parts`). The next part's
//! directory and index are committed first ([`MultiEpisode::begin_cut`]); then each
//! stream's writer makes its cut exactly as a single-stream split does, into
//! `EP.000N/streams/STREAM/`; once every cut stream's finished part is final, the
//! finished part's index is committed `complete` ([`MultiEpisode::finish_cut`]). Cuts of
//! one episode are made one at a time.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use serde_json::{json, Value};

use super::protocol::ControlError;
use super::split::{refused, SPLIT_WAIT};
use super::state::ControlState;
use crate::multi::parts::CutPlan;
use crate::multi::MultiEpisode;
use crate::runtime::context::ServerContext;
use crate::session::cut_reason::CutReason;
use crate::session::parts::{PartControl, SplitError, StreamCut};
use crate::session::Rolling;

/// How often the cut looks whether a stream's finished part is final.
const FINAL_POLL: Duration = Duration::from_millis(5);

/// Serializes the cuts of multi-stream episodes (a cut waits for its streams' writers).
static CUTTING: Mutex<()> = Mutex::new(());

/// A multi-stream split made: the cut's plan, the streams cut (with the finished part's
/// first and last `t_ns` of each), and the streams not cut (with why).
pub struct MultiCut {
    pub plan: CutPlan,
    pub cut: Vec<(String, Option<i64>, Option<i64>)>,
    pub stayed: Vec<(String, String)>,
}

/// Cut every stream of `ep` into its next part (the module doc's order) for `reason`:
/// `parts_of` finds a recording stream's parts, `data_dir` is the data directory. Waits
/// for each writer's cut and for each cut stream's finished part to be final (at most
/// [`SPLIT_WAIT`]).
///
/// # Errors
/// [`SplitError`] from [`MultiEpisode::begin_cut`] (nothing cut) or
/// [`MultiEpisode::finish_cut`] (an index commit failed: left for recovery).
pub fn cut_streams(
    ep: &MultiEpisode,
    parts_of: &dyn Fn(&str) -> Option<Arc<PartControl>>,
    max_id_bytes: usize,
    data_dir: &Path,
    reason: CutReason,
) -> Result<MultiCut, SplitError> {
    let _one = CUTTING.lock().unwrap_or_else(PoisonError::into_inner);
    let plan = ep.begin_cut(parts_of, max_id_bytes)?;
    // The next part records from here on, whatever the streams' cuts give.
    ep.note_cut(&plan.finished, reason);
    let replies: Vec<_> = plan
        .streams
        .iter()
        .map(|(name, parts, _)| {
            let cut = StreamCut {
                episode: ep.id().to_owned(),
                number: plan.number,
                part: plan.part.clone(),
                data_dir: data_dir.to_path_buf(),
            };
            (name.clone(), parts.request_stream_cut(cut))
        })
        .collect();
    let deadline = Instant::now() + SPLIT_WAIT;
    let mut cut = Vec::new();
    let mut stayed = Vec::new();
    for (name, rx) in replies {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(done)) => cut.push((name, done.first_t_ns, done.last_t_ns)),
            Ok(Err(e)) => stayed.push((name, e.to_string())),
            Err(RecvTimeoutError::Timeout) => {
                stayed.push((name, "the writer did not make the cut in time".into()));
            }
            Err(RecvTimeoutError::Disconnected) => {
                stayed.push((name, "the stream ended before its cut".into()));
            }
        }
    }
    // The finished part's index is final only once each cut stream's final manifest is.
    for (name, parts, before) in &plan.streams {
        if !cut.iter().any(|(c, _, _)| c == name) {
            continue;
        }
        while parts.parts_finalized() <= *before
            && !parts.session_failed()
            && Instant::now() < deadline
        {
            std::thread::sleep(FINAL_POLL);
        }
    }
    for (name, why) in &stayed {
        tracing::warn!(episode = %ep.id(), stream = %name, "stream not cut, it ends in part `{}`: {why}", plan.finished);
    }
    ep.finish_cut(&plan, &cut)?;
    Ok(MultiCut { plan, cut, stayed })
}

/// Split multi-stream episode `ep` (named `episode` by the caller) on behalf of `uid`.
///
/// # Errors
/// `EMPTY_PART` (a stream with no timestep in the part, naming it), `PART_ID_TOO_LONG`,
/// `PART_EXISTS`, `STORAGE`, `UNKNOWN_EPISODE` (closed meanwhile, or no stream was cut).
pub fn split_multi(
    st: &ControlState,
    ep: &Arc<MultiEpisode>,
    episode: &str,
    uid: u32,
) -> Result<Value, ControlError> {
    let streams = st.ctx.registry.streams_of(ep.id());
    let parts_of = |name: &str| {
        streams
            .iter()
            .find(|l| l.episode_id.rsplit('/').next() == Some(name))
            .and_then(|l| l.stream_parts.clone())
    };
    tracing::info!(
        episode,
        uid,
        "control: split of a multi-stream episode requested"
    );
    let MultiCut { plan, cut, stayed } = cut_streams(
        ep,
        &parts_of,
        st.ctx.limits.max_episode_id_bytes,
        &st.ctx.data_dir,
        CutReason::Split,
    )
    .map_err(|e| refused(episode, &e))?;
    tracing::info!(episode, finished = %plan.finished, recording = %plan.part, uid, "multi-stream episode split");
    if cut.is_empty() {
        return Err(refused(
            episode,
            &SplitError::Finalized {
                episode: episode.to_owned(),
            },
        ));
    }
    Ok(json!({
        "episode": episode,
        "finished": plan.finished,
        "recording": plan.part,
        "part": plan.number,
        "streams": cut.iter().map(|(n, _, _)| n).collect::<Vec<_>>(),
        "not_cut": stayed.iter().map(|(n, why)| json!({"stream": n, "reason": why})).collect::<Vec<_>>(),
        "uid": uid,
    }))
}

/// `[rolling]` for multi-stream episode `ep` (`rolling`: the bounds): when the part
/// recording now holds `max_bytes` of timestep payload over all its streams, or one of
/// its streams spans `max_duration_ms`, every stream is cut (as `split EP`) on a thread of
/// its own; the caller (a stream's connection) goes on. A stream with no timestep yet
/// defers the cut; any other refusal stops rolling for the episode (logged). No cut while
/// `rolling.quota_policy = "stop_rolling"` holds rolling back.
pub(crate) fn roll_if_due(ctx: &Arc<ServerContext>, ep: &Arc<MultiEpisode>, rolling: Rolling) {
    // `rolling.quota_policy = "stop_rolling"` while the quota is exceeded: no cut.
    if !rolling.is_on() || ctx.upload.quota.rolling_suspended() {
        return;
    }
    let streams: Vec<Arc<PartControl>> = ctx
        .registry
        .streams_of(ep.id())
        .into_iter()
        .filter_map(|l| l.stream_parts.clone())
        .collect();
    let bytes: u64 = streams
        .iter()
        .map(|p| p.part_bytes.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    let span = streams.iter().map(|p| p.part_span_ns()).max().unwrap_or(0);
    let Some(bound) = rolling.due(bytes, span) else {
        return;
    };
    if !ep.begin_roll() {
        return;
    }
    let (ctx, ep) = (ctx.clone(), ep.clone());
    let name = format!("roll-{}", ep.id());
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let streams = ctx.registry.streams_of(ep.id());
        let parts_of = |name: &str| {
            streams
                .iter()
                .find(|l| l.episode_id.rsplit('/').next() == Some(name))
                .and_then(|l| l.stream_parts.clone())
        };
        let r = cut_streams(
            &ep,
            &parts_of,
            ctx.limits.max_episode_id_bytes,
            &ctx.data_dir,
            bound,
        );
        let stop = match r {
            Ok(c) => {
                tracing::info!(episode = %ep.id(), finished = %c.plan.finished, recording = %c.plan.part, "rolling: multi-stream part finished");
                None
            }
            Err(SplitError::EmptyPart { .. }) => None,
            Err(e) => {
                tracing::warn!(episode = %ep.id(), "rolling stopped for this episode: {e}");
                Some(e.to_string())
            }
        };
        ep.end_roll(stop);
    });
    if let Err(e) = spawned {
        tracing::warn!("rolling: cannot start the cut's thread: {e}");
    }
}
