//! The episode sink: an existing episode is refused unless `--overwrite`; a failed or
//! power-cut import (the simulated filesystem) never leaves a half episode visible, and a
//! rerun of the import works.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use wshard::digest::sha256_hex;
use wshard::episode::{Episode, Lane, Timebase};
use wshard::manifest::Manifest;
use wshard::read::ShardReader;
use wshard_import::{EpisodeSink, ImportError, SinkOptions};
use wshard_storage::fsio::sim::{FaultKind, OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::{Fs, RealFs};

fn episode(id: &str, t: usize) -> Episode {
    let mut ep = Episode::new(id, "", Timebase::ticks(1.0));
    let vals: Vec<f32> = (0..t * 2).map(|i| i as f32).collect();
    ep.push_channel(
        wshard::episode::Channel::from_f32("obs", Lane::Signal, vec![2], &vals).unwrap(),
    );
    ep.set_reward(vec![1.0; t]);
    let mut done = vec![false; t];
    done[t - 1] = true;
    ep.set_done(done);
    ep
}

fn opts(overwrite: bool) -> SinkOptions {
    SinkOptions {
        overwrite,
        chunk_steps: 4,
        ..SinkOptions::default()
    }
}

/// The visible (non-hidden) entries of the data directory.
fn visible(fs: &dyn Fs, dir: &Path) -> Vec<String> {
    fs.read_dir(dir)
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

/// Check that `/data/ep` is a whole episode: manifest complete, every chunk's hash right.
fn assert_whole(fs: &dyn Fs, t: u64) {
    let dir = Path::new("/data/ep");
    let bytes = fs.read(&dir.join("ep_manifest.wshard")).unwrap();
    let m = Manifest::read(&ShardReader::from_bytes(bytes).unwrap()).unwrap();
    assert_eq!(m.status.as_deref(), Some("complete"));
    assert_eq!(m.total_timesteps, t);
    for c in &m.chunks {
        assert_eq!(
            sha256_hex(&fs.read(&dir.join(&c.uri)).unwrap()),
            c.sha256,
            "{}",
            c.uri
        );
    }
}

#[test]
fn import_sink_existing_episode_refused_unless_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sink = EpisodeSink::new(&RealFs, &data, opts(false)).unwrap();
    let w = sink.write(&episode("ep", 10), Path::new("src")).unwrap();
    assert_eq!((w.steps, w.chunks), (10, 3));
    let e = sink.write(&episode("ep", 5), Path::new("src")).unwrap_err();
    assert!(
        matches!(e, ImportError::EpisodeExists { ref id, .. } if id == "ep"),
        "{e}"
    );
    assert!(!e.is_bad_input());
    assert_eq!(
        common::read_back(&data, "ep").length,
        10,
        "the refused import changed nothing"
    );
    let sink = EpisodeSink::new(&RealFs, &data, opts(true)).unwrap();
    sink.write(&episode("ep", 5), Path::new("src")).unwrap();
    let ep = common::read_back(&data, "ep");
    assert_eq!(ep.length, 5);
    assert_eq!(
        common::listing(&data),
        ["ep"],
        "no staging or old copy left"
    );
    assert_eq!(
        common::listing(&data.join("ep")),
        [
            "ep_chunk_0000.wshard",
            "ep_chunk_0001.wshard",
            "ep_manifest.wshard"
        ]
    );
}

#[test]
fn import_sink_failed_fsync_names_the_episode_and_file() {
    let fs = SimFs::new();
    fs.mkdir_durable(Path::new("/data")).unwrap();
    let sink = EpisodeSink::new(&fs, Path::new("/data"), opts(false)).unwrap();
    fs.inject(OpKind::Sync, 1, FaultKind::FsyncFails);
    let e = sink
        .write(&episode("ep", 10), Path::new("src"))
        .unwrap_err();
    match &e {
        ImportError::Write { id, op, path, .. } => {
            assert_eq!((id.as_str(), *op), ("ep", "fsync"), "{e}");
            assert!(path.starts_with("/data"), "{e}");
        }
        other => panic!("expected Write, got {other:?}"),
    }
}

#[test]
fn import_sink_failed_rename_leaves_no_episode_and_rerun_works() {
    for (op, fault) in [
        (OpKind::Rename, FaultKind::Eio),
        (OpKind::Sync, FaultKind::FsyncFails),
        (OpKind::SyncDir, FaultKind::Eio),
        (OpKind::Write, FaultKind::Enospc),
    ] {
        let fs = SimFs::new();
        fs.mkdir_durable(Path::new("/data")).unwrap();
        let sink = EpisodeSink::new(&fs, Path::new("/data"), opts(false)).unwrap();
        fs.inject(op, 1, fault);
        let e = sink
            .write(&episode("ep", 10), Path::new("src"))
            .unwrap_err();
        assert!(matches!(e, ImportError::Write { .. }), "{op:?}: {e}");
        assert!(visible(&fs, Path::new("/data")).is_empty(), "{op:?}: {e}");
        sink.write(&episode("ep", 10), Path::new("src")).unwrap();
        assert_whole(&fs, 10);
        assert_eq!(visible(&fs, Path::new("/data")), ["ep"]);
    }
}

#[test]
fn import_sink_power_cut_at_every_step_never_shows_half_an_episode() {
    let probe = SimFs::new();
    probe.mkdir_durable(Path::new("/data")).unwrap();
    let sink = EpisodeSink::new(&probe, Path::new("/data"), opts(false)).unwrap();
    let before = probe.ops();
    sink.write(&episode("ep", 10), Path::new("src")).unwrap();
    let total = probe.ops() - before;
    let mut seen_whole = false;
    for n in 0..=total {
        let fs = SimFs::new();
        fs.mkdir_durable(Path::new("/data")).unwrap();
        let sink = EpisodeSink::new(&fs, Path::new("/data"), opts(false)).unwrap();
        fs.crash_after(n);
        let r = sink.write(&episode("ep", 10), Path::new("src"));
        assert_eq!(
            r.is_ok(),
            n >= total,
            "crash after {n} of {total} operations"
        );
        let image = fs.power_cut_image(PowerLoss::DropUnsynced);
        if image.exists(Path::new("/data/ep")) {
            assert_whole(&image, 10);
            seen_whole = true;
        } else {
            // A rerun after the reboot writes it.
            let sink = EpisodeSink::new(&image, Path::new("/data"), opts(false)).unwrap();
            sink.write(&episode("ep", 10), Path::new("src")).unwrap();
            assert_whole(&image, 10);
        }
    }
    assert!(seen_whole, "the last crash point keeps the episode");
}

#[test]
fn import_sink_power_cut_in_a_batch_leaves_each_episode_whole_or_absent() {
    let eps: Vec<Episode> = ["a", "b", "c"].iter().map(|id| episode(id, 6)).collect();
    let probe = SimFs::new();
    probe.mkdir_durable(Path::new("/data")).unwrap();
    let sink = EpisodeSink::new(&probe, Path::new("/data"), opts(false)).unwrap();
    let before = probe.ops();
    assert_eq!(sink.write_batch(&eps, Path::new("src")).unwrap().len(), 3);
    let total = probe.ops() - before;
    for n in 0..=total {
        let fs = SimFs::new();
        fs.mkdir_durable(Path::new("/data")).unwrap();
        let sink = EpisodeSink::new(&fs, Path::new("/data"), opts(false)).unwrap();
        fs.crash_after(n);
        let r = sink.write_batch(&eps, Path::new("src"));
        assert_eq!(
            r.is_ok(),
            n >= total,
            "crash after {n} of {total} operations"
        );
        let image = fs.power_cut_image(PowerLoss::DropUnsynced);
        for id in ["a", "b", "c"] {
            let dir = Path::new("/data").join(id);
            if !image.exists(&dir) {
                continue;
            }
            let bytes = image
                .read(&dir.join(format!("{id}_manifest.wshard")))
                .unwrap();
            let m = Manifest::read(&ShardReader::from_bytes(bytes).unwrap()).unwrap();
            assert_eq!(m.total_timesteps, 6, "{id} after a crash at {n}");
            for c in &m.chunks {
                assert_eq!(
                    sha256_hex(&image.read(&dir.join(&c.uri)).unwrap()),
                    c.sha256
                );
            }
        }
    }
}
