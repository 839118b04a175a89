//! Power-cut simulation of multi-stream episodes: the episode index commits, the events
//! log and the annotations commits, cut at every operation that changes state (in every
//! torn-write mode), then recovered: the index is consistent with the streams' manifests,
//! nothing acknowledged (timesteps, events, annotations) is lost, nothing half-done is
//! left, and a second recovery has nothing to do. Recovery itself is cut too.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod multirate_harness;
mod sim_harness;

use std::sync::Arc;

use multirate_harness::{check_multi, mep_dir, record_multi, settings, MEP};
use sim_harness::{fresh_sim, modes, recover};
use wshard::episode_dir::annotations::Annotations;
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::names::annotations_file_name;
use wshard_recorder::episode_files::{annotate, NewAnnotation};
use wshard_recorder::recovery::recover_all;
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;

/// Recover `img`, check it, and check that a second recovery has nothing to do.
fn recover_and_check(img: &SimFs, acked: &multirate_harness::Acked, ctx: &str) {
    recover(img, &settings());
    check_multi(img, acked, ctx);
    let again = recover(img, &settings());
    assert!(
        again.is_empty(),
        "{ctx}: a second recovery had work: {again:?}"
    );
}

#[test]
fn multirate_crash_at_every_operation_keeps_index_streams_and_events() {
    let probe_sim = fresh_sim();
    let probe = record_multi(&probe_sim);
    assert!(probe.finalized, "the probe did not finalize: {probe:?}");
    assert_eq!(probe.events.len(), 4);
    let ops = probe_sim.ops();
    // The probe, cut after the close: complete, nothing to recover.
    let img = probe_sim.power_cut_image(PowerLoss::DropUnsynced);
    assert!(
        recover(&img, &settings()).is_empty(),
        "a finalized episode needed recovery"
    );
    check_multi(&img, &probe, "probe");
    let mut points = 0;
    let mut images = 0;
    let mut acked_events = std::collections::BTreeSet::new();
    for k in 0..ops * 2 + 10 {
        let sim = fresh_sim();
        sim.crash_after(k);
        let acked = record_multi(&sim);
        acked_events.insert(acked.events.len());
        for mode in modes(k, true) {
            let ctx = format!("crash after {k} of {ops} ops ({mode:?})");
            recover_and_check(&sim.power_cut_image(mode), &acked, &ctx);
            images += 1;
        }
        points += 1;
        if !sim.is_crashed() {
            break;
        }
    }
    assert!(
        points > ops,
        "the sweep stopped before the probe's {ops} operations"
    );
    assert!(
        acked_events.len() > 2,
        "events acknowledged at few points: {acked_events:?}"
    );
    eprintln!("multirate crash: {ops} operations in the probe, {points} crash points, {images} images recovered and checked");
}

#[test]
fn multirate_crash_during_recovery_converges() {
    // Images cut in the middle of the recording, recovery cut at every one of its
    // operations, then run again: the same checks hold.
    let probe_sim = fresh_sim();
    record_multi(&probe_sim);
    let ops = probe_sim.ops();
    let mut cuts = 0;
    for k in (ops / 4..ops).step_by(usize::try_from(ops / 6).unwrap_or(1).max(1)) {
        let sim = fresh_sim();
        sim.crash_after(k);
        let acked = record_multi(&sim);
        let base = sim.power_cut_image(PowerLoss::KeepTailPrefix { seed: k });
        let full = base.power_cut_image(PowerLoss::DropUnsynced);
        let fs: Arc<dyn Fs> = Arc::new(full.clone());
        let _ = recover_all(&fs, &sim_harness::data_dir(), &settings());
        let recovery_ops = full.ops();
        for r in 0..recovery_ops {
            let img = base.power_cut_image(PowerLoss::DropUnsynced);
            img.crash_after(r);
            let fs: Arc<dyn Fs> = Arc::new(img.clone());
            let _ = recover_all(&fs, &sim_harness::data_dir(), &settings());
            let after = img.power_cut_image(PowerLoss::DropUnsynced);
            recover_and_check(
                &after,
                &acked,
                &format!("recording cut at {k}, recovery at {r}"),
            );
            cuts += 1;
        }
    }
    assert!(cuts > 0);
    eprintln!("multirate crash during recovery: {cuts} recovery cut points checked");
}

fn annotation(i: u64) -> NewAnnotation {
    NewAnnotation {
        t_ns: 1_700_000_000_000_000_000 + i as i64,
        label: format!("label-{i}"),
        data: EventData::Json(serde_json::json!({"i": i})),
        author: "uid 0".into(),
        created_unix_ns: i,
    }
}

