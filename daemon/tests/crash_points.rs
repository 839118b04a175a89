//! Power-loss simulation: a recording (and recovery itself) is cut at every operation that
//! changes state, the file system keeps only what was made durable, recovery runs on that
//! image, and every timestep acknowledged DURABLE before the cut must be there, bit-exact
//! and in order.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;
mod torn_harness;

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sim_harness::{
    data_dir, fresh_sim, layout, modes, record, recover, recover_and_check, Scenario,
};
use wshard_recorder::episode::Durability;
use wshard_recorder::recovery::recover_all;
use wshard_recorder::session::FsyncPolicy;
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

/// Totals of one sweep, printed at the end.
#[derive(Debug, Default)]
struct Sweep {
    ops_probe: u64,
    crash_points: u64,
    images_checked: u64,
    max_acked: u64,
    acked_points: BTreeSet<u64>,
}

/// Record `sc` once without a crash to count its operations, then once per crash point k
/// (power lost after k operations), until a run no longer reaches k.
fn sweep(sc: &Scenario, torn: bool) -> Sweep {
    let t = Instant::now();
    let settings = sc.settings();
    let probe_sim = fresh_sim();
    let probe = record(&probe_sim, sc);
    let summary = probe.summary.as_ref().expect("probe opened");
    assert_eq!(summary.failure, None, "{}: probe failed", sc.name);
    assert_eq!(summary.timesteps, sc.total(), "{}", sc.name);
    assert_eq!(probe.acked, sc.total(), "{}: probe acks", sc.name);
    let mut s = Sweep {
        ops_probe: probe_sim.ops(),
        ..Sweep::default()
    };
    // The probe itself, cut after CLOSE: everything is there and nothing needs recovery.
    let img = probe_sim.power_cut_image(PowerLoss::DropUnsynced);
    let f = recover_and_check(&img, &settings, sc.total(), sc.name);
    assert_eq!(f.timesteps, sc.total());
    assert!(
        !f.recovered,
        "{}: a closed episode needed recovery: {:?}",
        sc.name,
        recover(
            &probe_sim.power_cut_image(PowerLoss::DropUnsynced),
            &settings
        )
    );

    let cap = s.ops_probe * 2 + 10;
    for k in 0..cap {
        let sim = fresh_sim();
        sim.crash_after(k);
        let run = record(&sim, sc);
        let crashed = sim.is_crashed();
        if crashed {
            // After the cut: the session failed cleanly (no panic) and said so.
            if let Some(sum) = &run.summary {
                let why = sum
                    .failure
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                assert!(
                    !why.contains("panicked"),
                    "{} k={k}: a thread panicked: {why}",
                    sc.name
                );
            }
        }
        for (i, mode) in modes(k, torn).into_iter().enumerate() {
            let img = sim.power_cut_image(mode);
            let ctx = format!("{} crash after {k} ops ({mode:?})", sc.name);
            // The strongest claim: every DURABLE sent at all (a later ack can only rest
            // on syncs that completed before the cut) survives.
            let found = recover_and_check(&img, &settings, run.acked, &ctx);
            assert!(found.timesteps >= run.acked_before_crash);
            s.images_checked += 1;
            if i == 0 {
                s.acked_points.insert(run.acked);
            }
        }
        s.max_acked = s.max_acked.max(run.acked);
        s.crash_points += 1;
        if !crashed {
            break;
        }
    }
    assert!(
        s.crash_points > s.ops_probe,
        "{}: the sweep stopped before the probe's {} operations",
        sc.name,
        s.ops_probe
    );
    eprintln!(
        "{}: {} operations in the probe, {} crash points, {} power-cut images recovered and checked, acked values seen {:?}, {:.1} s",
        sc.name,
        s.ops_probe,
        s.crash_points,
        s.images_checked,
        s.acked_points,
        t.elapsed().as_secs_f64()
    );
    s
}

#[test]
fn crash_point_every_syscall_of_a_recording_ack_always() {
    let sc = Scenario::standard("ack/always", Durability::Ack, FsyncPolicy::Always);
    let s = sweep(&sc, true);
    // Acks arrive batch by batch: the sweep saw every intermediate watermark.
    assert!(s.acked_points.len() >= 6, "{:?}", s.acked_points);
}

