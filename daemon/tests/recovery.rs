//! Recovery on snapshots of live episode directories (what a crash leaves behind).

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_ingest_proto::push_step_record;
use wshard_recorder::episode::{Durability, EpisodeSchema};
use wshard_recorder::recovery::{recover_all, recover_all_with, recover_data_dir, RecoveryMode};
use wshard_recorder::session::{
    FinalStatus, FsyncPolicy, Responder, Rotation, Session, SessionSettings,
};
use wshard_storage::fsio::{Fs, RealFs};
use wshard_storage::layout::EpisodeLayout;

#[derive(Default)]
struct Acks(Mutex<u64>);

impl Responder for Acks {
    fn durable(&self, up_to_seq: u64) {
        *self.0.lock().unwrap() = up_to_seq;
    }
    fn storage_failed(&self, _: &str) {}
}

fn payload(i: u64) -> Vec<u8> {
    (0..8)
        .flat_map(|j| ((i * 8 + j) as f32).to_le_bytes())
        .collect()
}

fn open(dir: &Path, max_ts: u64) -> (Session, Arc<Acks>) {
    let schema = EpisodeSchema::new(
        "ep".into(),
        "Env".into(),
        Timebase::ticks(100.0),
        Durability::Ack,
        vec![(
            "state".into(),
            Lane::Signal,
            DType::F32,
            vec![8],
            Codec::zstd(),
            None,
        )],
        serde_json::Map::new(),
    )
    .unwrap();
    let settings = SessionSettings {
        fsync: FsyncPolicy::Always,
        rotation: Rotation {
            max_timesteps: max_ts,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        ..SessionSettings::default()
    };
    let acks = Arc::new(Acks::default());
    (
        Session::open(Arc::new(RealFs), dir, schema, settings, acks.clone()).unwrap(),
        acks,
    )
}

fn push(s: &Session, from: u64, n: u64) {
    let mut rec = Vec::new();
    for i in from..from + n {
        push_step_record(&mut rec, i, i as i64, 0.5, false, &[&payload(i)]);
    }
    assert!(s.submit(rec, n));
}

fn wait_durable(acks: &Acks, n: u64) {
    let t = Instant::now();
    while *acks.0.lock().unwrap() < n {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "durable stuck at {}",
            *acks.0.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Copy the episode directory as it is now, as a crash would leave it.
fn snapshot(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("ep")).unwrap();
    for e in std::fs::read_dir(from.join("ep")).unwrap() {
        let p = e.unwrap().path();
        // The session runs on: a file listed a moment ago (a journal segment whose chunk
        // is listed, a manifest temp file) may be gone already, as a crash could find it.
        match std::fs::copy(&p, to.join("ep").join(p.file_name().unwrap())) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("copy {}: {e}", p.display()),
        }
    }
}

fn settings() -> SessionSettings {
    SessionSettings::default()
}

fn check(data_dir: &Path, at_least: u64) -> Manifest {
    let layout = EpisodeLayout::new(data_dir, "ep");
    let m = Manifest::read_file(layout.manifest()).unwrap();
    assert_eq!(m.status.as_deref(), Some("recovered"));
    m.validate_continuity().unwrap();
    assert!(
        m.total_timesteps >= at_least,
        "{} < {at_least}",
        m.total_timesteps
    );
    let ep = read_episode_chunked(&layout.manifest()).unwrap();
    let want: Vec<u8> = (0..ep.length).flat_map(payload).collect();
    assert_eq!(
        ep.channel("state").unwrap().data,
        want,
        "recovered values must be bit-exact and in order"
    );
    m
}

#[test]
fn recovery_replays_the_journal_after_the_last_chunk() {
    let live = tempfile::tempdir().unwrap();
    let (s, acks) = open(live.path(), 100);
    push(&s, 0, 250);
    wait_durable(&acks, 250);
    // Chunks 0 and 1 are published in the background; wait for the manifest to list them.
    let t = Instant::now();
    while Manifest::read_file(EpisodeLayout::new(live.path(), "ep").manifest())
        .unwrap()
        .chunks
        .len()
        < 2
    {
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(2));
    }
    let crashed = tempfile::tempdir().unwrap();
    snapshot(live.path(), crashed.path());
    let _ = s.close(FinalStatus::Complete);

    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, crashed.path(), &settings());
    assert_eq!(reports.len(), 1);
    let r = reports[0].as_ref().unwrap();
    assert_eq!(r.timesteps_recovered, 50);
    assert!(!r.lost_data(), "{r:?}");
    let m = check(crashed.path(), 250);
    assert_eq!(m.total_timesteps, 250);
    assert_eq!(m.extra["recovery"]["timesteps_recovered"], 50);
    // Idempotent: a second pass has nothing to do.
    assert!(recover_all(&fs, crashed.path(), &settings()).is_empty());
}

