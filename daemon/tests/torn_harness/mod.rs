//! Shared by the torn-file tests (`torn.rs`, `torn_resync.rs`): a recording made by a
//! real [`Session`] over [`SimFs`], damaged copies of it (each a power-cut image with one
//! file replaced), recovery on them, and the checks of what recovery left: the longest
//! valid prefix bit-exact, every lost byte reported once, nothing that may hold the only
//! copy of data deleted, no damaged file taken for a good one.
#![allow(dead_code)]

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::sim_harness::{data_dir, fresh_sim, layout, records, schema, Client, EP};
use wshard::digest::sha256_hex;
use wshard::episode::Episode;
use wshard::manifest::Manifest;
use wshard::read::ShardReader;
use wshard_ingest_proto::{push_step_record, RECORD_HEADER_BYTES};
use wshard_recorder::episode::Durability;
use wshard_recorder::journal::format::BLOCK_LEN;
use wshard_recorder::journal::scan::scan;
use wshard_recorder::recovery::{recover_episode, RecoveryReport};
use wshard_recorder::session::{FinalStatus, FsyncPolicy, Rotation, Session, SessionSettings};
use wshard_storage::fsio::sim::{OpKind, PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::layout::QUARANTINE_DIR;

/// Payload bytes of one timestep of the harness schema (`state` f32x4 + `cmd` u8x6).
pub const PAYLOAD: usize = 16 + 6;
/// One timestep record as sent and journaled.
pub const REC: usize = RECORD_HEADER_BYTES + PAYLOAD;

// ---------------------------------------------------------------------------------------
// Recording and damaging
// ---------------------------------------------------------------------------------------

pub fn settings(max_ts: u64) -> SessionSettings {
    SessionSettings {
        fsync: FsyncPolicy::Always,
        rotation: Rotation {
            max_timesteps: max_ts,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        queue_frames: 16,
        compression_workers: 1,
        ..SessionSettings::default()
    }
}

/// One recording: the file system as a crash right after the last batch would leave it,
/// and the same file system after a clean CLOSE (every chunk finalized).
pub struct Recording {
    pub image: SimFs,
    pub closed: SimFs,
    pub settings: SessionSettings,
    /// Every timestep record sent, seq 0.., back to back.
    pub sent: Vec<u8>,
}

/// Record `batches` (each becomes one STEPS record: the writer is waited for after each)
/// through a real session, take the power-cut image, then CLOSE.
pub fn record(durability: Durability, max_ts: u64, batches: &[u64]) -> Recording {
    record_on(fresh_sim(), durability, max_ts, batches, true)
}

/// [`record`] on `sim` (faults may be armed). `trim`: remove from the image the journals
/// of listed chunks (whose removal may not be durable yet), so that every damaged copy
/// starts from the same files.
pub fn record_on(
    sim: SimFs,
    durability: Durability,
    max_ts: u64,
    batches: &[u64],
    trim: bool,
) -> Recording {
    let settings = settings(max_ts);
    let client = Arc::new(Client::new(&sim));
    let session = Session::open(
        Arc::new(sim.clone()),
        &data_dir(),
        schema(durability),
        settings.clone(),
        client,
    )
    .unwrap();
    let journaled = durability == Durability::Ack;
    let mut end = 0;
    for &n in batches {
        assert!(session.submit(records(end, n), n));
        end += n;
        let sealed = (end - 1) / max_ts;
        let want = if journaled { end } else { sealed * max_ts };
        let shared = session.shared().clone();
        let t = Instant::now();
        while !(shared.stats.chunks.load(Ordering::SeqCst) >= sealed
            && shared.durable() >= want
            && (!journaled
                || (0..sealed).all(|k| sim.attempts(OpKind::Remove, &layout().journal(k)) > 0)))
        {
            assert!(!shared.is_failed(), "{:?}", shared.failure());
            assert!(t.elapsed() < Duration::from_secs(20), "session stuck");
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let image = sim.power_cut_image(PowerLoss::DropUnsynced);
    // A journal whose chunk is listed may reappear (its removal was not synced yet):
    // make the trim durable so that every damaged copy starts from the same files.
    let listed = if trim {
        manifest_of(&image).chunks.len() as u64
    } else {
        0
    };
    for k in 0..listed {
        let j = layout().journal(k);
        if image.exists(&j) {
            image.remove_file(&j).unwrap();
            image.sync_dir(&layout().dir).unwrap();
        }
    }
    let summary = session.close(FinalStatus::Complete);
    assert_eq!(summary.failure, None);
    assert_eq!(summary.timesteps, end);
    Recording {
        image,
        closed: sim,
        settings,
        sent: records(0, end),
    }
}

/// A copy of `base` with `path` holding exactly `bytes` (durably).
pub fn with_file(base: &SimFs, path: &Path, bytes: &[u8]) -> SimFs {
    let fs = base.power_cut_image(PowerLoss::DropUnsynced);
    let mut f = fs.create(path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs.sync_dir(path.parent().unwrap()).unwrap();
    fs
}

/// Recover `fs`, turning a panic into a failure that names the case.
pub fn recover(fs: &SimFs, settings: &SessionSettings, ctx: &str) -> Option<RecoveryReport> {
    let dyn_fs: Arc<dyn Fs> = Arc::new(fs.clone());
    match catch_unwind(AssertUnwindSafe(|| {
        recover_episode(&dyn_fs, &data_dir(), EP, settings)
    })) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => panic!("{ctx}: recovery failed: {e}"),
        Err(_) => panic!("{ctx}: recovery panicked"),
    }
}

/// A small deterministic generator for flip positions and bits.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The flips tried at offset `at` of a file of `len` bytes: one single-bit flip, and one
/// of 2..=8 bits spread over up to 16 bytes from `at`. Each is (byte, mask) pairs.
pub fn flips_at(at: usize, len: usize, rng: &mut Rng) -> [Vec<(usize, u8)>; 2] {
    let single = vec![(at, 1u8 << rng.below(8))];
    let n = 2 + rng.below(7);
    let window = (len - at).min(16);
    let mut multi: Vec<(usize, u8)> = Vec::new();
    for _ in 0..n {
        let p = at + rng.below(window);
        let bit = 1u8 << rng.below(8);
        match multi.iter_mut().find(|(q, _)| *q == p) {
            Some((_, m)) => *m |= bit,
            None => multi.push((p, bit)),
        }
    }
    multi.retain(|&(_, m)| m != 0);
    if multi.is_empty() {
        multi.push((at, 0x81));
    }
    [single, multi]
}

pub fn flipped(bytes: &[u8], flips: &[(usize, u8)]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for &(p, m) in flips {
        out[p] ^= m;
    }
    out
}

// ---------------------------------------------------------------------------------------
// Checking what recovery left
// ---------------------------------------------------------------------------------------

pub fn manifest_of(fs: &SimFs) -> Manifest {
    let bytes = fs.read(&layout().manifest()).unwrap();
    Manifest::read(&ShardReader::from_bytes(bytes).unwrap()).unwrap()
}

/// The wire records of `ep`'s timesteps, numbered from `first`.
pub fn wire_records(ep: &Episode, first: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(ts) = ep.timestamps_ns.as_deref() else {
        return Vec::new(); // never what was sent: a chunk without its timestamps
    };
    let n = ep.length as usize;
    for (i, ((&t, &reward), &done)) in ts.iter().zip(&ep.reward).zip(&ep.done).enumerate() {
        let mut payload = Vec::with_capacity(PAYLOAD);
        for ch in &ep.channels {
            let w = ch.data.len() / n;
            payload.extend_from_slice(&ch.data[i * w..(i + 1) * w]);
        }
        push_step_record(&mut out, first + i as u64, t, reward, done, &[&payload]);
    }
    out
}

/// After a recovery: the manifest is `recovered` and continuous, every listed chunk has
/// its SHA-256 and holds exactly the records that were sent for its timesteps, and nothing
/// half-done is left in the episode directory. Returns the number of timesteps.
pub fn check_recovered(fs: &SimFs, sent: &[u8], ctx: &str) -> u64 {
    let m = manifest_of(fs);
    assert_eq!(m.status.as_deref(), Some("recovered"), "{ctx}");
    m.validate_continuity()
        .unwrap_or_else(|e| panic!("{ctx}: manifest not continuous: {e}"));
    for c in &m.chunks {
        let bytes = fs.read(&layout().dir.join(&c.uri)).unwrap();
        assert_eq!(
            sha256_hex(&bytes),
            c.sha256,
            "{ctx}: chunk {}",
            c.chunk_index
        );
        let ep = Episode::from_bytes(bytes)
            .unwrap_or_else(|e| panic!("{ctx}: chunk {} unreadable: {e}", c.chunk_index));
        assert_eq!(ep.length, c.length_t, "{ctx}");
        let from = c.timestep_range[0] as usize * REC;
        let want = &sent[from..from + c.length_t as usize * REC];
        assert!(
            wire_records(&ep, c.timestep_range[0]) == want,
            "{ctx}: chunk {} does not hold exactly the timesteps sent",
            c.chunk_index
        );
    }
    for p in fs.read_dir(&layout().dir).unwrap() {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !(name.ends_with(".partial") || name.ends_with(".wal") || name.ends_with(".tmp")),
            "{ctx}: {name} left after recovery"
        );
    }
    m.total_timesteps
}

/// The bytes of the quarantined copy of `name`, if recovery quarantined it.
pub fn quarantined(fs: &SimFs, report: &RecoveryReport, name: &str) -> Option<Vec<u8>> {
    let q = report.quarantined.iter().find(|q| {
        Path::new(q)
            .file_name()
            .is_some_and(|f| f.to_string_lossy().starts_with(name))
    })?;
    let path = PathBuf::from(q);
    assert!(
        path.starts_with(data_dir().join(QUARANTINE_DIR)),
        "{q} is not in the quarantine directory"
    );
    Some(
        fs.read(&path)
            .unwrap_or_else(|e| panic!("quarantined {q} is gone: {e}")),
    )
}

/// Every non-zero byte of `bytes[from..to]` lies in a region the report discarded for
/// `file`; and no such region reaches before `from` (the valid prefix) or past `to`.
pub fn assert_covered(report: &RecoveryReport, file: &str, bytes: &[u8], from: u64, ctx: &str) {
    let to = bytes.len() as u64;
    let mut regions: Vec<(u64, u64)> = report
        .discarded
        .iter()
        .filter(|d| d.file == file)
        .map(|d| (d.offset, d.offset + d.len))
        .collect();
    for d in report.discarded.iter().filter(|d| d.file == file) {
        assert!(
            d.offset >= from && d.offset + d.len <= to,
            "{ctx}: discarded region {d:?} outside the lost range {from}..{to}"
        );
        assert!(!d.reason.is_empty(), "{ctx}: {d:?} without a reason");
    }
    regions.sort_unstable();
    // Regions of length 0 are notes (an intact record that could not be used).
    regions.retain(|r| r.1 > r.0);
    for w in regions.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "{ctx}: discarded regions overlap (bytes counted twice): {:?}",
            report.discarded
        );
    }
    let mut at = from;
    for (s, e) in regions.into_iter().chain([(to, to)]) {
        if s > at {
            let gap = &bytes[at as usize..s as usize];
            if let Some(i) = gap.iter().position(|&b| b != 0) {
                panic!(
                    "{ctx}: byte {} of {file} was lost but no discarded region covers it: {:?}",
                    at as usize + i,
                    report.discarded
                );
            }
        }
        at = at.max(e);
    }
}

// ---------------------------------------------------------------------------------------
// Journal
// ---------------------------------------------------------------------------------------

/// A journal segment as written, with its records from the scan of the intact file.
pub struct Journal {
    pub rec: Recording,
    pub bytes: Vec<u8>,
    /// (offset, end, timesteps) of every record; record 0 is the segment header.
    pub records: Vec<(u64, u64, u64)>,
}

pub const JOURNAL_FILE: &str = "journal_0000.wal";

pub fn journal(batches: &[u64]) -> Journal {
    let rec = record(Durability::Ack, 1 << 40, batches);
    let bytes = rec.image.read(&layout().journal(0)).unwrap();
    let s = scan(&bytes);
    assert!(s.corruptions.is_empty());
    assert_eq!(s.valid_end, bytes.len() as u64);
    assert_eq!(
        s.records.len(),
        batches.len() + 1,
        "one STEPS record per batch"
    );
    let records = s
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let steps = if i == 0 {
                0
            } else {
                ((r.data.len() - 1) / REC) as u64
            };
            (r.offset, r.end, steps)
        })
        .collect();
    Journal {
        rec,
        bytes,
        records,
    }
}

