//! Multi-stream episodes over raw version 2 connections (protocol v2 frames encoded by
//! `wshard-ingest-proto`), and reading their index, events and streams back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wshard::episode_dir::events::{parse_events, EventRecord};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::episode_dir::names::{events_file_name, index_file_name, STREAMS_DIR};
use wshard_ingest_proto::{
    AcceptedWhat, ChannelSpec, Durability, EpisodeOpen, Event, Frame, Outcome, StreamOpen,
    TimebaseSpec, NEWEST_PROTOCOL_VERSION,
};

use crate::check::{check_episode, EpisodeState};
use crate::raw::RawConn;

/// A version 2 connection.
#[must_use]
pub fn connect_v2(socket: &Path) -> RawConn {
    let (c, spoken) = RawConn::hello_version(socket, NEWEST_PROTOCOL_VERSION);
    assert_eq!(spoken, NEWEST_PROTOCOL_VERSION, "HELLO_OK version");
    c
}

/// A version 2 connection that owns the new multi-stream episode `id`.
#[must_use]
pub fn owner(socket: &Path, id: &str) -> RawConn {
    let mut c = connect_v2(socket);
    c.send(&Frame::EpisodeOpen(
        EpisodeOpen::new(id, crate::data::ENV_ID).with_metadata_json(crate::data::METADATA_JSON),
    ));
    assert_eq!(c.expect_accepted(AcceptedWhat::EpisodeOpen), 0);
    c
}

/// A `STREAM_OPEN` of `stream` in `episode` with `channels`, ticks at `hz`.
#[must_use]
pub fn stream_spec(
    episode: &str,
    stream: &str,
    channels: &[ChannelSpec],
    hz: f64,
    durability: Durability,
) -> StreamOpen {
    let mut s = StreamOpen::new(episode, stream, TimebaseSpec::Ticks { tick_hz: hz })
        .with_durability(durability);
    for c in channels {
        s = s.channel(c.clone());
    }
    s
}

/// A version 2 connection recording `spec`.
#[must_use]
pub fn producer(socket: &Path, spec: &StreamOpen) -> RawConn {
    let mut c = connect_v2(socket);
    c.send(&Frame::StreamOpen(Box::new(spec.clone())));
    assert_eq!(c.expect_accepted(AcceptedWhat::StreamOpen), 0);
    c
}

/// A daemon under `[rolling] max_bytes` of `bound_steps` timesteps of
/// [`crate::data::channels`] (chunks of 16), recording multi-stream episode `ep`: its
/// owner, the producer of `joints` (those channels, class `ack`, 1000 Hz) and of `imu`
/// ([`crate::data::small_channels`], class `imu`, 200 Hz).
pub struct RollingPair {
    pub d: crate::Daemon,
    pub owner: RawConn,
    pub joints: RawConn,
    pub imu: RawConn,
}

/// Start a [`RollingPair`].
#[must_use]
pub fn rolling_pair(ep: &str, bound_steps: u64, imu: Durability) -> RollingPair {
    let ch = crate::data::channels();
    let step = crate::data::packed_payload(0, &ch).len() as u64;
    rolling_pair_with(ep, &format!("max_bytes = {}", step * bound_steps), imu)
}

/// A [`RollingPair`] under `[rolling]` with the key line `rolling`.
#[must_use]
pub fn rolling_pair_with(ep: &str, rolling: &str, imu: Durability) -> RollingPair {
    let ch = crate::data::channels();
    let d = crate::Daemon::start(crate::DaemonOptions {
        extra_toml: format!("[rolling]\n{rolling}\n"),
        ..crate::DaemonOptions::default().rotation(16)
    });
    let owner = owner(&d.socket(), ep);
    let joints = producer(
        &d.socket(),
        &stream_spec(ep, "joints", &ch, 1000.0, Durability::Ack),
    );
    let small = crate::data::small_channels();
    let imu = producer(&d.socket(), &stream_spec(ep, "imu", &small, 200.0, imu));
    RollingPair {
        d,
        owner,
        joints,
        imu,
    }
}

