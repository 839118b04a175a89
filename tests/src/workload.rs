//! A client workload for crash and shutdown tests: stream episodes until the daemon goes
//! away, remembering per episode the highest `DURABLE` the daemon acknowledged; and the
//! checks of what must be on disk afterwards.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use wshard_client::{ChannelSpec, Client, ClientError, Durability, Outcome, Transport};

use crate::check::{check_episode, read_manifest, EpisodeState};
use crate::data;
use crate::rng::Rng;

/// What a client knows about one episode it recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeLog {
    pub id: String,
    pub durability: Durability,
    /// `ACCEPTED{OPEN}` was received: the episode exists durably.
    pub opened: bool,
    /// Every seq below this was acknowledged `DURABLE`.
    pub acked: u64,
    /// Steps pushed (sent or pending) by the client.
    pub pushed: u64,
    /// `ACCEPTED{CLOSE}` was received with this many timesteps.
    pub closed: Option<u64>,
}

/// How a workload client behaves.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Prefix of episode ids (`{prefix}-e{n}`).
    pub prefix: String,
    pub durability: Durability,
    /// Steps per episode before it is closed: uniform in this range.
    pub episode_len: (u64, u64),
    /// Steps per `push_batch`: uniform in this range.
    pub batch: (u64, u64),
    /// One batch in `sync_every` is followed by `flush` or `wait_durable` (ack durability).
    pub sync_every: u64,
    pub seed: u64,
    /// How the timesteps travel (socket or shared-memory ring).
    pub transport: Transport,
}

/// The last error that ended a workload, if any.
#[derive(Debug, Default)]
pub struct Ended {
    pub error: Option<ClientError>,
}

/// Record episodes one after another on one connection until an error (the daemon was
/// killed or stopped) or until `stop` is set (then the open episode is closed). Returns
/// what the client knows, and the error that ended it.
pub fn run(socket: &Path, w: &Workload, stop: &AtomicBool) -> (Vec<EpisodeLog>, Ended) {
    let ch = data::channels();
    let mut logs = Vec::new();
    let mut rng = Rng::new(w.seed);
    let mut client = match Client::connect(socket, &format!("wshard-e2e/{}", w.prefix)) {
        Ok(c) => c,
        Err(e) => return (logs, Ended { error: Some(e) }),
    };
    for e in 0.. {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let id = format!("{}-e{e}", w.prefix);
        logs.push(EpisodeLog {
            id: id.clone(),
            durability: w.durability,
            opened: false,
            acked: 0,
            pushed: 0,
            closed: None,
        });
        let Some(log) = logs.last_mut() else { break };
        let target = rng.range(w.episode_len.0, w.episode_len.1);
        if let Err(e) = one_episode(&mut client, &ch, w, &mut rng, target, stop, log) {
            return (logs, Ended { error: Some(e) });
        }
    }
    (logs, Ended::default())
}

fn one_episode(
    client: &mut Client,
    ch: &[ChannelSpec],
    w: &Workload,
    rng: &mut Rng,
    target: u64,
    stop: &AtomicBool,
    log: &mut EpisodeLog,
) -> Result<(), ClientError> {
    let mut ep =
        client.open_episode_with(data::open_spec(&log.id, ch, w.durability), w.transport)?;
    log.opened = true;
    let result = (|| {
        while ep.next_seq() < target && !stop.load(Ordering::Acquire) {
            let n = rng.range(w.batch.0, w.batch.1).min(target - ep.next_seq());
            let pushed = data::push_steps(&mut ep, ch, n);
            log.pushed = ep.next_seq();
            log.acked = log.acked.max(ep.durable_seq());
            pushed?;
            // With durability `chunk` nothing but a full chunk makes steps durable: waiting
            // would block until the kill, so only watch `durable_seq`.
            if w.durability == Durability::Ack && rng.range(1, w.sync_every.max(1)) == 1 {
                if rng.chance(1, 2) {
                    log.acked = log.acked.max(ep.flush()?);
                } else {
                    let last = ep.next_seq() - 1;
                    ep.wait_durable(last)?;
                    log.acked = log.acked.max(last + 1);
                }
            }
            log.acked = log.acked.max(ep.durable_seq());
        }
        Ok(())
    })();
    log.acked = log.acked.max(ep.durable_seq());
    if let Err(e) = result {
        // Do not let the writer's Drop send CLOSE{aborted}: the episode must look the way
        // the failure left it.
        std::mem::forget(ep);
        return Err(e);
    }
    let summary = ep.close(Outcome::Completed);
    if let Ok(s) = &summary {
        log.acked = log.acked.max(s.durable_up_to);
        log.closed = Some(s.timesteps);
    }
    summary.map(|_| ())
}

