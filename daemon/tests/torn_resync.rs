//! Corrupt media never costs intact data: the two places an independent sweep of damaged
//! copies found where it did.
//!
//! - A flip in the journal block where the last record starts: the scanner dropped the rest
//!   of the block, the start of the last (intact) record with it, then its continuation as
//!   an orphan, and recovery, seeing no intact record after the damage, removed the
//!   journal. Now the scanner resumes at the next record start inside the damaged block,
//!   and a journal with intact bytes after damage is kept in quarantine.
//! - A listed chunk that rotted while its journal still existed: recovery removed the
//!   journal without checking the chunk. Now the chunk is verified first and rebuilt from
//!   its journal.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;
mod torn_harness;

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use sim_harness::{data_dir, fresh_sim, layout, EP};
use torn_harness::{
    check_recovered, flipped, journal, manifest_of, quarantined, record_on, recover, with_file,
    FlipTally, Journal, Recording, Rng, JOURNAL_FILE,
};
use wshard_cli::exit_status::Status;
use wshard_cli::verbs::verify::{self, VerifyOptions};
use wshard_recorder::episode::Durability;
use wshard_recorder::journal::format::BLOCK_LEN;
use wshard_recorder::journal::scan::scan;
use wshard_recorder::recovery::{recover_episode_with, Action, RecoveryMode};
use wshard_storage::fsio::sim::{FaultKind, OpKind};
use wshard_storage::fsio::Fs;

/// A journal whose last record starts in block 0 and ends in block 1: a recording of
/// 10-timestep batches, cut right after the first record that crosses the boundary (the
/// writer is deterministic, so that prefix is exactly the journal of the shorter
/// recording).
fn crossing_journal() -> Journal {
    let mut j = journal(&[10; 80]);
    let i = j
        .records
        .iter()
        .position(|r| r.0 < BLOCK_LEN as u64 && r.1 > BLOCK_LEN as u64)
        .unwrap();
    j.bytes.truncate(j.records[i].1 as usize);
    j.records.truncate(i + 1);
    assert!(j.records.len() > 50, "{}", j.records.len());
    j
}