#[test]
fn crash_point_every_syscall_of_a_recording_ack_interval() {
    let sc = Scenario::standard(
        "ack/interval",
        Durability::Ack,
        FsyncPolicy::Interval(Duration::from_millis(1)),
    );
    sweep(&sc, false);
}

#[test]
fn crash_point_every_syscall_of_a_recording_ack_never() {
    let sc = Scenario::standard("ack/never", Durability::Ack, FsyncPolicy::Never);
    sweep(&sc, true);
}

#[test]
fn crash_point_every_syscall_of_a_recording_chunk() {
    let sc = Scenario::standard("chunk/always", Durability::Chunk, FsyncPolicy::Always);
    let s = sweep(&sc, true);
    // Class `chunk` acknowledges only finalized chunks.
    assert!(
        s.acked_points.iter().all(|&a| a % 8 == 0 || a == 30),
        "{:?}",
        s.acked_points
    );
}

#[test]
fn crash_point_every_syscall_of_a_recording_chunk_never() {
    let sc = Scenario::standard("chunk/never", Durability::Chunk, FsyncPolicy::Never);
    sweep(&sc, false);
}

#[test]
fn crash_point_every_syscall_of_a_recording_unsettled() {
    // Batches submitted back to back: writer and publisher race, so the k-th operation
    // falls at different places from run to run.
    let mut sc = Scenario::standard("ack/always unsettled", Durability::Ack, FsyncPolicy::Always);
    sc.settle = false;
    sweep(&sc, false);
}

/// What the final manifest's recovery report says that must not depend on whether
/// recovery was cut and run again: every count, the status before recovery, the regions
/// discarded and the files quarantined (by name: a file whose move into quarantine was not
/// durable yet is moved again, under a new name). Not `runs`, and not `removed` (a removal
/// whose record was not committed yet is not redone).
fn final_report(fs: &SimFs) -> Option<Value> {
    let bytes = fs.read(&layout().manifest()).ok()?;
    let m = wshard::manifest::Manifest::read(&wshard::read::ShardReader::from_bytes(bytes).ok()?)
        .ok()?;
    let mut r = m.extra.get("recovery")?.clone();
    let obj = r.as_object_mut()?;
    obj.remove("runs");
    obj.remove("removed");
    for key in ["quarantined", "quarantined_rebuilt"] {
        let mut q: Vec<String> = obj
            .get(key)?
            .as_array()?
            .iter()
            .filter_map(|v| {
                let name = std::path::Path::new(v.as_str()?).file_name()?.to_str()?;
                let base = match name.rsplit_once('.') {
                    Some((b, n)) if n.chars().all(|c| c.is_ascii_digit()) => b,
                    _ => name,
                };
                Some(base.to_owned())
            })
            .collect();
        q.sort_unstable();
        q.dedup();
        obj.insert(key.into(), q.into());
    }
    if let Some(d) = obj.get_mut("discarded").and_then(Value::as_array_mut) {
        d.sort_by_key(Value::to_string);
    }
    Some(r)
}