#[test]
fn multirate_crash_annotations_commit_loses_no_acknowledged_annotation() {
    // A finalized episode, then three annotations; power lost after every operation.
    let base = fresh_sim();
    record_multi(&base);
    let base = base.power_cut_image(PowerLoss::DropUnsynced);
    let probe = base.power_cut_image(PowerLoss::DropUnsynced);
    let before = probe.ops();
    for i in 0..3 {
        annotate(&probe, &mep_dir(), MEP, annotation(i)).unwrap();
    }
    let ops = probe.ops() - before;
    let path = mep_dir().join(annotations_file_name(MEP));
    for k in 0..=ops {
        let sim = base.power_cut_image(PowerLoss::DropUnsynced);
        sim.crash_after(k);
        let mut acked = 0;
        for i in 0..3 {
            if annotate(&sim, &mep_dir(), MEP, annotation(i)).is_ok() {
                acked += 1;
            } else {
                break;
            }
        }
        for mode in modes(k, true) {
            let img = sim.power_cut_image(mode);
            let ctx = format!("annotations cut after {k} of {ops} ops ({mode:?})");
            let reports = recover(&img, &settings());
            assert!(
                reports.is_empty(),
                "{ctx}: annotating made recovery rewrite the episode: {reports:?}"
            );
            let found = match img.read(&path) {
                Ok(bytes) => {
                    Annotations::from_json_bytes(&bytes, &path)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"))
                        .annotations
                }
                Err(_) => Vec::new(),
            };
            assert!(
                found.len() >= acked,
                "{ctx}: {} annotations, {acked} acknowledged",
                found.len()
            );
            for (i, a) in found.iter().enumerate() {
                assert_eq!(
                    (a.seq, a.label.as_str()),
                    (i as u64, format!("label-{i}").as_str()),
                    "{ctx}"
                );
            }
            let tmp = mep_dir().join(format!("{}.tmp", annotations_file_name(MEP)));
            assert!(
                !img.exists(&tmp),
                "{ctx}: a temporary annotations file is left"
            );
        }
    }
}

/// Put `name` with `bytes` durably into `dir` of `sim`.
fn put_durably(sim: &SimFs, dir: &std::path::Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let path = dir.join(name);
    let mut f = sim.create(&path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    sim.sync_dir(dir).unwrap();
}

#[test]
fn multirate_crash_stray_annotations_tmp_is_dropped_without_touching_the_episode() {
    // A finalized single-stream and a finalized multi-stream episode, each with the
    // temporary file of an annotation whose commit was cut before its rename.
    let sim = fresh_sim();
    let sc = sim_harness::Scenario::standard(
        "v1",
        wshard_recorder::episode::Durability::Ack,
        wshard_recorder::session::FsyncPolicy::Always,
    );
    sim_harness::record(&sim, &sc);
    record_multi(&sim);
    let v1_dir = sim_harness::layout().dir;
    for (dir, id) in [(v1_dir.clone(), sim_harness::EP), (mep_dir(), MEP)] {
        put_durably(
            &sim,
            &dir,
            &format!("{}.tmp", annotations_file_name(id)),
            b"{\"cut",
        );
    }
    let img = sim.power_cut_image(PowerLoss::DropUnsynced);
    let manifest_before = img.read(&sim_harness::layout().manifest()).unwrap();
    let reports = recover(&img, &settings());
    assert!(
        reports.is_empty(),
        "recovery rewrote an episode: {reports:?}"
    );
    assert_eq!(
        img.read(&sim_harness::layout().manifest()).unwrap(),
        manifest_before
    );
    for (dir, id) in [(v1_dir, sim_harness::EP), (mep_dir(), MEP)] {
        let tmp = dir.join(format!("{}.tmp", annotations_file_name(id)));
        assert!(!img.exists(&tmp), "{} left", tmp.display());
    }
}

#[test]
fn multirate_crash_torn_events_of_a_single_stream_episode_are_cut() {
    // A single-stream episode cut while recording, its events file ending in a torn line.
    let sim = fresh_sim();
    let mut sc = sim_harness::Scenario::standard(
        "v1",
        wshard_recorder::episode::Durability::Ack,
        wshard_recorder::session::FsyncPolicy::Always,
    );
    sc.batches = vec![5];
    let probe = fresh_sim();
    sim_harness::record(&probe, &sc);
    // Cut right before the close: the manifest stays `recording`.
    sim.crash_after(probe.ops().saturating_sub(8));
    sim_harness::record(&sim, &sc);
    let img = sim.power_cut_image(PowerLoss::DropUnsynced);
    let dir = sim_harness::layout().dir;
    let name = wshard::episode_dir::names::events_file_name(sim_harness::EP);
    let line = b"{\"data\":\"x\",\"kind\":\"text\",\"label\":\"l\",\"seq\":0,\"source\":\"c\",\"t_ns\":1}\n";
    let mut bytes = line.to_vec();
    bytes.extend_from_slice(b"{\"data\":\"torn");
    put_durably(&img, &dir, &name, &bytes);
    let reports = recover(&img, &settings());
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(img.read(&dir.join(&name)).unwrap(), line);
    assert!(reports[0]
        .actions
        .iter()
        .any(|a| a.to_json()["action"] == "cut_events_tail"));
}