impl Journal {
    /// Timesteps in, and end of, the records before record `d` (all when `d` is past the
    /// end); none when the header is not among them.
    pub fn prefix(&self, d: usize) -> (u64, u64) {
        if d == 0 {
            return (0, 0);
        }
        let kept = &self.records[..d.min(self.records.len())];
        (
            kept.iter().map(|r| r.2).sum(),
            kept.last().map_or(0, |r| r.1),
        )
    }

    /// Recover a copy whose journal holds `damaged`, where everything from record `d` on
    /// is lost (by a cut or damage), and check the outcome. `untouched`: some record after
    /// record `d` is intact, byte for byte, so the journal must be kept.
    pub fn check(&self, damaged: &[u8], d: usize, untouched: bool, ctx: &str) -> RecoveryReport {
        let path = layout().journal(0);
        let fs = with_file(&self.rec.image, &path, damaged);
        let report = recover(&fs, &self.rec.settings, ctx).unwrap();
        let (want, valid_end) = self.prefix(d);
        let got = check_recovered(&fs, &self.rec.sent, ctx);
        assert_eq!(got, want, "{ctx}: longest valid prefix");
        assert_eq!(report.timesteps_recovered, want, "{ctx}");
        assert_covered(&report, JOURNAL_FILE, damaged, valid_end, ctx);
        let lost = damaged[valid_end as usize..].iter().any(|&b| b != 0);
        assert_eq!(report.lost_data(), lost, "{ctx}: {report:?}");
        if d == 0 && lost {
            assert!(
                report
                    .discarded
                    .iter()
                    .any(|r| r.reason == "no readable segment header"),
                "{ctx}: {report:?}"
            );
        }
        assert!(!fs.exists(&path), "{ctx}: journal left");
        // The journal is removed only when nothing intact was left unused in it; else it
        // is in quarantine, byte for byte.
        let intact_unused = scan(damaged).records.iter().any(|r| r.offset >= valid_end);
        match quarantined(&fs, &report, JOURNAL_FILE) {
            Some(q) => assert!(q == damaged, "{ctx}: quarantined journal differs"),
            None => {
                assert!(
                    !intact_unused && !untouched && (d > 0 || !lost),
                    "{ctx}: journal holding unused data removed: {report:?}"
                );
                assert!(report.removed.iter().any(|r| r == JOURNAL_FILE), "{ctx}");
            }
        }
        let again = recover(&fs, &self.rec.settings, ctx);
        assert!(again.is_none(), "{ctx}: second recovery: {again:?}");
        report
    }

