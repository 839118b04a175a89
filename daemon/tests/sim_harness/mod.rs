//! Driving a real [`Session`] and recovery over a [`SimFs`]: one recording, a power cut,
//! recovery on the image, and the checks that nothing acknowledged was lost.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard::read::ShardReader;
use wshard_ingest_proto::push_step_record;
use wshard_recorder::episode::{Durability, EpisodeSchema};
use wshard_recorder::recovery::{recover_all, RecoveryReport};
use wshard_recorder::session::{
    FinalStatus, FsyncPolicy, Responder, Rotation, Session, SessionSettings, SessionSummary,
};
use wshard_storage::fsio::sim::{OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::EpisodeLayout;

/// The data directory inside the sim.
pub const DATA: &str = "/data";
/// The episode every scenario records.
pub const EP: &str = "ep";

pub fn data_dir() -> PathBuf {
    PathBuf::from(DATA)
}

pub fn layout() -> EpisodeLayout {
    EpisodeLayout::new(&data_dir(), EP)
}

/// A fresh sim with a durable, empty data directory.
pub fn fresh_sim() -> SimFs {
    let sim = SimFs::new();
    sim.mkdir_durable(&data_dir()).expect("create /data");
    sim
}

/// What the client side saw: every DURABLE and ERROR{STORAGE}.
pub struct Client {
    sim: SimFs,
    /// Highest `up_to_seq` received.
    pub durable: AtomicU64,
    /// Highest `up_to_seq` received while the sim still had power.
    pub durable_before_crash: AtomicU64,
    pub acks: Mutex<Vec<u64>>,
    pub errors: Mutex<Vec<String>>,
}

impl Client {
    pub fn new(sim: &SimFs) -> Self {
        Self {
            sim: sim.clone(),
            durable: AtomicU64::new(0),
            durable_before_crash: AtomicU64::new(0),
            acks: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
        }
    }

    pub fn acked(&self) -> u64 {
        self.durable.load(Ordering::SeqCst)
    }

    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().expect("errors lock").clone()
    }
}

impl Responder for Client {
    fn durable(&self, up_to_seq: u64) {
        if !self.sim.is_crashed() {
            self.durable_before_crash
                .fetch_max(up_to_seq, Ordering::SeqCst);
        }
        self.durable.fetch_max(up_to_seq, Ordering::SeqCst);
        self.acks.lock().expect("acks lock").push(up_to_seq);
    }

    fn storage_failed(&self, message: &str) {
        self.errors
            .lock()
            .expect("errors lock")
            .push(message.to_owned());
    }
}

/// One recording: class, fsync policy, rotation, batches.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub durability: Durability,
    pub fsync: FsyncPolicy,
    pub max_timesteps: u64,
    pub batches: Vec<u64>,
    /// Wait after each batch until the session is quiet (acks and publishing done), so the
    /// sequence of operations is (nearly) the same from run to run.
    pub settle: bool,
}

impl Scenario {
    pub fn total(&self) -> u64 {
        self.batches.iter().sum()
    }

    pub fn settings(&self) -> SessionSettings {
        SessionSettings {
            fsync: self.fsync,
            rotation: Rotation {
                max_timesteps: self.max_timesteps,
                max_bytes: 1 << 30,
                max_age: Duration::from_secs(3600),
            },
            queue_frames: 16,
            compression_workers: 1,
            ..SessionSettings::default()
        }
    }

    /// 30 timesteps in six batches of 5 against chunks of 8: four chunks, and rotation
    /// boundaries inside batches.
    pub fn standard(name: &'static str, durability: Durability, fsync: FsyncPolicy) -> Self {
        Self {
            name,
            durability,
            fsync,
            max_timesteps: 8,
            batches: vec![5, 5, 5, 5, 5, 5],
            settle: true,
        }
    }
}

pub fn schema(durability: Durability) -> EpisodeSchema {
    EpisodeSchema::new(
        EP.into(),
        "SimEnv-v0".into(),
        Timebase::ticks(100.0),
        durability,
        vec![
            (
                "state".into(),
                Lane::Signal,
                DType::F32,
                vec![4],
                Codec::zstd(),
                None,
            ),
            (
                "cmd".into(),
                Lane::Action,
                DType::U8,
                vec![6],
                Codec::Lz4,
                None,
            ),
        ],
        serde_json::Map::new(),
    )
    .expect("schema")
}

pub fn state(i: u64) -> Vec<u8> {
    (0..4u64)
        .flat_map(|j| ((i * 4 + j) as f32 * 0.25 - 1.0).to_le_bytes())
        .collect()
}

pub fn cmd(i: u64) -> Vec<u8> {
    (0..6u64)
        .map(|j| (i.wrapping_mul(31).wrapping_add(j * 7) % 251) as u8)
        .collect()
}