#[test]
fn recovery_keeps_the_longest_valid_prefix_of_a_torn_journal() {
    let live = tempfile::tempdir().unwrap();
    let (s, acks) = open(live.path(), 1_000_000);
    for k in 0..10 {
        push(&s, k * 20, 20);
    }
    wait_durable(&acks, 200);
    let crashed = tempfile::tempdir().unwrap();
    snapshot(live.path(), crashed.path());
    let _ = s.close(FinalStatus::Complete);
    let j = EpisodeLayout::new(crashed.path(), "ep").journal(0);
    let len = std::fs::metadata(&j).unwrap().len();
    // Tear the last write in half.
    let f = std::fs::OpenOptions::new().write(true).open(&j).unwrap();
    f.set_len(len - 700).unwrap();
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, crashed.path(), &settings());
    let r = reports[0].as_ref().unwrap();
    assert!(r.lost_data());
    assert!(r.discarded[0].reason.contains("end of the file"), "{r:?}");
    let m = check(crashed.path(), 180);
    assert_eq!(m.total_timesteps, 180, "nine whole batches of 20 survive");
}

#[test]
fn recovery_moves_unfinished_partials_aside_and_never_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let ep = dir.path().join("ep");
    std::fs::create_dir_all(&ep).unwrap();
    std::fs::write(ep.join("ep_chunk_0000.wshard.partial"), vec![0u8; 4096]).unwrap();
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, dir.path(), &settings());
    let r = reports[0].as_ref().unwrap();
    assert_eq!(r.quarantined.len(), 1);
    assert!(Path::new(&r.quarantined[0]).exists());
    assert!(!ep.join("ep_chunk_0000.wshard.partial").exists());
    let m = Manifest::read_file(EpisodeLayout::new(dir.path(), "ep").manifest()).unwrap();
    assert_eq!(m.status.as_deref(), Some("recovered"));
}

#[test]
fn recovery_removes_an_empty_journal_without_reporting_loss() {
    let dir = tempfile::tempdir().unwrap();
    let ep = dir.path().join("ep");
    std::fs::create_dir_all(&ep).unwrap();
    std::fs::write(ep.join("journal_0000.wal"), b"").unwrap();
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, dir.path(), &settings());
    let r = reports[0].as_ref().unwrap();
    assert!(!r.lost_data(), "{r:?}");
    assert_eq!(r.removed, vec!["journal_0000.wal".to_owned()]);
    assert!(!ep.join("journal_0000.wal").exists());
}

/// Every entry under `dir`: files with their bytes, directories as `None`.
fn tree(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Option<Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.insert(p, None);
            } else {
                out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// A crashed episode `ep` (30 timesteps, all in `journal_0000.wal`) copied to `to/ep`.
fn crashed_ep(to: &Path) {
    let live = tempfile::tempdir().unwrap();
    let (s, acks) = open(live.path(), 1_000_000);
    push(&s, 0, 30);
    wait_durable(&acks, 30);
    snapshot(live.path(), to);
    let _ = s.close(FinalStatus::Complete);
}

/// Directories of the data directory that never were episodes (one an operator made, an
/// empty one, a copy of an episode under another name, a copied data directory, a name
/// that is no episode id) are left exactly as they are: no manifest written into them,
/// nothing moved or removed. (Before, each became an empty `recovered` episode.)
#[test]
fn recovery_leaves_a_directory_that_never_was_an_episode_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    std::fs::create_dir(data.join("scratch")).unwrap();
    std::fs::create_dir(data.join("notes")).unwrap();
    std::fs::write(data.join("notes/todo.txt"), b"label the cups").unwrap();
    // A copy of a crashed episode under another name: its manifest names `ep`.
    let copy = tempfile::tempdir().unwrap();
    crashed_ep(copy.path());
    std::fs::rename(copy.path().join("ep"), data.join("ep.bak")).unwrap();
    // A copied data directory, and a file system's own directory.
    crashed_ep(&data.join("backup"));
    std::fs::create_dir(data.join("lost+found")).unwrap();
    std::fs::create_dir(data.join(".cache")).unwrap();
    std::fs::write(data.join(".cache/x"), b"x").unwrap();
    let before = tree(data);

    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, data, &settings());
    assert!(reports.is_empty(), "{reports:?}");
    assert_eq!(
        tree(data),
        before,
        "a directory that is no episode was changed"
    );
    let dry = recover_all_with(&fs, data, &settings(), RecoveryMode::DryRun);
    assert!(dry.is_empty(), "{dry:?}");
    // Each is reported, with why.
    let all = recover_data_dir(&fs, data, &settings());
    assert!(all.episodes.is_empty());
    let left: Vec<(&str, String)> = all
        .left_alone
        .iter()
        .map(|l| (l.name.as_str(), l.reason.to_string()))
        .collect();
    let names: Vec<&str> = left.iter().map(|l| l.0).collect();
    assert_eq!(
        names,
        ["backup", "ep.bak", "lost+found", "notes", "scratch"]
    );
    assert!(left[1].1.contains("of episode `ep`"), "{left:?}");
    assert!(left[2].1.contains("not an episode id"), "{left:?}");
    for i in [0, 3, 4] {
        assert!(left[i].1.contains("none of the files"), "{left:?}");
    }
    assert_eq!(all.left_alone[4].path, data.join("scratch"));
    assert_eq!(
        tree(data),
        before,
        "a directory that is no episode was changed"
    );
}

