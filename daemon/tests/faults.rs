//! Fault injection: a write, fsync, rename, directory fsync or create fails (EIO, ENOSPC,
//! a short write, a failed fdatasync) somewhere in a recording. The episode must fail
//! cleanly (no panic, `storage_failed` once, naming the step and the file), a failed sync
//! must never be retried, and everything acknowledged before must survive a power cut and
//! recovery.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;

use std::collections::BTreeMap;
use std::path::Path;

use sim_harness::{fresh_sim, layout, record, recover_and_check, Run, Scenario};
use wshard_recorder::episode::Durability;
use wshard_recorder::session::FsyncPolicy;
use wshard_storage::fsio::sim::{FaultKind, OpKind, OpRecord, Outcome, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

fn ack() -> Scenario {
    Scenario::standard("ack/always", Durability::Ack, FsyncPolicy::Always)
}

fn chunk() -> Scenario {
    Scenario::standard("chunk/always", Durability::Chunk, FsyncPolicy::Always)
}

/// Record `sc` on a fresh sim armed by `arm`.
fn run_with(sc: &Scenario, arm: impl FnOnce(&SimFs)) -> (SimFs, Run) {
    let sim = fresh_sim();
    arm(&sim);
    let run = record(&sim, sc);
    assert!(sim.faults_fired() > 0, "{}: the fault never fired", sc.name);
    (sim, run)
}

/// The injected failure(s) in the log.
fn injected(sim: &SimFs) -> Vec<OpRecord> {
    sim.log().into_iter().filter(|r| r.injected).collect()
}

/// The failure message of the run (from CLOSE or from OPEN).
fn failure(run: &Run) -> String {
    run.open_error.clone().unwrap_or_else(|| {
        run.summary
            .as_ref()
            .and_then(|s| s.failure.as_ref().map(ToString::to_string))
            .unwrap_or_default()
    })
}

/// The episode failed cleanly: one `storage_failed` (for a failure after OPEN), naming
/// `step` and `file`; no thread panicked.
fn assert_failed(run: &Run, step: &str, file: &str) -> String {
    let why = failure(run);
    assert!(!why.is_empty(), "the episode did not fail: {run:?}");
    assert!(!why.contains("panicked"), "a thread panicked: {why}");
    assert!(
        why.contains(step),
        "{why:?} does not name the step {step:?}"
    );
    assert!(
        why.contains(file),
        "{why:?} does not name the file {file:?}"
    );
    if run.open_error.is_none() {
        assert_eq!(run.errors.len(), 1, "storage_failed once: {:?}", run.errors);
        assert_eq!(run.errors[0], why);
    }
    why
}

/// After a failed sync (file or directory) of a path, the sim saw no other sync of it: a
/// failed fsync is never retried. Returns how many failed syncs were checked.
fn assert_no_sync_retry(sim: &SimFs) -> usize {
    let log = sim.log();
    let mut checked = 0;
    for (i, r) in log.iter().enumerate() {
        let failed = matches!(r.outcome, Outcome::Failed(_));
        if !(failed && matches!(r.kind, OpKind::Sync | OpKind::SyncDir) && r.injected) {
            continue;
        }
        let later: Vec<&OpRecord> = log[i + 1..]
            .iter()
            .filter(|l| l.kind == r.kind && l.path == r.path)
            .collect();
        // Directory fsyncs of the episode directory by the *other* thread are not retries
        // of this one; file syncs are per file and must never come again.
        if r.kind == OpKind::Sync {
            assert!(
                later.is_empty(),
                "sync of {} failed (op {}) and was attempted again: {later:?}",
                r.path.display(),
                r.n
            );
        }
        checked += 1;
    }
    // After a failed write or sync, the file is left as it is for recovery: nothing more
    // is written to it (a buffered writer must not flush its rest when it is dropped).
    for (i, r) in log.iter().enumerate() {
        let failed = matches!(r.outcome, Outcome::Failed(_)) && r.injected;
        if !(failed && matches!(r.kind, OpKind::Sync | OpKind::Write)) {
            continue;
        }
        let later: Vec<&OpRecord> = log[i + 1..]
            .iter()
            .filter(|l| l.kind == OpKind::Write && l.path == r.path)
            .collect();
        assert!(
            later.is_empty(),
            "{:?} of {} failed (op {}), then it was written again: {later:?}",
            r.kind,
            r.path.display(),
            r.n
        );
    }
    checked
}

/// What the client saw acknowledged survives a power cut of the sim as it is (in every
/// power-loss mode), and recovery gives a consistent episode.
fn assert_nothing_lost(sim: &SimFs, sc: &Scenario, run: &Run) -> u64 {
    let mut found = 0;
    for mode in [
        PowerLoss::DropUnsynced,
        PowerLoss::KeepTailPrefix { seed: 7 },
        PowerLoss::KeepTailGarbage { seed: 11 },
    ] {
        let img = sim.power_cut_image(mode);
        let ctx = format!("{}: after the fault ({mode:?})", sc.name);
        let f = recover_and_check(&img, &sc.settings(), run.acked, &ctx);
        found = f.timesteps;
    }
    found
}

fn journal(k: u64) -> String {
    layout().journal(k).display().to_string()
}

fn partial(k: u64) -> String {
    layout().partial(k).display().to_string()
}

fn manifest() -> String {
    layout().manifest().display().to_string()
}

fn ep_dir() -> String {
    layout().dir.display().to_string()
}

#[test]
fn fault_eio_on_journal_write() {
    let sc = ack();
    // Journal writes: 1 = header, 2 = first batch, 3 = the batch crossing chunk 0's end.
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Write, "journal_0000", 3, FaultKind::Eio)
    });
    let why = assert_failed(&run, "write journal", &journal(0));
    assert!(why.contains("os error 5"), "{why}");
    assert_eq!(run.acked, 5, "the first batch was acknowledged before");
    assert!(assert_nothing_lost(&sim, &sc, &run) >= 5);
}