pub fn t_ns(i: u64) -> i64 {
    1_700_000_000_000_000_000 + i as i64 * 10_000_000 + (i % 3) as i64
}

pub fn reward(i: u64) -> f32 {
    i as f32 * 0.5 - 2.0
}

fn done(i: u64) -> bool {
    i % 10 == 9
}

pub fn records(from: u64, n: u64) -> Vec<u8> {
    let mut rec = Vec::new();
    for i in from..from + n {
        let mut payload = state(i);
        payload.extend_from_slice(&cmd(i));
        push_step_record(&mut rec, i, t_ns(i), reward(i), done(i), &[&payload]);
    }
    rec
}

/// What one recording run gave.
#[derive(Debug)]
pub struct Run {
    /// `Some` when `Session::open` failed.
    pub open_error: Option<String>,
    pub summary: Option<SessionSummary>,
    /// Highest DURABLE the client received.
    pub acked: u64,
    /// Highest DURABLE received while the sim had power.
    pub acked_before_crash: u64,
    pub acks: Vec<u64>,
    pub errors: Vec<String>,
}

fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "stuck waiting for {what}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Record `sc` through a real session on `sim` (faults or a crash may be armed), FLUSH
/// and CLOSE. Never panics on storage errors: they are what is being tested.
pub fn record(sim: &SimFs, sc: &Scenario) -> Run {
    let client = Arc::new(Client::new(sim));
    let settings = sc.settings();
    let session = match Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(sc.durability),
        settings,
        client.clone(),
    ) {
        Ok(s) => s,
        Err(e) => {
            let acks = client.acks.lock().expect("acks").clone();
            return Run {
                open_error: Some(e.to_string()),
                summary: None,
                acked: client.acked(),
                acked_before_crash: client.durable_before_crash.load(Ordering::SeqCst),
                acks,
                errors: client.errors(),
            };
        }
    };
    let max_ts = sc.max_timesteps;
    let journaled = sc.durability == Durability::Ack;
    let acks_at_sync = journaled && sc.fsync != FsyncPolicy::Never;
    let mut end = 0;
    for &n in &sc.batches {
        if !session.submit(records(end, n), n) {
            break;
        }
        end += n;
        if sc.settle {
            // Chunks sealed so far: a chunk is sealed when a step arrives after it is full.
            let sealed = (end - 1) / max_ts;
            let want_durable = if acks_at_sync { end } else { sealed * max_ts };
            let shared = session.shared().clone();
            wait("the session to settle", || {
                let quiet = shared.stats.chunks.load(Ordering::SeqCst) >= sealed
                    && shared.durable() >= want_durable
                    && (!journaled
                        || (0..sealed)
                            .all(|k| sim.attempts(OpKind::Remove, &layout().journal(k)) > 0));
                quiet || shared.is_failed() || sim.is_crashed()
            });
        }
    }
    session.flush();
    if sc.settle && acks_at_sync {
        let shared = session.shared().clone();
        wait("the flush", || {
            shared.durable() >= end || shared.is_failed() || sim.is_crashed()
        });
    }
    let summary = session.close(FinalStatus::Complete);
    let acks = client.acks.lock().expect("acks").clone();
    Run {
        open_error: None,
        summary: Some(summary),
        acked: client.acked(),
        acked_before_crash: client.durable_before_crash.load(Ordering::SeqCst),
        acks,
        errors: client.errors(),
    }
}

/// What was found after recovery.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// Timesteps in the recovered episode (0 when there is no episode).
    pub timesteps: u64,
    pub status: Option<String>,
    pub chunks: usize,
    /// True when recovery had something to do.
    pub recovered: bool,
}

/// Recovery on `fs` (a power-cut image): must succeed for every episode.
pub fn recover(fs: &SimFs, settings: &SessionSettings) -> Vec<RecoveryReport> {
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    recover_all(&dyn_fs, &data_dir(), settings)
        .into_iter()
        .map(|r| r.unwrap_or_else(|(ep, e)| panic!("recovery of {ep} failed: {e}")))
        .collect()
}

/// Recover the image, then check the episode: every timestep below `acked` is there,
/// bit-exact and in order (and so is every other timestep found); every listed chunk is
/// valid; the manifest is continuous and final; nothing half-done is left; a second
/// recovery has nothing to do.
pub fn recover_and_check(
    image: &SimFs,
    settings: &SessionSettings,
    acked: u64,
    ctx: &str,
) -> Found {
    let reports = recover(image, settings);
    let found = check_episode(image, acked, ctx);
    let again = recover(image, settings);
    assert!(
        again.is_empty(),
        "{ctx}: a second recovery still had work: {again:?}"
    );
    Found {
        recovered: !reports.is_empty(),
        ..found
    }
}