/// Send a text `EVENT` and expect its `ACCEPTED`; returns its seq.
pub fn event(c: &mut RawConn, t_ns: i64, label: &str, text: &str) -> u64 {
    c.send(&Frame::Event(Event::text(t_ns, label, text)));
    c.expect_accepted(AcceptedWhat::Event)
}

/// Send `EPISODE_CLOSE{completed}`; returns the streams still recording.
pub fn episode_close(c: &mut RawConn) -> u64 {
    c.send(&Frame::EpisodeClose {
        outcome: Outcome::Completed,
    });
    c.expect_accepted(AcceptedWhat::EpisodeClose)
}

/// The episode directory's index file.
#[must_use]
pub fn index_path(data_dir: &Path, id: &str) -> PathBuf {
    data_dir.join(id).join(index_file_name(id))
}

/// The index of `id`.
///
/// # Errors
/// It cannot be read or parsed.
pub fn read_index(data_dir: &Path, id: &str) -> Result<EpisodeIndex, String> {
    let path = index_path(data_dir, id);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    EpisodeIndex::from_json_bytes(&bytes, &path).map_err(|e| e.to_string())
}

/// Poll (at most `timeout`) until the index of `id` has a final status.
///
/// # Errors
/// The last status (or error) seen when the time runs out.
pub fn wait_index_final(
    data_dir: &Path,
    id: &str,
    timeout: Duration,
) -> Result<EpisodeIndex, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match read_index(data_dir, id) {
            Ok(ix) if ix.status != EpisodeStatus::Recording => return Ok(ix),
            Ok(ix) => format!("status {}", ix.status),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!("{id}: not final after {timeout:?}: {last}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The events of `id` (a torn last line ignored).
///
/// # Errors
/// The file cannot be read, or a complete line is not an event.
pub fn read_events(data_dir: &Path, id: &str) -> Result<Vec<EventRecord>, String> {
    let path = data_dir.join(id).join(events_file_name(id));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    parse_events(&bytes, &path)
        .map(|p| p.events)
        .map_err(|e| e.to_string())
}

/// Check stream `stream` of `episode` as an episode: its manifest and chunks, every
/// timestep bit-exact against the generator for `channels`.
///
/// # Errors
/// A message naming the stream and the problem.
pub fn check_stream(
    data_dir: &Path,
    episode: &str,
    stream: &str,
    channels: &[ChannelSpec],
) -> Result<EpisodeState, String> {
    let streams = data_dir.join(episode).join(STREAMS_DIR);
    check_episode(&streams, stream, channels).map_err(|e| format!("{episode}/{stream}: {e}"))
}

/// Check that the index of `id` agrees with its streams' manifests: every listed stream's
/// status, steps and chunks are its manifest's, and every stream folder is listed.
///
/// # Errors
/// The first disagreement.
pub fn check_index_consistent(data_dir: &Path, id: &str) -> Result<EpisodeIndex, String> {
    let index = read_index(data_dir, id)?;
    let streams = data_dir.join(id).join(STREAMS_DIR);
    for s in &index.streams {
        let m = crate::check::read_manifest(&streams, &s.name)
            .map_err(|e| format!("{id}: stream {}: {e}", s.name))?;
        let status = m.status.clone().unwrap_or_default();
        if status != s.status.as_str() {
            return Err(format!(
                "{id}: stream {}: index says {}, manifest {status}",
                s.name, s.status
            ));
        }
        if m.total_timesteps != s.steps || m.chunks.len() as u64 != s.chunks {
            return Err(format!(
                "{id}: stream {}: index says {} steps in {} chunks, manifest {} in {}",
                s.name,
                s.steps,
                s.chunks,
                m.total_timesteps,
                m.chunks.len()
            ));
        }
    }
    for entry in std::fs::read_dir(&streams).map_err(|e| format!("{}: {e}", streams.display()))? {
        let name = entry
            .map_err(|e| e.to_string())?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if index.stream(&name).is_none() {
            return Err(format!("{id}: stream folder {name} not in the index"));
        }
    }
    Ok(index)
}
