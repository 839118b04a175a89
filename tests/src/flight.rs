//! The flight recorder's end-to-end helpers: triggers on the control socket, flight-mode
//! opens, waiting for a window episode and checking it bit for bit against the generator.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use wshard::episode::Episode;
use wshard::episode_dir::index::EpisodeStatus;
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_ingest_proto::{AcceptedWhat, ChannelSpec, Durability, EpisodeOpen, Frame};

use crate::multi::{connect_v2, read_index};
use crate::raw::RawConn;
use crate::{bins, data, Daemon, DaemonOptions, TIMEOUT};

pub const NS_PER_MS: i64 = 1_000_000;
/// The clock of the tests that choose their own `t_ns`.
pub const T0: i64 = 1_700_000_000_000_000_000;
/// How long a window may take to be persisted (debug builds, a shared machine).
pub const WINDOW_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A daemon with chunks of 8 timesteps.
#[must_use]
pub fn daemon() -> Daemon {
    Daemon::start(DaemonOptions::default().rotation(8))
}

pub fn control(d: &Daemon, request: &Value) -> Value {
    let mut s = UnixStream::connect(d.root().join("wshardd-control.sock")).expect("control");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    s.write_all(format!("{request}\n").as_bytes())
        .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("reply {reply:?}: {e}"))
}

pub fn trigger_ok(d: &Daemon, request: Value) -> Value {
    let v = control(d, &request);
    assert_eq!(v["ok"], json!(true), "{v}");
    v["result"].clone()
}

pub fn open_flight(d: &Daemon, id: &str, flight: &Value) -> RawConn {
    let mut c = RawConn::hello(&d.socket());
    c.open(&flight_spec(id, flight));
    c
}

/// [`open_flight`] on a connection asking for protocol `version`: the connection and the
/// version the daemon speaks.
pub fn open_flight_version(d: &Daemon, id: &str, flight: &Value, version: u16) -> (RawConn, u16) {
    let (mut c, spoken) = RawConn::hello_version(&d.socket(), version);
    c.open(&flight_spec(id, flight));
    (c, spoken)
}

/// The OPEN of `id` in flight mode (`flight`: the `wshard.flight` metadata).
fn flight_spec(id: &str, flight: &Value) -> wshard_ingest_proto::OpenEpisode {
    let mut spec = data::open_spec(id, &data::channels(), Durability::Ack);
    spec.metadata_json = json!({ "wshard.flight": flight }).to_string();
    spec
}