    /// Index of the first record `flips` touch (`records.len()` when none: padding only).
    pub fn first_damaged(&self, flips: &[(usize, u8)]) -> usize {
        flips
            .iter()
            .filter_map(|&(p, _)| {
                self.records
                    .iter()
                    .position(|r| r.0 <= p as u64 && (p as u64) < r.1)
            })
            .min()
            .unwrap_or(self.records.len())
    }

    /// True when a record after record `d` holds no flipped byte.
    pub fn untouched_after(&self, d: usize, flips: &[(usize, u8)]) -> bool {
        self.records.iter().skip(d + 1).any(|r| {
            !flips
                .iter()
                .any(|&(p, _)| r.0 <= p as u64 && (p as u64) < r.1)
        })
    }

    pub fn cut(&self, cut: usize, name: &str) {
        let d = self
            .records
            .iter()
            .take_while(|r| r.1 <= cut as u64)
            .count();
        self.check(
            &self.bytes[..cut],
            d,
            false,
            &format!("{name}: cut at {cut}"),
        );
    }

    pub fn flip(&self, flips: &[(usize, u8)], name: &str, tally: &mut FlipTally) {
        let d = self.first_damaged(flips);
        let damaged = flipped(&self.bytes, flips);
        let untouched = self.untouched_after(d, flips);
        let report = self.check(&damaged, d, untouched, &format!("{name}: flips {flips:?}"));
        tally.copies += 1;
        if d == 0 {
            tally.header += 1;
        } else if d == self.records.len() {
            tally.harmless += 1;
        }
        if report
            .discarded
            .iter()
            .any(|r| r.reason.contains("was expected"))
        {
            tally.seq_gap += 1;
        }
        if report.quarantined.iter().any(|q| q.ends_with(JOURNAL_FILE)) {
            tally.quarantined += 1;
        }
    }
}