/// Cut the recording at every operation; on each image (power lost as `image_mode(k)`) cut
/// recovery itself at every operation, then recover again from what that left: still
/// consistent, nothing acknowledged lost, nothing recovery quarantined lost (idempotence).
fn recovery_sweep(sc: &Scenario, image_mode: fn(u64) -> PowerLoss, decorate: fn(u64, &SimFs)) {
    let t = Instant::now();
    let settings = sc.settings();
    let probe = fresh_sim();
    let _ = record(&probe, sc);
    let n = probe.ops();
    let mut images = 0u64;
    let mut recovery_points = 0u64;
    let mut quarantine_checked = 0u64;
    for k in 0..n {
        let sim = fresh_sim();
        sim.crash_after(k);
        let run = record(&sim, sc);
        {
            let image = sim.power_cut_image(image_mode(k));
            decorate(k, &image);
            // Reference: an uninterrupted recovery of a copy (a power-cut image of an
            // image is a copy). What it quarantines must never be lost.
            let reference = image.power_cut_image(PowerLoss::DropUnsynced);
            let reports = recover(&reference, &settings);
            let rec_ops = reference.ops();
            let want_report = final_report(&reference);
            let precious: Vec<Vec<u8>> = reports
                .iter()
                .flat_map(|r| r.quarantined.iter())
                .filter_map(|q| reference.read(std::path::Path::new(q)).ok())
                .collect();
            if rec_ops == 0 {
                continue;
            }
            images += 1;
            for j in 0..=rec_ops {
                let copy = image.power_cut_image(PowerLoss::DropUnsynced);
                copy.crash_after(j);
                let dyn_fs: Arc<dyn Fs> = Arc::new(copy.clone());
                // Errors are expected once power is lost; a panic fails the test.
                let _ = recover_all(&dyn_fs, &data_dir(), &settings);
                let mode = if j % 2 == 0 {
                    PowerLoss::DropUnsynced
                } else {
                    PowerLoss::KeepTailGarbage { seed: j }
                };
                let again = copy.power_cut_image(mode);
                let ctx = format!(
                    "{}: recording cut after {k} ops ({:?}), recovery cut after {j} ops ({mode:?})",
                    sc.name,
                    image_mode(k)
                );
                recover_and_check(&again, &settings, run.acked, &ctx);
                // The report adds up over the cut run and the one after it.
                assert_eq!(final_report(&again), want_report, "{ctx}");
                let all = again.files(&data_dir()).unwrap();
                for want in &precious {
                    assert!(
                        all.values().any(|have| have == want),
                        "{ctx}: a file recovery quarantined ({} bytes) is gone: {:?}",
                        want.len(),
                        all.keys().collect::<Vec<_>>()
                    );
                    quarantine_checked += 1;
                }
                recovery_points += 1;
            }
        }
    }
    eprintln!(
        "{}: {n} recording crash points, {images} power-cut images needing recovery, {recovery_points} recovery crash points, {quarantine_checked} quarantined files checked, {:.1} s",
        sc.name,
        t.elapsed().as_secs_f64()
    );
    assert!(images > 10 && recovery_points > images);
}

#[test]
fn crash_point_during_recovery() {
    let sc = Scenario::standard("recovery ack", Durability::Ack, FsyncPolicy::Always);
    recovery_sweep(
        &sc,
        // Every other recording crash point leaves torn, garbage-ended journal tails.
        |k| {
            if k % 2 == 0 {
                PowerLoss::DropUnsynced
            } else {
                PowerLoss::KeepTailGarbage { seed: k }
            }
        },
        |_, _| {},
    );
}

#[test]
fn crash_point_during_recovery_chunk_class() {
    // Class `chunk`: a `.partial` has no journal, so recovery quarantines it. A crash in
    // the middle of writing one leaves no durable name (its directory is synced only after
    // the rename), so each image gets a durable stray `.partial` as a real file system could
    // leave it (another thread's directory fsync made its name durable).
    let sc = Scenario::standard("recovery chunk", Durability::Chunk, FsyncPolicy::Always);
    recovery_sweep(
        &sc,
        |_| PowerLoss::DropUnsynced,
        |_, fs| {
            let dir = sim_harness::layout().dir;
            if fs.exists(&dir) {
                let mut f = fs.create(&sim_harness::layout().partial(9)).unwrap();
                f.write_all(b"stray partial chunk, may hold data nowhere else")
                    .unwrap();
                f.sync_all().unwrap();
                fs.sync_dir(&dir).unwrap();
            }
        },
    );
}