/// Every bit of the block where the last record starts, flipped in turn (262,144 copies).
/// The record holds 10 acknowledged timesteps with valid checksums; a flip before it used
/// to cost it. For every copy the journal is read back (on all cores): every record but
/// the one hit is found, the last one included, and intact bytes follow the damage (so
/// the journal cannot be removed). Every 251st copy is also recovered as a dry run (every
/// decision, nothing written): the valid prefix is recovered, the journal is kept, and the
/// last record is reported as an intact record dropped at the seq gap, by offset. Every
/// 2039th is recovered for real and fully checked (`Journal::check`: the episode
/// bit-exact, every lost byte reported once, the journal in quarantine byte for byte).
#[test]
fn torn_journal_every_bit_of_the_last_records_block() {
    let t = Instant::now();
    let j = crossing_journal();
    let last = *j.records.last().unwrap();
    let last_idx = j.records.len() - 1;
    let bits = BLOCK_LEN * 8;

    // Every bit, read back.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let resumed_in_block: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let j = &j;
                s.spawn(move || {
                    let mut bytes = j.bytes.clone();
                    let mut resumed = 0;
                    for bit in (w..bits).step_by(workers) {
                        let (at, mask) = (bit / 8, 1u8 << (bit % 8));
                        // The record hit: every byte of the block is in one.
                        let d = j.records.partition_point(|r| r.1 <= at as u64);
                        bytes[at] ^= mask;
                        let s = scan(&bytes);
                        bytes[at] ^= mask;
                        let found = s.records.iter().map(|r| r.offset);
                        let want = (0..j.records.len())
                            .filter(|&i| i != d)
                            .map(|i| j.records[i].0);
                        assert!(found.eq(want), "flip of bit {bit}: records found {s:?}");
                        assert!(s.intact_after_damage(), "flip of bit {bit}: {s:?}");
                        if j.records[d].1 < BLOCK_LEN as u64 {
                            resumed += 1;
                        }
                    }
                    resumed
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert!(resumed_in_block > 250_000, "{resumed_in_block}");
    let read_back = t.elapsed().as_secs_f64();

    // Some of them recovered.
    let path = layout().journal(0);
    let base = with_file(&j.rec.image, &path, &j.bytes);
    let fs: Arc<dyn Fs> = Arc::new(base.clone());
    let mut tally = FlipTally::default();
    let mut dry = 0u64;
    for bit in (0..bits).step_by(251) {
        let flips = [(bit / 8, 1u8 << (bit % 8))];
        let d = j.first_damaged(&flips);
        let ctx = format!("flip of bit {bit}");
        let mut f = base.create(&path).unwrap();
        f.write_all(&flipped(&j.bytes, &flips)).unwrap();
        drop(f);
        let report =
            recover_episode_with(&fs, &data_dir(), EP, &j.rec.settings, RecoveryMode::DryRun)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"))
                .unwrap();
        dry += 1;
        assert_eq!(report.timesteps_recovered, j.prefix(d).0, "{ctx}");
        let kept = report
            .actions
            .iter()
            .any(|a| matches!(a, Action::Quarantine { from, .. } if *from == path));
        let removed = report
            .actions
            .iter()
            .any(|a| matches!(a, Action::Remove { path: p } if *p == path));
        assert!(kept && !removed, "{ctx}: {:?}", report.actions);
        if d > 0 && d < last_idx {
            // The last record was read intact and is reported as dropped at the seq gap,
            // not as corrupt bytes.
            assert!(
                report.discarded.iter().any(|x| x.file == JOURNAL_FILE
                    && x.offset <= last.0
                    && x.offset + x.len >= last.1
                    && x.reason.contains("was expected")),
                "{ctx}: last record not found intact: {:?}",
                report.discarded
            );
        }
    }
    for bit in (0..bits).step_by(2039) {
        j.flip(
            &[(bit / 8, 1u8 << (bit % 8))],
            "last record's block",
            &mut tally,
        );
    }
    assert_eq!(tally.quarantined, tally.copies, "{tally:?}");
    eprintln!(
        "torn_journal_every_bit_of_the_last_records_block: {} records, last at {}..{}, {bits} copies read back on {workers} threads in {read_back:.1} s ({resumed_in_block} resumed inside the block), {dry} dry runs, {} recovered for real: {tally:?}, {:.1} s",
        j.records.len(),
        last.0,
        last.1,
        tally.copies,
        t.elapsed().as_secs_f64()
    );
}

/// The independent sweep's form of it: 300 random single- and multi-bit flips in that
/// block, each recovered for real.
#[test]
fn torn_journal_random_flips_before_the_last_record() {
    let t = Instant::now();
    let j = crossing_journal();
    let last = *j.records.last().unwrap();
    let mut rng = Rng(0x1A57);
    let mut tally = FlipTally::default();
    for i in 0..300 {
        let at = rng.below(last.0 as usize);
        let flips = if i % 3 == 0 {
            (0..1 + rng.below(4))
                .map(|_| (at + rng.below(16), 1u8 << rng.below(8)))
                .filter(|&(p, _)| p < last.0 as usize)
                .collect()
        } else {
            vec![(at, 1u8 << rng.below(8))]
        };
        if flips.is_empty() {
            continue;
        }
        j.flip(&flips, "random flip before the last record", &mut tally);
    }
    assert_eq!(tally.quarantined, tally.copies, "{tally:?}");
    eprintln!(
        "torn_journal_random_flips_before_the_last_record: {tally:?}, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------
// A listed chunk whose journal still exists
// ---------------------------------------------------------------------------------------

const CHUNK0: &str = "ep_chunk_0000.wshard";

/// Chunk 0 (timesteps 0..8) finalized and listed while its journal stays (its removal
/// failed, which is harmless), timesteps 8..12 in `journal_0001.wal`.
fn listed_chunk_with_journal() -> Recording {
    let sim = fresh_sim();
    sim.inject_on(OpKind::Remove, "journal_0000", 1, FaultKind::Eio);
    let rec = record_on(sim, Durability::Ack, 8, &[5, 5, 2], false);
    assert_eq!(manifest_of(&rec.image).chunks.len(), 1);
    assert!(rec.image.exists(&layout().journal(0)));
    assert!(rec.image.exists(&layout().journal(1)));
    rec
}

/// `wshard verify` on the episode's manifest, after exporting the sim to a real directory.
fn verify_status(fs: &wshard_storage::fsio::sim::SimFs) -> (Status, String) {
    let real = tempfile::tempdir().unwrap();
    fs.export_to(&data_dir(), real.path()).unwrap();
    let manifest = real.path().join(EP).join("ep_manifest.wshard");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = verify::run(&[manifest], VerifyOptions::default(), &mut out, &mut err);
    (status, String::from_utf8_lossy(&out).into_owned())
}

/// The listed chunk rotted (flipped at every 3rd byte, cut, or gone) while its journal
/// still holds it: recovery verifies the chunk before it would remove the journal, moves
/// the bad file to quarantine byte for byte, publishes the chunk again from the journal,
/// and only then removes the journal. The episode ends bit-exact and `wshard verify`
/// passes. (Before, the journal was removed unchecked, recovery said nothing was lost, and
/// verify found the chunk corrupt with its only good copy gone.)
#[test]
fn torn_listed_chunk_rotted_is_rebuilt_from_its_journal() {
    let t = Instant::now();
    let rec = listed_chunk_with_journal();
    let chunk0 = rec.image.read(&layout().chunk(0)).unwrap();

    // Intact: the journal is covered by the chunk and removed; nothing is rebuilt.
    let fs = with_file(&rec.image, &layout().chunk(0), &chunk0);
    let report = recover(&fs, &rec.settings, "intact").unwrap();
    assert_eq!(check_recovered(&fs, &rec.sent, "intact"), 12);
    assert_eq!((report.chunks_rebuilt, report.timesteps_recovered), (0, 4));
    assert!(report.removed.iter().any(|r| r == JOURNAL_FILE));
    assert!(!report.lost_data(), "{report:?}");

    let mut cases: Vec<(String, Option<Vec<u8>>)> = (0..chunk0.len())
        .step_by(3)
        .map(|at| {
            let flips = [(at, 1u8 << (at % 8))];
            (format!("flips {flips:?}"), Some(flipped(&chunk0, &flips)))
        })
        .collect();
    for cut in [0, 1, chunk0.len() / 2, chunk0.len() - 1] {
        cases.push((format!("cut at {cut}"), Some(chunk0[..cut].to_vec())));
    }
    cases.push(("gone".into(), None));
    for (i, (what, bad)) in cases.iter().enumerate() {
        let ctx = format!("listed chunk 0 {what}");
        let fs = match bad {
            Some(bytes) => with_file(&rec.image, &layout().chunk(0), bytes),
            None => {
                let fs = with_file(&rec.image, &layout().chunk(0), &chunk0);
                fs.remove_file(&layout().chunk(0)).unwrap();
                fs.sync_dir(&layout().dir).unwrap();
                fs
            }
        };
        let report = recover(&fs, &rec.settings, &ctx).unwrap();
        assert_eq!(check_recovered(&fs, &rec.sent, &ctx), 12, "{ctx}");
        assert_eq!(report.chunks_rebuilt, 1, "{ctx}: {report:?}");
        assert_eq!(report.timesteps_recovered, 12, "{ctx}");
        // The bad file is kept in quarantine, but the chunk is whole again: nothing lost.
        assert!(!report.lost_data(), "{ctx}: {report:?}");
        assert!(
            report.actions.iter().any(|a| matches!(
                a,
                Action::RebuildChunk {
                    chunk_index: 0,
                    timesteps: 8,
                    ..
                }
            )),
            "{ctx}: {:?}",
            report.actions
        );
        if let Some(bytes) = bad {
            let q = quarantined(&fs, &report, CHUNK0)
                .unwrap_or_else(|| panic!("{ctx}: bad chunk not quarantined: {report:?}"));
            assert!(q == *bytes, "{ctx}: quarantined chunk differs");
        }
        assert!(!fs.exists(&layout().journal(0)), "{ctx}");
        assert!(report.removed.iter().any(|r| r == JOURNAL_FILE), "{ctx}");
        assert!(recover(&fs, &rec.settings, &ctx).is_none(), "{ctx}");
        if i % 64 == 0 {
            let (status, out) = verify_status(&fs);
            assert_eq!(status, Status::Ok, "{ctx}: {out}");
        }
    }
    eprintln!(
        "torn_listed_chunk_rotted_is_rebuilt_from_its_journal: chunk of {} bytes, {} damaged copies, {:.1} s",
        chunk0.len(),
        cases.len(),
        t.elapsed().as_secs_f64()
    );
}

/// The listed chunk rotted and its journal is damaged too, so that it no longer holds all
/// of the chunk's timesteps: nothing can replace the chunk. It stays listed (`wshard
/// verify` reports it), the report says why, and the journal, which still holds intact
/// timesteps of it, is quarantined byte for byte, never removed.
#[test]
fn torn_listed_chunk_rotted_and_journal_damaged_keeps_both() {
    let rec = listed_chunk_with_journal();
    let chunk0 = rec.image.read(&layout().chunk(0)).unwrap();
    let journal0 = rec.image.read(&layout().journal(0)).unwrap();
    let bad_chunk = flipped(&chunk0, &[(chunk0.len() / 2, 0x08)]);
    // A flip in the journal's last record (timesteps 5..8): records before it still
    // verify, the chunk's last three timesteps do not.
    let s = scan(&journal0);
    let last = s.records.last().unwrap();
    let bad_journal = flipped(&journal0, &[(last.end as usize - 3, 0x01)]);
    let fs = with_file(&rec.image, &layout().chunk(0), &bad_chunk);
    let fs = with_file(&fs, &layout().journal(0), &bad_journal);
    let report = recover(&fs, &rec.settings, "both damaged").unwrap();
    let q = quarantined(&fs, &report, JOURNAL_FILE).expect("journal kept");
    assert!(q == bad_journal);
    assert_eq!(report.chunks_rebuilt, 0);
    assert!(
        report
            .discarded
            .iter()
            .any(|d| d.file == CHUNK0 && d.reason.contains("fails verification")),
        "{report:?}"
    );
    assert!(report.lost_data());
    // The chunk is left where it was, listed; the episode goes on with chunk 1.
    assert!(fs.read(&layout().chunk(0)).unwrap() == bad_chunk);
    let m = manifest_of(&fs);
    assert_eq!((m.chunks.len(), m.total_timesteps), (2, 12));
    let (status, out) = verify_status(&fs);
    assert_eq!(status, Status::Corrupt, "{out}");
}
