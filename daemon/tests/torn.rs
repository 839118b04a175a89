//! Torn and corrupt files ("prove nothing is lost"): a journal segment, a chunk `.partial`
//! and a manifest, each cut at every byte offset (or, for the large journal, at sampled
//! offsets and around every block boundary) and hit by seeded single- and multi-bit flips.
//! After each, recovery runs on a copy of the episode and must never panic, keep exactly
//! the longest valid prefix bit-exact, report what it dropped (file, offset, length,
//! reason), never delete a file that may hold the only copy of data, and never take a
//! damaged file for a good one.
//!
//! The recordings are made by a real [`Session`] over [`SimFs`]; every damaged copy is a
//! power-cut image of it (an exact copy) with one file replaced.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod sim_harness;
mod torn_harness;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use sim_harness::{data_dir, layout, EP};
use torn_harness::{
    batches, check_recovered, flipped, flips_at, journal, manifest_of, multi_block_journal,
    near_boundaries, quarantined, record, recover, with_file, FlipTally, Recording, Rng,
    JOURNAL_FILE,
};
use wshard::manifest::Manifest;
use wshard::read::ShardReader;
use wshard_cli::exit_status::Status;
use wshard_cli::verbs::verify::{self, VerifyOptions};
use wshard_recorder::episode::Durability;
use wshard_recorder::journal::format::BLOCK_LEN;
use wshard_recorder::recovery::{recover_episode, Action};
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::QUARANTINE_DIR;