/// Wait for the window episode `w` to be in place and complete.
pub fn wait_window(d: &Daemon, w: &str) -> wshard::episode_dir::index::EpisodeIndex {
    let start = Instant::now();
    loop {
        if let Ok(index) = read_index(&d.data_dir(), w) {
            if index.status == EpisodeStatus::Complete {
                return index;
            }
        }
        assert!(
            start.elapsed() < WINDOW_TIMEOUT,
            "window {w} not persisted: {}",
            d.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub fn window_stream(d: &Daemon, w: &str, stream: &str) -> Episode {
    let m = d
        .data_dir()
        .join(w)
        .join("streams")
        .join(stream)
        .join(format!("{stream}_manifest.wshard"));
    read_episode_chunked(&m).unwrap_or_else(|e| panic!("{}: {e}", m.display()))
}

/// Check that `ep` holds exactly timesteps `seqs` of the generator, bit for bit.
pub fn check_exact(ep: &Episode, channels: &[ChannelSpec], seqs: std::ops::RangeInclusive<u64>) {
    check_exact_at(ep, channels, seqs, data::t_ns);
}

/// [`check_exact`] for a stream whose seq `s` was sent at `t(s)`.
pub fn check_exact_at(
    ep: &Episode,
    channels: &[ChannelSpec],
    seqs: std::ops::RangeInclusive<u64>,
    t: impl Fn(u64) -> i64,
) {
    let want: Vec<u64> = seqs.clone().collect();
    check_steps_at(ep, channels, seqs, t);
    let rewards: Vec<f32> = want.iter().map(|&s| data::reward(s)).collect();
    assert_eq!(ep.reward, rewards, "rewards");
}

/// The timestamps and channel bytes of [`check_exact_at`] (not the rewards).
pub fn check_steps_at(
    ep: &Episode,
    channels: &[ChannelSpec],
    seqs: std::ops::RangeInclusive<u64>,
    t: impl Fn(u64) -> i64,
) {
    let want: Vec<u64> = seqs.collect();
    let ts: Vec<i64> = want.iter().map(|&s| t(s)).collect();
    assert_eq!(ep.timestamps_ns.as_deref(), Some(&ts[..]), "timestamps");
    for (i, ch) in ep.channels.iter().enumerate() {
        let bytes: Vec<u8> = want
            .iter()
            .flat_map(|&s| data::step_payloads(s, channels)[i].clone())
            .collect();
        assert!(ch.data == bytes, "channel {} differs", ch.id);
    }
}

pub fn verify(path: &Path) {
    let o = Command::new(bins::wshard())
        .arg("verify")
        .arg(path)
        .output()
        .expect("wshard verify");
    assert!(
        o.status.success(),
        "wshard verify {}: {}",
        path.display(),
        crate::check::output_text(&o)
    );
}

pub fn manifest_of(dir: &Path, id: &str) -> Manifest {
    Manifest::read_file(dir.join(format!("{id}_manifest.wshard"))).expect("manifest")
}

/// The first seq whose `t_ns` is at least `t`.
pub fn first_at(t: i64) -> u64 {
    (0..).find(|&s| data::t_ns(s) >= t).unwrap_or(0)
}

/// The last seq whose `t_ns` is at most `t`.
pub fn last_at(t: i64) -> u64 {
    (0..).find(|&s| data::t_ns(s + 1) > t).unwrap_or(0)
}

/// The data blocks of a chunk file as stored (name, flags, stored bytes), and its first
/// `t_ns`.
pub fn chunk_data_blocks(path: &Path) -> (Vec<(String, u16, Vec<u8>)>, i64) {
    let bytes = std::fs::read(path).expect("chunk");
    let r = wshard::read::ShardReader::from_bytes(bytes.clone()).expect("shard");
    let ep = Episode::read(&r).expect("episode");
    let index = r.index();
    let blocks = index
        .names()
        .zip(index.entries())
        .filter(|(n, _)| !n.starts_with("meta/"))
        .map(|(n, e)| {
            let a = usize::try_from(e.data_offset).expect("offset");
            let b = a + usize::try_from(e.disk_size).expect("size");
            (n.to_owned(), e.flags, bytes[a..b].to_vec())
        })
        .collect();
    (blocks, ep.timestamps_ns.expect("timestamps")[0])
}

pub fn owner_flight(d: &Daemon, id: &str) -> RawConn {
    let mut c = connect_v2(&d.socket());
    c.send(&Frame::EpisodeOpen(
        EpisodeOpen::new(id, data::ENV_ID)
            .with_metadata_json(json!({"wshard.flight": true}).to_string()),
    ));
    assert_eq!(c.expect_accepted(AcceptedWhat::EpisodeOpen), 0);
    c
}

pub fn wshard_cli(d: &Daemon, args: &[&str]) -> std::process::Output {
    Command::new(bins::wshard())
        .args(args)
        .arg("--control")
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("wshard")
}

/// Push generator seqs `seqs` on `w`, seq `s` at `t(s)`.
pub fn push_at(
    w: &mut wshard_client::EpisodeWriter<'_>,
    channels: &[ChannelSpec],
    seqs: std::ops::Range<u64>,
    t: impl Fn(u64) -> i64,
) {
    for s in seqs {
        let p = data::step_payloads(s, channels);
        let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
        w.push(t(s), data::reward(s), data::done(s), &refs)
            .expect("push");
    }
}