#[test]
fn fault_enospc_on_journal_write() {
    let sc = ack();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Write, "journal_0000", 2, FaultKind::Enospc)
    });
    let why = assert_failed(&run, "write journal", &journal(0));
    assert!(why.contains("No space left on device"), "{why}");
    assert_eq!(run.acked, 0);
    assert_nothing_lost(&sim, &sc, &run);
}

#[test]
fn fault_short_writes_are_completed() {
    // A short write is not an error: write_all carries on with the rest.
    let sc = ack();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Write, "journal_0000", 2, FaultKind::ShortWrite);
        s.inject_on(OpKind::Write, "journal_0001", 1, FaultKind::ShortWrite);
        s.inject_on(OpKind::Write, ".partial", 1, FaultKind::ShortWrite);
        s.inject_on(
            OpKind::Write,
            "manifest.wshard.tmp",
            2,
            FaultKind::ShortWrite,
        );
    });
    assert_eq!(sim.faults_fired(), 4);
    let shorts = sim
        .log()
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Short(_)))
        .count();
    assert_eq!(shorts, 4);
    assert_eq!(failure(&run), "");
    assert_eq!(run.acked, sc.total());
    assert_eq!(assert_nothing_lost(&sim, &sc, &run), sc.total());
}

#[test]
fn fault_short_write_then_enospc() {
    // The disk fills in the middle of a write: a prefix is written, the rest gets ENOSPC.
    let sc = ack();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Write, "journal_0000", 3, FaultKind::ShortWrite);
        s.inject_on(OpKind::Write, "journal_0000", 4, FaultKind::Enospc);
    });
    let why = assert_failed(&run, "write journal", &journal(0));
    assert!(why.contains("No space left on device"), "{why}");
    assert_eq!(run.acked, 5);
    assert!(assert_nothing_lost(&sim, &sc, &run) >= 5);
}

#[test]
fn fault_fdatasync_failure_is_never_retried() {
    let sc = ack();
    // Journal syncs: 1 = header, 2 = first batch, 3 = the batch crossing chunk 0's end.
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Sync, "journal_0000", 3, FaultKind::FsyncFails)
    });
    let why = assert_failed(&run, "fdatasync journal", &journal(0));
    assert!(why.contains("os error 5"), "{why}");
    let log = sim.log();
    let failed = log.iter().position(|r| r.injected).unwrap();
    let syncs_from_failure = log[failed..]
        .iter()
        .filter(|r| r.kind == OpKind::Sync && r.path == Path::new(&journal(0)))
        .count();
    assert_eq!(syncs_from_failure, 1, "exactly one sync attempt: {log:?}");
    assert_eq!(assert_no_sync_retry(&sim), 1);
    // Nothing was acknowledged on the failed sync; what was before stays.
    assert_eq!(run.acked, 5);
    assert!(assert_nothing_lost(&sim, &sc, &run) >= 5);
}

#[test]
fn fault_chunk_partial_write_failure() {
    for sc in [ack(), chunk()] {
        let (sim, run) = run_with(&sc, |s| {
            s.inject_on(OpKind::Write, ".partial", 1, FaultKind::Eio)
        });
        assert_failed(&run, "write", &partial(0));
        assert!(run.acked < 16, "{}: chunk 0 was never published", sc.name);
        assert_nothing_lost(&sim, &sc, &run);
    }
}