#[test]
fn torn_journal_small_every_offset() {
    let t = Instant::now();
    let j = journal(&batches(60, 3));
    let len = j.bytes.len();
    assert!(len < BLOCK_LEN && j.records.len() > 25, "{len}");
    for cut in 0..=len {
        j.cut(cut, "small journal");
    }
    eprintln!(
        "torn_journal_small_every_offset: {} records, {len} bytes, {} cuts, {:.1} s",
        j.records.len(),
        len + 1,
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn torn_journal_small_bit_flips() {
    let t = Instant::now();
    let j = journal(&batches(60, 3));
    let len = j.bytes.len();
    let mut rng = Rng(0x70E5);
    let mut tally = FlipTally::default();
    for at in (0..len).step_by(5) {
        for flips in flips_at(at, len, &mut rng) {
            j.flip(&flips, "small journal", &mut tally);
        }
    }
    assert!(tally.header > 0);
    eprintln!(
        "torn_journal_small_bit_flips: {len} bytes, flips at every 5th byte: {tally:?}, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn torn_journal_multi_block_sampled_offsets() {
    let t = Instant::now();
    let j = multi_block_journal();
    let len = j.bytes.len();
    let mut cuts: Vec<usize> = (0..=len).step_by(97).chain(near_boundaries(len)).collect();
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    for &cut in &cuts {
        j.cut(cut, "multi-block journal");
    }
    eprintln!(
        "torn_journal_multi_block_sampled_offsets: {} records, {len} bytes, {} cuts, {:.1} s",
        j.records.len(),
        cuts.len(),
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn torn_journal_multi_block_bit_flips() {
    let t = Instant::now();
    let j = multi_block_journal();
    let len = j.bytes.len();
    let mut rng = Rng(0xB10C);
    let mut offsets: Vec<usize> = (0..len)
        .step_by(211)
        .chain(near_boundaries(len).filter(|&o| o < len).step_by(2))
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    let mut tally = FlipTally::default();
    for &at in &offsets {
        for flips in flips_at(at, len, &mut rng) {
            j.flip(&flips, "multi-block journal", &mut tally);
        }
    }
    assert!(tally.header > 0 && tally.seq_gap > 0, "{tally:?}");
    eprintln!(
        "torn_journal_multi_block_bit_flips: {len} bytes, flips at {} offsets: {tally:?}, {:.1} s",
        offsets.len(),
        t.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------
// Chunk `.partial`
// ---------------------------------------------------------------------------------------

/// Chunk 0 (timesteps 0..8) finalized and listed, timesteps 8..12 in the open chunk (and,
/// for class `ack`, in `journal_0001.wal`); `chunk1` is the file chunk 1 became at CLOSE,
/// so a crash while its `.partial` was written can leave any prefix of it.
struct PartialCase {
    rec: Recording,
    chunk1: Vec<u8>,
    /// End of the header/index reserve: zeros until the writer finalizes.
    reserve: usize,
}

fn partial_case(durability: Durability) -> PartialCase {
    let rec = record(durability, 8, &[5, 5, 2]);
    let m = manifest_of(&rec.image);
    assert_eq!(
        (m.chunks.len(), m.status.as_deref()),
        (1, Some("recording"))
    );
    assert_eq!(
        rec.image.exists(&layout().journal(1)),
        durability == Durability::Ack
    );
    assert!(!rec.image.exists(&layout().partial(1)));
    let chunk1 = rec.closed.read(&layout().chunk(1)).unwrap();
    let reserve = ShardReader::from_bytes(chunk1.clone())
        .unwrap()
        .header()
        .data_section_offset as usize;
    assert!(reserve > 64 && reserve < chunk1.len());
    PartialCase {
        rec,
        chunk1,
        reserve,
    }
}

impl PartialCase {
    /// The forms the `.partial` can have after a crash, with a name: every prefix of the
    /// final file; the file before finalize (reserve still zeros) at every 3rd length; the
    /// full data with the finalizing header write torn at every 3rd byte.
    fn forms(&self, mut each: impl FnMut(&str, &[u8])) -> usize {
        let f = &self.chunk1;
        let r = self.reserve;
        let mut n = 0;
        for l in 0..=f.len() {
            each(&format!("prefix of {l} bytes"), &f[..l]);
            n += 1;
        }
        let mut unfinalized = vec![0u8; r];
        for l in (r..=f.len()).step_by(3).chain([f.len()]) {
            unfinalized.truncate(r);
            unfinalized.extend_from_slice(&f[r..l]);
            each(&format!("reserve zeroed, {l} bytes"), &unfinalized);
            n += 1;
        }
        for h in (0..r).step_by(3) {
            let mut torn = f.clone();
            torn[h..r].fill(0);
            each(&format!("header written up to byte {h}"), &torn);
            n += 1;
        }
        n
    }
}

const PARTIAL_FILE: &str = "ep_chunk_0001.wshard.partial";

#[test]
fn torn_chunk_partial_with_journal_is_rederived() {
    let t = Instant::now();
    let c = partial_case(Durability::Ack);
    let n = c.forms(|what, bytes| {
        let ctx = format!("ack, partial {what}");
        let fs = with_file(&c.rec.image, &layout().partial(1), bytes);
        let report = recover(&fs, &c.rec.settings, &ctx).unwrap();
        assert!(
            report.removed.iter().any(|r| r == PARTIAL_FILE),
            "{ctx}: {report:?}"
        );
        assert!(!report.lost_data(), "{ctx}: {report:?}");
        assert_eq!(report.timesteps_recovered, 4, "{ctx}");
        assert_eq!(check_recovered(&fs, &c.rec.sent, &ctx), 12, "{ctx}");
        // Re-derived from the journal: the very file the live path wrote at CLOSE.
        assert!(
            fs.read(&layout().chunk(1)).unwrap() == c.chunk1,
            "{ctx}: re-derived chunk differs"
        );
    });
    eprintln!(
        "torn_chunk_partial_with_journal_is_rederived: chunk of {} bytes (reserve {}), {n} partial forms, {:.1} s",
        c.chunk1.len(),
        c.reserve,
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn torn_chunk_partial_without_journal_is_quarantined() {
    let t = Instant::now();
    let c = partial_case(Durability::Chunk);
    let n = c.forms(|what, bytes| {
        let ctx = format!("chunk class, partial {what}");
        let fs = with_file(&c.rec.image, &layout().partial(1), bytes);
        let report = recover(&fs, &c.rec.settings, &ctx).unwrap();
        let q = quarantined(&fs, &report, PARTIAL_FILE)
            .unwrap_or_else(|| panic!("{ctx}: partial not quarantined: {report:?}"));
        assert!(q == bytes, "{ctx}: quarantined copy differs");
        assert!(report.lost_data(), "{ctx}");
        assert!(!report.removed.iter().any(|r| r.contains("chunk")), "{ctx}");
        // Never taken for a chunk: the episode is chunk 0, nothing more.
        assert_eq!(check_recovered(&fs, &c.rec.sent, &ctx), 8, "{ctx}");
        assert!(!fs.exists(&layout().chunk(1)), "{ctx}");
        assert!(!fs.exists(&layout().partial(1)), "{ctx}");
        assert!(recover(&fs, &c.rec.settings, &ctx).is_none(), "{ctx}");
    });
    eprintln!(
        "torn_chunk_partial_without_journal_is_quarantined: {n} partial forms, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// Bit rot in a finalized, listed chunk of a `complete` episode: `wshard verify` reports
/// it (naming the block when the flip is inside one; the manifest's SHA-256 catches every
/// flip), and recovery leaves the episode alone: it repairs nothing and vouches for
/// nothing (it does not read listed chunks).
#[test]
fn torn_finalized_chunk_bit_rot_is_found_by_verify() {
    let t = Instant::now();
    let c = partial_case(Durability::Ack);
    let closed = &c.rec.closed;
    assert_eq!(manifest_of(closed).status.as_deref(), Some("complete"));
    let real = tempfile::tempdir().unwrap();
    closed.export_to(&data_dir(), real.path()).unwrap();
    let dir = real.path().join(EP);
    let chunk = dir.join("ep_chunk_0001.wshard");
    let manifest = dir.join("ep_manifest.wshard");
    let reader = ShardReader::from_bytes(c.chunk1.clone()).unwrap();
    let blocks: Vec<(String, u64, u64)> = reader
        .index()
        .names()
        .zip(reader.index().entries())
        .map(|(n, e)| (n.to_owned(), e.data_offset, e.data_offset + e.disk_size))
        .collect();
    let verify = |path: &Path| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = verify::run(
            &[path.to_path_buf()],
            VerifyOptions::default(),
            &mut out,
            &mut err,
        );
        (status, String::from_utf8_lossy(&out).into_owned())
    };
    assert_eq!(verify(&manifest).0, Status::Ok);
    let mut rng = Rng(0xC0DE);
    let (mut in_blocks, mut chunk_alone_corrupt) = (0, 0);
    // Every other byte, and the first and last byte of every block.
    let mut offsets: Vec<usize> = (0..c.chunk1.len()).step_by(2).collect();
    offsets.extend(blocks.iter().flat_map(|b| [b.1 as usize, b.2 as usize - 1]));
    offsets.sort_unstable();
    offsets.dedup();
    for &at in &offsets {
        let flips = vec![(at, 1u8 << rng.below(8))];
        let bad = flipped(&c.chunk1, &flips);
        let ctx = format!("chunk 1 flips {flips:?}");
        std::fs::write(&chunk, &bad).unwrap();
        // One run on the manifest: it follows the chunk, which gets its own line.
        let (status, out) = verify(&manifest);
        assert_eq!(status, Status::Corrupt, "{ctx}: {out}");
        let line = |path: &Path| {
            out.lines()
                .find(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .is_some_and(|p| p.trim_end_matches(':') == path.display().to_string())
                })
                .unwrap_or_else(|| panic!("{ctx}: no line for {}: {out}", path.display()))
        };
        assert!(
            line(&manifest).starts_with("CORRUPT") && line(&manifest).contains("sha256"),
            "{ctx}: {out}"
        );
        let chunk_line = line(&chunk);
        if chunk_line.starts_with("CORRUPT") {
            chunk_alone_corrupt += 1;
        }
        if let Some((name, ..)) = blocks
            .iter()
            .find(|(_, s, e)| (*s..*e).contains(&(at as u64)))
        {
            in_blocks += 1;
            assert!(chunk_line.starts_with("CORRUPT"), "{ctx}: {out}");
            assert!(
                chunk_line.contains(&format!("block `{name}`")),
                "{ctx}: {out}"
            );
        }
        if at % 16 == 0 {
            let fs = with_file(closed, &layout().chunk(1), &bad);
            assert!(recover(&fs, &c.rec.settings, &ctx).is_none(), "{ctx}");
            assert!(fs.read(&layout().chunk(1)).unwrap() == bad, "{ctx}");
        }
    }
    std::fs::write(&chunk, &c.chunk1).unwrap();
    assert_eq!(verify(&manifest).0, Status::Ok);
    eprintln!(
        "torn_finalized_chunk_bit_rot_is_found_by_verify: chunk of {} bytes, {} flips ({in_blocks} inside blocks, {chunk_alone_corrupt} caught by the chunk alone, all by the manifest), {:.1} s",
        c.chunk1.len(),
        offsets.len(),
        t.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------
// Manifest
// ---------------------------------------------------------------------------------------

const MANIFEST_FILE: &str = "ep_manifest.wshard";

/// An unfinished episode: chunks 0 and 1 (timesteps 0..16) finalized and listed by a
/// `recording` manifest, timesteps 16..20 in `journal_0002.wal`.
fn manifest_case() -> (Recording, Vec<u8>) {
    let rec = record(Durability::Ack, 8, &[5, 5, 5, 5]);
    let m = manifest_of(&rec.image);
    assert_eq!(
        (m.chunks.len(), m.status.as_deref()),
        (2, Some("recording"))
    );
    assert!(rec.image.exists(&layout().journal(2)));
    let bytes = rec.image.read(&layout().manifest()).unwrap();
    (rec, bytes)
}

/// Recover a copy whose manifest holds `bad`: nothing lost, whatever the damage.
fn check_manifest_damage(rec: &Recording, good: &[u8], bad: &[u8], ctx: &str) {
    check_manifest_damage_on(&rec.image, rec, good, bad, ctx);
}

/// [`check_manifest_damage`] on a copy of `base` (the recording's image, maybe with more
/// files).
fn check_manifest_damage_on(base: &SimFs, rec: &Recording, good: &[u8], bad: &[u8], ctx: &str) {
    let fs = with_file(base, &layout().manifest(), bad);
    let report = recover(&fs, &rec.settings, ctx).unwrap();
    assert_eq!(
        check_recovered(&fs, &rec.sent, ctx),
        20,
        "{ctx}: {report:?}"
    );
    assert_eq!(report.timesteps_recovered, 4, "{ctx}");
    let adopted: Vec<u64> = report
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::AdoptChunk { chunk_index, .. } => Some(*chunk_index),
            _ => None,
        })
        .collect();
    match quarantined(&fs, &report, MANIFEST_FILE) {
        Some(q) => {
            assert!(q == bad, "{ctx}: quarantined manifest differs");
            assert_eq!(adopted, [0, 1], "{ctx}: {report:?}");
            assert_eq!(report.chunks_recovered, 3, "{ctx}");
            assert!(report.lost_data(), "{ctx}");
            assert_eq!(report.previous_status, None, "{ctx}");
        }
        None => {
            // Still readable: the damage was where no reader looks (padding, reserved
            // header bytes), so the manifest says what it said.
            assert!(bad != good || !report.lost_data(), "{ctx}");
            assert!(adopted.is_empty(), "{ctx}");
            assert_eq!(
                report.previous_status.as_deref(),
                Some("recording"),
                "{ctx}"
            );
        }
    }
    assert!(recover(&fs, &rec.settings, ctx).is_none(), "{ctx}");
}

#[test]
fn torn_manifest_every_offset() {
    let t = Instant::now();
    let (rec, good) = manifest_case();
    for cut in 0..good.len() {
        check_manifest_damage(&rec, &good, &good[..cut], &format!("manifest cut at {cut}"));
    }
    eprintln!(
        "torn_manifest_every_offset: manifest of {} bytes, {} cuts, {:.1} s",
        good.len(),
        good.len(),
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn torn_manifest_bit_flips() {
    let t = Instant::now();
    let (rec, good) = manifest_case();
    let mut rng = Rng(0x3A41);
    let (mut n, mut still_readable) = (0, 0);
    for at in (0..good.len()).step_by(2) {
        let [single, multi] = flips_at(at, good.len(), &mut rng);
        let mut sets = vec![single];
        if at % 6 == 0 {
            sets.push(multi);
        }
        for flips in sets {
            let bad = flipped(&good, &flips);
            if ShardReader::from_bytes(bad.clone())
                .ok()
                .is_some_and(|r| Manifest::read(&r).is_ok())
            {
                still_readable += 1;
            }
            check_manifest_damage(&rec, &good, &bad, &format!("manifest flips {flips:?}"));
            n += 1;
        }
    }
    eprintln!(
        "torn_manifest_bit_flips: {n} flipped copies ({still_readable} still readable), {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// A crash during a manifest commit leaves `ep_manifest.wshard.tmp` (whole, torn or empty)
/// beside the manifest; with the manifest intact, missing, cut or flipped as well, one
/// recovery finishes: the temporary file is removed, nothing is lost, and a second run has
/// nothing to do. (A corrupt manifest beside it used to fail the run: the replacement was
/// committed through that same `.tmp`, and the removal planned for it found nothing.)
#[test]
fn torn_manifest_with_a_stale_tmp() {
    let t = Instant::now();
    let (rec, good) = manifest_case();
    let tmp = layout().dir.join(format!("{MANIFEST_FILE}.tmp"));
    let mut n = 0;
    for (what, stale) in [
        ("whole", &good[..]),
        ("torn", &good[..good.len() / 2]),
        ("empty", &[]),
    ] {
        let base = with_file(&rec.image, &tmp, stale);
        let ctx = format!("{what} tmp, manifest missing");
        let fs = base.power_cut_image(PowerLoss::DropUnsynced);
        fs.remove_file(&layout().manifest()).unwrap();
        fs.sync_dir(&layout().dir).unwrap();
        let report = recover(&fs, &rec.settings, &ctx).unwrap();
        assert_eq!(
            check_recovered(&fs, &rec.sent, &ctx),
            20,
            "{ctx}: {report:?}"
        );
        assert!(!report.lost_data(), "{ctx}: {report:?}");
        assert!(recover(&fs, &rec.settings, &ctx).is_none(), "{ctx}");
        // Intact or cut (at every byte beside a whole `.tmp`, every 7th beside the others),
        // and flipped at every 5th byte.
        let step = if what == "whole" { 1 } else { 7 };
        let cuts = (0..good.len()).step_by(step).chain([good.len()]);
        let flips = (0..good.len()).step_by(5).map(|at| [(at, 1u8 << (at % 8))]);
        let bad = cuts.map(|c| (format!("cut at {c}"), good[..c].to_vec()));
        let bad = bad.chain(flips.map(|f| (format!("flips {f:?}"), flipped(&good, &f))));
        for (how, bytes) in bad {
            let ctx = format!("{what} tmp, manifest {how}");
            check_manifest_damage_on(&base, &rec, &good, &bytes, &ctx);
            n += 1;
        }
    }
    eprintln!(
        "torn_manifest_with_a_stale_tmp: {n} damaged copies, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// The manifest is gone and a finalized chunk has rotted as well: the rebuilt manifest
/// adopts only chunks that verify and continue the episode; the rotted chunk and
/// everything after it (files that no longer continue) are quarantined byte for byte and
/// reported, never listed and never deleted.
#[test]
fn torn_manifest_lost_and_chunk_rotted() {
    let t = Instant::now();
    let (rec, good) = manifest_case();
    let bad_manifest = &good[..good.len() / 2];
    let base = with_file(&rec.image, &layout().manifest(), bad_manifest);
    let mut rng = Rng(0x0707);
    let mut n = 0;
    let (mut adopted, mut refused) = (0, 0);
    for k in 0..2u64 {
        let chunk = rec.image.read(&layout().chunk(k)).unwrap();
        let reader = ShardReader::from_bytes(chunk.clone()).unwrap();
        let index_end = reader.header().data_section_offset as usize;
        let in_block = |at: usize| {
            reader
                .index()
                .entries()
                .iter()
                .any(|e| (e.data_offset..e.data_offset + e.disk_size).contains(&(at as u64)))
        };
        let mut offsets: Vec<usize> = (0..chunk.len()).step_by(13).collect();
        // Every byte of the header, the index entries and the string table.
        offsets.extend(0..index_end);
        offsets.sort_unstable();
        offsets.dedup();
        for at in offsets {
            let flips = vec![(at, 1u8 << rng.below(8))];
            let bad = flipped(&chunk, &flips);
            let ctx = format!("manifest lost, chunk {k} flips {flips:?}");
            let fs = with_file(&base, &layout().chunk(k), &bad);
            let before = fs.files(&layout().dir).unwrap();
            let report = recover(&fs, &rec.settings, &ctx).unwrap();
            let got = check_recovered(&fs, &rec.sent, &ctx);
            // Adopted (then bit-exact, checked above) only when the damage is where
            // nothing is read; a flip inside a block is always caught.
            assert!(
                got == 20 || got == k * 8,
                "{ctx}: {got} timesteps: {report:?}"
            );
            if got == 20 {
                assert!(!in_block(at), "{ctx}: a rotted block was adopted");
                adopted += 1;
            } else {
                refused += 1;
            }
            assert!(report.lost_data(), "{ctx}");
            // Every file that held data is listed, or in quarantine unchanged.
            let listed: Vec<String> = manifest_of(&fs)
                .chunks
                .iter()
                .map(|c| c.uri.clone())
                .collect();
            for (path, bytes) in before {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if listed.contains(&name) || (name.ends_with(".wal") && got == 20) {
                    continue;
                }
                let q = quarantined(&fs, &report, &name).unwrap_or_else(|| {
                    panic!("{ctx}: {name} neither listed nor quarantined: {report:?}")
                });
                assert!(q == bytes, "{ctx}: quarantined {name} differs");
            }
            for p in fs.read_dir(&layout().dir).unwrap() {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    name == MANIFEST_FILE || listed.contains(&name),
                    "{ctx}: {name} left in the episode directory, not listed"
                );
            }
            n += 1;
        }
    }
    eprintln!(
        "torn_manifest_lost_and_chunk_rotted: {n} rotted chunks ({refused} quarantined, {adopted} adopted with the damage outside every block and name), {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// A journal with intact records after a damaged one goes to quarantine; recovery cut at
/// any of its operations and run again still ends with the valid prefix in the episode and
/// the journal, byte for byte, in quarantine (a segment whose chunk is already listed is
/// quarantined, not removed, when it holds unused records).
#[test]
fn torn_journal_quarantine_survives_a_cut_recovery() {
    let t = Instant::now();
    let j = multi_block_journal();
    // A flip in the middle of block 1: records in block 2 are intact but unusable.
    let at = BLOCK_LEN + BLOCK_LEN / 2;
    let flips = [(at, 0x10)];
    let d = j.first_damaged(&flips);
    let (want, _) = j.prefix(d);
    let damaged = flipped(&j.bytes, &flips);
    let image = with_file(&j.rec.image, &layout().journal(0), &damaged);
    let reference = image.power_cut_image(PowerLoss::DropUnsynced);
    let before = reference.ops();
    let report = recover(&reference, &j.rec.settings, "reference").unwrap();
    assert!(quarantined(&reference, &report, JOURNAL_FILE).is_some_and(|q| q == damaged));
    let ops = reference.ops() - before;
    for k in 0..ops {
        let ctx = format!("recovery cut after {k} of {ops} operations");
        let copy = image.power_cut_image(PowerLoss::DropUnsynced);
        copy.crash_after(k);
        let dyn_fs: Arc<dyn Fs> = Arc::new(copy.clone());
        let first = catch_unwind(AssertUnwindSafe(|| {
            recover_episode(&dyn_fs, &data_dir(), EP, &j.rec.settings)
        }));
        assert!(first.is_ok(), "{ctx}: recovery panicked");
        let again = copy.power_cut_image(PowerLoss::DropUnsynced);
        let _ = recover(&again, &j.rec.settings, &ctx);
        assert_eq!(check_recovered(&again, &j.rec.sent, &ctx), want, "{ctx}");
        let kept = again
            .files(&data_dir().join(QUARANTINE_DIR))
            .unwrap_or_default()
            .into_values()
            .any(|b| b == damaged);
        assert!(kept, "{ctx}: the damaged journal is gone");
    }
    eprintln!(
        "torn_journal_quarantine_survives_a_cut_recovery: {ops} cut points, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}