/// Check the episode as it is in `fs` (after recovery or after a clean close).
pub fn check_episode(fs: &SimFs, acked: u64, ctx: &str) -> Found {
    let l = layout();
    if !fs.exists(&l.dir) {
        assert_eq!(
            acked, 0,
            "{ctx}: episode directory lost, {acked} acknowledged"
        );
        return Found::default();
    }
    // Cut between creating the directory and committing the manifest: nothing was
    // acknowledged, it holds no file of an episode, and recovery leaves it alone.
    if fs.read_dir(&l.dir).is_ok_and(|e| e.is_empty()) {
        assert_eq!(
            acked, 0,
            "{ctx}: empty episode directory, {acked} acknowledged"
        );
        return Found::default();
    }
    let bytes = fs.read(&l.manifest()).unwrap_or_else(|e| {
        panic!("{ctx}: episode directory without a manifest after recovery: {e}")
    });
    let m = Manifest::read(&ShardReader::from_bytes(bytes).expect("manifest shard"))
        .unwrap_or_else(|e| panic!("{ctx}: manifest unreadable: {e}"));
    m.validate_continuity()
        .unwrap_or_else(|e| panic!("{ctx}: manifest not continuous: {e}"));
    let status = m.status.clone();
    assert!(
        matches!(status.as_deref(), Some("recovered" | "complete")),
        "{ctx}: status {status:?}"
    );
    assert!(
        m.total_timesteps >= acked,
        "{ctx}: {} timesteps in the manifest, {acked} were acknowledged durable",
        m.total_timesteps
    );
    // Nothing half-done is left in the episode directory.
    for p in fs.read_dir(&l.dir).expect("list episode") {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        assert!(
            !(name.ends_with(".partial") || name.ends_with(".wal") || name.ends_with(".tmp")),
            "{ctx}: {name} left after recovery"
        );
    }
    if m.chunks.is_empty() {
        assert_eq!(acked, 0, "{ctx}: no chunk listed, {acked} acknowledged");
        return Found {
            timesteps: 0,
            status,
            chunks: 0,
            recovered: false,
        };
    }
    // Read it back with the reference reader (hashes, continuity, chunk metadata).
    let real = tempfile::tempdir().expect("tempdir");
    fs.export_to(&data_dir(), real.path()).expect("export");
    let manifest_path = EpisodeLayout::new(real.path(), EP).manifest();
    let ep = read_episode_chunked(&manifest_path)
        .unwrap_or_else(|e| panic!("{ctx}: episode unreadable: {e}"));
    assert_eq!(ep.length, m.total_timesteps, "{ctx}");
    check_values(&ep, ctx);
    Found {
        timesteps: ep.length,
        status,
        chunks: m.chunks.len(),
        recovered: false,
    }
}

/// Every timestep of `ep` holds exactly what was sent for its seq.
pub fn check_values(ep: &wshard::episode::Episode, ctx: &str) {
    let n = ep.length;
    let want_state: Vec<u8> = (0..n).flat_map(state).collect();
    let want_cmd: Vec<u8> = (0..n).flat_map(cmd).collect();
    let ch = |name: &str| {
        &ep.channel(name)
            .unwrap_or_else(|| panic!("{ctx}: channel {name} missing"))
            .data
    };
    assert!(*ch("state") == want_state, "{ctx}: channel state differs");
    assert!(*ch("cmd") == want_cmd, "{ctx}: channel cmd differs");
    let rewards: Vec<f32> = (0..n).map(reward).collect();
    assert!(
        ep.reward
            .iter()
            .map(|r| r.to_bits())
            .eq(rewards.iter().map(|r| r.to_bits())),
        "{ctx}: rewards differ"
    );
    let dones: Vec<bool> = (0..n).map(done).collect();
    assert_eq!(ep.done, dones, "{ctx}: done flags differ");
    let ts: Vec<i64> = (0..n).map(t_ns).collect();
    assert_eq!(
        ep.timestamps_ns.as_deref(),
        Some(&ts[..]),
        "{ctx}: timestamps differ"
    );
}

/// Power-cut modes to try on one crash point (`seed` varies the torn tails).
pub fn modes(seed: u64, torn: bool) -> Vec<PowerLoss> {
    if torn {
        vec![
            PowerLoss::DropUnsynced,
            PowerLoss::KeepTailPrefix { seed },
            PowerLoss::KeepTailGarbage { seed },
        ]
    } else {
        vec![PowerLoss::DropUnsynced]
    }
}

/// Names of the files under `dir` in `fs`.
pub fn names_under(fs: &SimFs, dir: &Path) -> Vec<String> {
    fs.files(dir)
        .map(|m| m.keys().map(|p| p.display().to_string()).collect())
        .unwrap_or_default()
}
