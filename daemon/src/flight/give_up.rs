//! Giving a trigger window up after its retries failed:
//!
//! 1. the failure ([`WindowFailure`]: window, stream, error, attempts) is written into the
//!    window's pending record (replaced atomically): from then on neither this run nor a
//!    restart builds the window again;
//! 2. its pins are released: each source ring honours its bounds again;
//! 3. what it already holds (chunks copied durably into its build directory) is finalized
//!    as the episode `data_dir/W`, `interrupted`, its index naming the failure under
//!    `window_failure`; its pending record is then removed. When that fails too (the disk
//!    is full), the chunks stay in `data_dir/.flight/build/W` and the record says so
//!    (`kept: in_build`). A window that held nothing keeps only its record.
//!
//! Nothing already durable is deleted: only `.partial` files a failed write left in the
//! build go before it is finalized.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use wshard::episode_dir::index::EpisodeStatus;

use super::copy::StreamCopy;
use super::failure::{FailedWindowKept, WindowFailure};
use super::finalize::{finish, WindowEnd};
use super::pending::{self, PendingRecord};
use super::shared::FlightShared;
use crate::error::StorageError;

fn unix_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A window being given up: what it built, and its last failure.
pub(crate) struct GivenUp<'a> {
    pub(crate) record: PendingRecord,
    /// Its build directory, when it was created.
    pub(crate) dir: Option<&'a Path>,
    pub(crate) copies: &'a mut [StreamCopy],
    /// The window stream whose step failed (none: the window's own step).
    pub(crate) stream: Option<String>,
    pub(crate) error: &'a StorageError,
    pub(crate) attempts: u32,
}

/// Finalize what `g` holds `interrupted`, as `failure` says.
fn keep_interrupted(
    registry: &FlightShared,
    g: &mut GivenUp<'_>,
    failure: &WindowFailure,
) -> Result<(), StorageError> {
    let Some(dir) = g.dir else {
        return Ok(());
    };
    for c in g.copies.iter() {
        c.remove_partials(&*registry.fs)?;
    }
    let mut record = g.record.clone();
    record.failed = Some(failure.clone());
    let end = WindowEnd {
        status: EpisodeStatus::Interrupted,
        failure: Some(failure.clone()),
    };
    finish(
        &registry.fs,
        &registry.settings.handoff,
        &registry.data_dir,
        &record,
        g.copies,
        dir,
        &end,
    )
}

/// Give the window of `g` up: mark its record failed, `release_pins`, keep what it holds.
/// Returns the failure, as status shows it.
pub(crate) fn give_up(
    registry: &FlightShared,
    mut g: GivenUp<'_>,
    release_pins: impl FnOnce(),
) -> WindowFailure {
    let episode = g.record.episode.clone();
    let holds = g.dir.is_some() && g.copies.iter().any(StreamCopy::holds_steps);
    let source = g.stream.as_ref().and_then(|name| {
        g.record
            .streams
            .iter()
            .find(|s| &s.name == name)
            .map(|s| s.source.clone())
    });
    let mut failure = WindowFailure {
        window: episode.clone(),
        stream: g.stream.clone(),
        source_stream: source,
        error: g.error.to_string(),
        attempts: g.attempts,
        failed_unix_ns: unix_ns_now(),
        kept: if holds {
            FailedWindowKept::InBuild
        } else {
            FailedWindowKept::Nothing
        },
    };
    tracing::error!(episode = %episode, "{failure}; given up, its rings' pins released");
    // 1. The failed mark: a restart does not build it again.
    let mut record = g.record.clone();
    record.failed = Some(failure.clone());
    if let Err(e) = pending::persist(&*registry.fs, &registry.data_dir, &record) {
        tracing::error!(episode = %episode,
            "the failed window's record could not be marked (the next start tries it once more): {e}");
    }
    // 2. The pins go: the rings keep their bounds again.
    release_pins();
    // 3. What it holds is kept.
    if holds {
        let mut kept = failure.clone();
        kept.kept = FailedWindowKept::Interrupted;
        match keep_interrupted(registry, &mut g, &kept) {
            Ok(()) => {
                failure = kept;
                tracing::warn!(episode = %episode,
                    "what the failed window holds is finalized `interrupted`");
            }
            Err(e) => tracing::error!(episode = %episode,
                "what the failed window holds stays in its build directory: {e}"),
        }
    }
    registry.counters.failed.fetch_add(1, Ordering::Relaxed);
    registry.note_failed(failure.clone());
    failure
}