/// What the flipped copies of a journal came to.
#[derive(Debug, Default)]
pub struct FlipTally {
    pub copies: u64,
    /// The segment header was hit: nothing recovered, the whole segment quarantined.
    pub header: u64,
    /// Only zero padding was hit: everything recovered.
    pub harmless: u64,
    /// Intact records after the damage were dropped at the seq gap (reported by offset).
    pub seq_gap: u64,
    /// The journal went to quarantine (header damaged, or intact records unused).
    pub quarantined: u64,
}

/// Batch sizes 1, 2, 3, 1, 2, 3, ... summing to at least `steps`.
pub fn batches(steps: u64, max: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < steps {
        let n = 1 + (i * 7) % max;
        out.push(n);
        total += n;
        i += 1;
    }
    out
}

/// About 2.5 journal blocks: records of 1..=40 timesteps (43..1 720 bytes), many of them
/// split across a block boundary (FIRST/LAST fragments).
pub fn multi_block_journal() -> Journal {
    let j = journal(&batches(1_900, 40));
    let len = j.bytes.len();
    assert!(len > 2 * BLOCK_LEN && len < 3 * BLOCK_LEN, "{len}");
    let split = j
        .records
        .iter()
        .filter(|r| r.0 / BLOCK_LEN as u64 != (r.1 - 1) / BLOCK_LEN as u64)
        .count();
    assert!(split >= 2, "records crossing a block boundary: {split}");
    j
}

/// Offsets within 8 bytes of every block boundary inside `len`.
pub fn near_boundaries(len: usize) -> impl Iterator<Item = usize> {
    (1..=len / BLOCK_LEN)
        .flat_map(|b| (b * BLOCK_LEN - 8)..=(b * BLOCK_LEN + 8))
        .filter(move |&o| o <= len)
}