/// A crash during a manifest commit can leave `ep_manifest.wshard.tmp` beside the manifest,
/// and the manifest may then be damaged (bit rot) or gone as well. Every image of the
/// recording gets a stale temporary manifest (a whole copy of the manifest, as the commit
/// wrote it) and, by crash point, an intact, a corrupt or a missing manifest; recovery,
/// uninterrupted and cut at each of its operations then run again, finishes with every
/// acknowledged timestep and no temporary file left. (With a corrupt manifest one run used
/// to fail: its replacement was committed through that same `.tmp`, and the removal
/// planned for the stale one then found nothing.)
#[test]
fn crash_point_during_recovery_with_a_stale_manifest_tmp() {
    let sc = Scenario::standard(
        "recovery stale manifest tmp",
        Durability::Ack,
        FsyncPolicy::Always,
    );
    recovery_sweep(
        &sc,
        |_| PowerLoss::DropUnsynced,
        |k, fs| {
            let l = layout();
            let Ok(manifest) = fs.read(&l.manifest()) else {
                return;
            };
            let mut tmp = l.manifest().into_os_string();
            tmp.push(".tmp");
            let mut f = fs.create(std::path::Path::new(&tmp)).unwrap();
            f.write_all(&manifest).unwrap();
            f.sync_all().unwrap();
            drop(f);
            match k % 3 {
                0 => {}
                1 => {
                    // The magic flipped: unreadable.
                    let mut bad = manifest;
                    bad[0] ^= 0xFF;
                    let mut f = fs.create(&l.manifest()).unwrap();
                    f.write_all(&bad).unwrap();
                    f.sync_all().unwrap();
                }
                _ => fs.remove_file(&l.manifest()).unwrap(),
            }
            fs.sync_dir(&l.dir).unwrap();
        },
    );
}

/// A recovery that is itself cut keeps its report: an episode whose 30 timesteps are all in
/// its journal (no chunk finalized), with a torn journal tail and a stray partial chunk of
/// class `chunk`, is recovered with power lost after each of recovery's operations in
/// turn, then recovered again. The final manifest always reports the 30 timesteps
/// recovered, the bytes discarded and the file quarantined, exactly as an uninterrupted
/// recovery does. (Before, a cut after the chunk was published said
/// `timesteps_recovered: 0`, previous status `recovering`.)
#[test]
fn recovery_report_survives_a_cut_recovery() {
    let rec = torn_harness::record(Durability::Ack, 1 << 40, &[5; 6]);
    let journal = layout().journal(0);
    let mut bytes = rec.image.read(&journal).unwrap();
    bytes.extend((0..200u32).map(|i| (i * 37 % 251) as u8 | 1));
    let image = torn_harness::with_file(&rec.image, &journal, &bytes);
    let stray = layout().partial(7);
    let mut f = image.create(&stray).unwrap();
    f.write_all(b"a partial chunk with no journal").unwrap();
    f.sync_all().unwrap();
    drop(f);
    image.sync_dir(&layout().dir).unwrap();

    let reference = image.power_cut_image(PowerLoss::DropUnsynced);
    let before = reference.ops();
    let reports = recover(&reference, &rec.settings);
    let ops = reference.ops() - before;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].timesteps_recovered, 30);
    assert_eq!(reports[0].runs, 1);
    assert!(reports[0].bytes_discarded() >= 200);
    assert_eq!(reports[0].quarantined.len(), 1);
    let want = final_report(&reference).unwrap();
    let mut resumed = 0;
    for j in 0..=ops {
        let copy = image.power_cut_image(PowerLoss::DropUnsynced);
        copy.crash_after(j);
        let dyn_fs: Arc<dyn Fs> = Arc::new(copy.clone());
        let _ = recover_all(&dyn_fs, &data_dir(), &rec.settings);
        let mode = if j % 2 == 0 {
            PowerLoss::DropUnsynced
        } else {
            PowerLoss::KeepTailGarbage { seed: j }
        };
        let again = copy.power_cut_image(mode);
        let ctx = format!("recovery cut after {j} of {ops} operations ({mode:?})");
        let found = recover_and_check(&again, &rec.settings, 30, &ctx);
        assert_eq!(found.timesteps, 30, "{ctx}");
        let got = final_report(&again).unwrap();
        assert_eq!(got["timesteps_recovered"], 30, "{ctx}: {got}");
        assert_eq!(got["previous_status"], "recording", "{ctx}: {got}");
        assert_eq!(got, want, "{ctx}");
        let runs = {
            let bytes = again.read(&layout().manifest()).unwrap();
            let m = wshard::manifest::Manifest::read(
                &wshard::read::ShardReader::from_bytes(bytes).unwrap(),
            )
            .unwrap();
            m.extra["recovery"]["runs"].as_u64().unwrap()
        };
        if runs > 1 {
            resumed += 1;
        }
    }
    assert!(resumed > 0, "no cut left a report to carry forward");
    eprintln!(
        "recovery_report_survives_a_cut_recovery: {ops} recovery operations, {resumed} cuts resumed from a carried report"
    );
}