#[test]
fn fault_chunk_fsync_failure() {
    for sc in [ack(), chunk()] {
        let (sim, run) = run_with(&sc, |s| {
            s.inject_on(OpKind::Sync, ".partial", 2, FaultKind::FsyncFails)
        });
        assert_failed(&run, "fsync chunk", &partial(1));
        assert_eq!(assert_no_sync_retry(&sim), 1);
        if sc.durability == Durability::Chunk {
            assert_eq!(run.acked, 8, "only chunk 0 was acknowledged");
        }
        assert!(assert_nothing_lost(&sim, &sc, &run) >= 8);
    }
}

#[test]
fn fault_chunk_rename_failure() {
    for sc in [ack(), chunk()] {
        let (sim, run) = run_with(&sc, |s| {
            s.inject_on(OpKind::Rename, ".partial", 1, FaultKind::Eio)
        });
        assert_failed(&run, "rename chunk", &partial(0));
        assert_nothing_lost(&sim, &sc, &run);
    }
}

#[test]
fn fault_directory_fsync_failure() {
    // Directory fsyncs of the episode directory, in order: 1 the first manifest, 2 journal
    // 0, 3 journal 1 (rotation), 4 chunk 0's rename, 5 the manifest listing chunk 0.
    for (nth, step, file) in [
        (2, "fsync directory", ep_dir()),
        (3, "fsync directory", ep_dir()),
        (4, "publishing a chunk failed: fsync directory", ep_dir()),
        (
            5,
            "committing the manifest failed: fsync directory",
            manifest(),
        ),
    ] {
        let sc = ack();
        let (sim, run) = run_with(&sc, |s| {
            s.inject_on(OpKind::SyncDir, "/data/ep", nth, FaultKind::Eio)
        });
        let why = assert_failed(&run, step, &file);
        eprintln!("directory fsync #{nth}: {why}");
        assert_nothing_lost(&sim, &sc, &run);
    }
    // Class `chunk`: the manifest listing chunk 0 is the 3rd.
    let sc = chunk();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::SyncDir, "/data/ep", 3, FaultKind::Eio)
    });
    assert_failed(
        &run,
        "committing the manifest failed: fsync directory",
        &manifest(),
    );
    assert_eq!(run.acked, 0, "the chunk was not acknowledged");
    assert_nothing_lost(&sim, &sc, &run);
}

#[test]
fn fault_manifest_tmp_write_failure() {
    for sc in [ack(), chunk()] {
        // Manifest writes: 1 at OPEN, 2 listing chunk 0.
        let (sim, run) = run_with(&sc, |s| {
            s.inject_on(OpKind::Write, "manifest.wshard.tmp", 2, FaultKind::Eio)
        });
        assert_failed(
            &run,
            "committing the manifest failed: write temp file",
            &manifest(),
        );
        if sc.durability == Durability::Chunk {
            assert_eq!(run.acked, 0);
        }
        assert_nothing_lost(&sim, &sc, &run);
    }
}

#[test]
fn fault_manifest_tmp_fsync_failure() {
    let sc = chunk();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(
            OpKind::Sync,
            "manifest.wshard.tmp",
            3,
            FaultKind::FsyncFails,
        )
    });
    assert_failed(
        &run,
        "committing the manifest failed: fsync temp file",
        &manifest(),
    );
    assert_eq!(assert_no_sync_retry(&sim), 1);
    assert_eq!(run.acked, 8, "chunk 0 was acknowledged, chunk 1 not");
    assert!(assert_nothing_lost(&sim, &sc, &run) >= 8);
}

#[test]
fn fault_journal_create_at_rotation() {
    let sc = ack();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Create, "journal_0001", 1, FaultKind::Enospc)
    });
    assert_failed(&run, "create journal", &journal(1));
    assert_eq!(run.acked, 8, "the rotation synced chunk 0's journal first");
    assert!(assert_nothing_lost(&sim, &sc, &run) >= 8);
}

#[test]
fn fault_at_open() {
    for (kind, nth, step, file) in [
        (OpKind::Create, 1, "create episode directory", ep_dir()),
        (OpKind::SyncDir, 1, "fsync directory", "/data".to_owned()),
        (OpKind::Create, 2, "create temp file", manifest()),
        (OpKind::Create, 3, "create journal", journal(0)),
        (OpKind::Sync, 2, "fdatasync journal", journal(0)),
    ] {
        let sc = ack();
        let (sim, run) = run_with(&sc, |s| s.inject(kind, nth, FaultKind::Eio));
        assert!(run.open_error.is_some(), "{kind:?} #{nth}: OPEN succeeded");
        assert_failed(&run, step, &file);
        assert_eq!(run.acked, 0);
        assert_nothing_lost(&sim, &sc, &run);
    }
}