/// Check one logged episode on disk after a restart (so after recovery). Returns its
/// state, or `None` when the episode was never acknowledged as opened and left nothing.
///
/// # Errors
/// What is wrong, naming the episode.
pub fn check_logged(
    data_dir: &Path,
    log: &EpisodeLog,
    allowed: &[&str],
) -> Result<Option<EpisodeState>, String> {
    let id = &log.id;
    let dir = data_dir.join(id);
    // A kill between creating the directory and committing the manifest leaves it empty:
    // never acknowledged, not an episode, left alone by recovery.
    let empty = std::fs::read_dir(&dir).is_ok_and(|mut e| e.next().is_none());
    if !dir.exists() || empty {
        if log.opened || log.acked > 0 {
            return Err(format!(
                "{id}: opened (acked {}) but its directory is gone or empty",
                log.acked
            ));
        }
        return Ok(None);
    }
    let st = check_episode(data_dir, id, &data::channels())?;
    if !allowed.contains(&st.status.as_str()) {
        return Err(format!(
            "{id}: status {:?}, expected one of {allowed:?}",
            st.status
        ));
    }
    if st.timesteps < log.acked {
        return Err(format!(
            "{id}: {} timesteps on disk, {} were acknowledged DURABLE",
            st.timesteps, log.acked
        ));
    }
    if st.timesteps > log.pushed {
        return Err(format!(
            "{id}: {} timesteps on disk, only {} pushed",
            st.timesteps, log.pushed
        ));
    }
    if let Some(n) = log.closed {
        if (st.status.as_str(), st.timesteps) != ("complete", n) {
            return Err(format!(
                "{id}: closed with {n} timesteps, on disk {} {}",
                st.status, st.timesteps
            ));
        }
    }
    Ok(Some(st))
}

/// Remembers the manifest bytes of settled episodes, so later rounds can check cheaply that
/// nothing touched them (their chunks' SHA-256 are in the manifest, checked by verify).
#[derive(Debug, Default)]
pub struct Settled {
    manifests: BTreeMap<String, Vec<u8>>,
}

impl Settled {
    /// True when `id` was fully checked before and its manifest is byte-identical.
    ///
    /// # Errors
    /// The manifest changed or is unreadable.
    pub fn unchanged(&self, data_dir: &Path, id: &str) -> Result<bool, String> {
        let Some(old) = self.manifests.get(id) else {
            return Ok(false);
        };
        let now = std::fs::read(crate::check::manifest_path(data_dir, id))
            .map_err(|e| format!("{id}: manifest unreadable: {e}"))?;
        if &now != old {
            let m = read_manifest(data_dir, id)?;
            return Err(format!(
                "{id}: settled manifest changed: now {:?}",
                m.status
            ));
        }
        Ok(true)
    }

    /// Remember `id` as settled.
    pub fn remember(&mut self, data_dir: &Path, id: &str) {
        if let Ok(b) = std::fs::read(crate::check::manifest_path(data_dir, id)) {
            self.manifests.insert(id.to_owned(), b);
        }
    }
}

/// `timesteps_recovered` of the manifest's recovery report (0 without one).
#[must_use]
pub fn rebuilt_from_journal(st: &EpisodeState) -> u64 {
    st.manifest
        .extra
        .get("recovery")
        .and_then(|r| r.get("timesteps_recovered"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}