/// An episode that crashed at its earliest moments, or whose manifest a cut recovery had
/// just moved to quarantine, holds only one file the daemon writes: the manifest's
/// temporary file, a journal, a partial chunk, or (multi-stream) the `streams/` folder or
/// the index's temporary file. Each is still recovered as an episode.
#[test]
fn recovery_finds_episodes_that_crashed_at_their_earliest_moments() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let only = |id: &str, file: &str, bytes: &[u8]| {
        std::fs::create_dir_all(data.join(id)).unwrap();
        std::fs::write(data.join(id).join(file), bytes).unwrap();
    };
    only("a", "a_manifest.wshard.tmp", b"SHRD torn");
    crashed_ep(data);
    std::fs::remove_file(EpisodeLayout::new(data, "ep").manifest()).unwrap();
    only("c", "c_chunk_0000.wshard.partial", &[0u8; 512]);
    std::fs::create_dir_all(data.join("d/streams")).unwrap();
    only("e", "e_index.json.tmp", b"{\"torn");

    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let mut reports: Vec<_> = recover_all(&fs, data, &settings())
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    reports.sort_by(|a, b| a.episode_id.cmp(&b.episode_id));
    let ids: Vec<&str> = reports.iter().map(|r| r.episode_id.as_str()).collect();
    assert_eq!(ids, ["a", "c", "d", "e", "ep"]);
    assert_eq!(reports[4].timesteps_recovered, 30, "{:?}", reports[4]);
    check(data, 30);
    for id in ["a", "c"] {
        let m = Manifest::read_file(EpisodeLayout::new(data, id).manifest()).unwrap();
        assert_eq!(m.status.as_deref(), Some("recovered"), "{id}");
    }
    for id in ["d", "e"] {
        let ix = data.join(id).join(format!("{id}_index.json"));
        assert!(ix.exists(), "{id}: no index");
    }
    assert!(recover_all(&fs, data, &settings()).is_empty());
}

/// Recovery removes the manifest's temporary file (a commit cut before its rename) and no
/// other `.tmp` file: one an operator left in the episode directory stays as it is.
#[test]
fn recovery_removes_only_the_manifest_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    crashed_ep(data);
    let ep = data.join("ep");
    std::fs::write(ep.join("ep_manifest.wshard.tmp"), b"a cut commit").unwrap();
    std::fs::write(ep.join("notes.tmp"), b"an operator's").unwrap();
    let fs: Arc<dyn Fs> = Arc::new(RealFs);
    let reports = recover_all(&fs, data, &settings());
    let r = reports[0].as_ref().unwrap();
    assert!(
        r.removed.contains(&"ep_manifest.wshard.tmp".to_owned()),
        "{r:?}"
    );
    assert!(!r.removed.contains(&"notes.tmp".to_owned()), "{r:?}");
    assert!(!ep.join("ep_manifest.wshard.tmp").exists());
    assert_eq!(
        std::fs::read(ep.join("notes.tmp")).unwrap(),
        b"an operator's"
    );
    check(data, 30);
}