#[test]
fn fault_journal_removal_only_costs_space() {
    // Removing a journal segment after its chunk is listed is housekeeping: a failure is
    // logged, the episode completes, and recovery removes the segment later.
    let sc = ack();
    let (sim, run) = run_with(&sc, |s| {
        s.inject_on(OpKind::Remove, "journal_0000", 1, FaultKind::Eio)
    });
    assert_eq!(failure(&run), "");
    assert_eq!(run.acked, sc.total());
    assert!(sim.exists(&layout().journal(0)));
    assert_eq!(assert_nothing_lost(&sim, &sc, &run), sc.total());
}

/// Every occurrence of every kind of operation, failed in turn with every fault that
/// applies to it: no panic, a clean failure naming the file (or, for a short write or a
/// journal removal, no failure at all), no fsync retried, nothing acknowledged lost.
#[test]
fn fault_every_operation_in_turn() {
    let t = std::time::Instant::now();
    let mut totals: BTreeMap<String, usize> = BTreeMap::new();
    for sc in [ack(), chunk()] {
        let probe = fresh_sim();
        let _ = record(&probe, &sc);
        let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
        for r in probe.log().iter().filter(|r| r.kind.changes_state()) {
            *per_kind.entry(format!("{:?}", r.kind)).or_default() += 1;
        }
        for (kind, faults) in [
            (
                OpKind::Write,
                &[FaultKind::Eio, FaultKind::Enospc, FaultKind::ShortWrite][..],
            ),
            (OpKind::Sync, &[FaultKind::FsyncFails][..]),
            (OpKind::SyncDir, &[FaultKind::Eio][..]),
            (OpKind::Rename, &[FaultKind::Eio][..]),
            (OpKind::Create, &[FaultKind::Enospc][..]),
            (OpKind::Remove, &[FaultKind::Eio][..]),
            (OpKind::Preallocate, &[FaultKind::Enospc][..]),
        ] {
            let count = per_kind.get(&format!("{kind:?}")).copied().unwrap_or(0);
            for &fault in faults {
                for nth in 1..=count {
                    let sim = fresh_sim();
                    sim.inject(kind, nth, fault);
                    let run = record(&sim, &sc);
                    let ctx = format!("{}: {fault:?} on {kind:?} #{nth}", sc.name);
                    let Some(rec) = injected(&sim).into_iter().next() else {
                        // The run took another path and never reached this occurrence.
                        continue;
                    };
                    let why = failure(&run);
                    assert!(!why.contains("panicked"), "{ctx}: {why}");
                    // Harmless: a short write (write_all goes on), removing a journal
                    // segment whose chunk is listed, and the directory fsync after the
                    // last such removal at CLOSE (the manifest is final already).
                    let harmless = fault == FaultKind::ShortWrite
                        || kind == OpKind::Remove
                        || (kind == OpKind::SyncDir
                            && sc.durability == Durability::Ack
                            && nth == count);
                    if harmless {
                        assert_eq!(why, "", "{ctx}: should not fail the episode");
                        assert_eq!(run.acked, sc.total(), "{ctx}");
                    } else {
                        assert!(!why.is_empty(), "{ctx}: the episode did not fail");
                        // The message names the file (a manifest temp file by the manifest,
                        // a directory by itself or by the manifest in it).
                        let path = rec.path.display().to_string();
                        let named = path.strip_suffix(".tmp").unwrap_or(&path).to_owned();
                        assert!(why.contains(&named), "{ctx}: {why:?} does not name {named}");
                        if run.open_error.is_none() {
                            assert_eq!(run.errors.len(), 1, "{ctx}: {:?}", run.errors);
                        }
                    }
                    assert_no_sync_retry(&sim);
                    for mode in [
                        PowerLoss::DropUnsynced,
                        PowerLoss::KeepTailGarbage { seed: nth },
                    ] {
                        let img = sim.power_cut_image(mode);
                        recover_and_check(
                            &img,
                            &sc.settings(),
                            run.acked,
                            &format!("{ctx} {mode:?}"),
                        );
                    }
                    *totals
                        .entry(format!("{} {fault:?} on {kind:?}", sc.name))
                        .or_default() += 1;
                }
            }
        }
    }
    let n: usize = totals.values().sum();
    eprintln!(
        "{n} faults injected, one per run, {:.1} s: {totals:#?}",
        t.elapsed().as_secs_f64()
    );
    assert!(n > 100, "{n}");
}
