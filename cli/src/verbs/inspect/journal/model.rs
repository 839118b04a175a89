//! `wshard inspect --peek FILE.wal`: what a journal segment holds, record by record, like
//! `wunderbar --peek` for `.wandb` logs. Every logical record with its offsets and kind
//! (SEGMENT with the schema it declares, STEPS with its timesteps and seq range), and every
//! region the framing could not use, with the 32 KiB block it lies in.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use wshard::consts::MAGIC;

use wshard_ingest_proto::{iter_records, RECORD_HEADER_BYTES};
use wshard_recorder::journal::format::BLOCK_LEN;
use wshard_recorder::journal::record::{kind, SegmentHeader};
use wshard_recorder::journal::scan::{scan, Corruption};
use wshard_recorder::journal::segment::read_segment;

/// What one logical record is.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordKind {
    /// The segment header; `None` when it does not decode (see the record's problem).
    Segment(Option<Box<SegmentHeader>>),
    /// Timestep records; counted only once a segment header gave the step size.
    Steps {
        timesteps: Option<u64>,
        /// First and last `seq`.
        seq: Option<(u64, u64)>,
        /// False when the seqs do not follow each other by one.
        contiguous: bool,
    },
    /// A record with no kind byte.
    Empty,
    /// A kind byte this version does not know.
    Unknown(u8),
}

impl RecordKind {
    /// `SEGMENT`, `STEPS`, `EMPTY`, `UNKNOWN`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Segment(_) => "SEGMENT",
            Self::Steps { .. } => "STEPS",
            Self::Empty => "EMPTY",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
}

/// One logical record.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordRow {
    pub offset: u64,
    pub end: u64,
    /// Bytes of the logical record (kind byte included), without fragment headers.
    pub length: u64,
    pub kind: RecordKind,
    /// A SEGMENT record's JSON, as written (for `--verbose`).
    pub header_json: Option<Value>,
}

/// Everything `wshard inspect --peek` shows about a journal.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalPeek {
    pub path: PathBuf,
    pub file_len: u64,
    pub records: Vec<RecordRow>,
    /// Regions the framing could not use.
    pub corrupt: Vec<Corruption>,
    /// Problems above the framing (bad header, STEPS of the wrong size, ...), by offset.
    pub problems: Vec<(u64, String)>,
    /// End of the last complete record.
    pub valid_end: u64,
}

impl JournalPeek {
    /// Scan a journal's bytes.
    #[must_use]
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Self {
        let seg = read_segment(bytes);
        let mut header: Option<SegmentHeader> = None;
        let records = seg
            .scan
            .records
            .iter()
            .map(|rec| {
                let (kind, header_json) = match rec.data.split_first() {
                    None => (RecordKind::Empty, None),
                    Some((&kind::SEGMENT, body)) => {
                        let decoded = SegmentHeader::decode(body).ok();
                        if header.is_none() {
                            header.clone_from(&decoded);
                        }
                        (
                            RecordKind::Segment(decoded.map(Box::new)),
                            serde_json::from_slice(body).ok(),
                        )
                    }
                    Some((&kind::STEPS, body)) => (steps_kind(header.as_ref(), body), None),
                    Some((&other, _)) => (RecordKind::Unknown(other), None),
                };
                RecordRow {
                    offset: rec.offset,
                    end: rec.end,
                    length: rec.data.len() as u64,
                    kind,
                    header_json,
                }
            })
            .collect();
        Self {
            path: path.to_path_buf(),
            file_len: bytes.len() as u64,
            records,
            corrupt: seg.scan.corruptions,
            problems: seg.problems,
            valid_end: seg.scan.valid_end,
        }
    }

    /// True when every byte was usable and every record made sense.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.corrupt.is_empty() && self.problems.is_empty() && self.header().is_some()
    }

    /// The segment header (the first SEGMENT record that decodes).
    #[must_use]
    pub fn header(&self) -> Option<&SegmentHeader> {
        self.records.iter().find_map(|r| match &r.kind {
            RecordKind::Segment(Some(h)) => Some(h.as_ref()),
            _ => None,
        })
    }

    /// Timesteps in all STEPS records that could be counted.
    #[must_use]
    pub fn timesteps(&self) -> u64 {
        self.records
            .iter()
            .filter_map(|r| match r.kind {
                RecordKind::Steps { timesteps, .. } => timesteps,
                _ => None,
            })
            .sum()
    }

    /// Bytes discarded by the framing.
    #[must_use]
    pub fn discarded_bytes(&self) -> u64 {
        self.corrupt.iter().map(|c| c.len).sum()
    }
}

/// The 32 KiB journal block an offset lies in.
#[must_use]
pub fn block_of(offset: u64) -> u64 {
    offset / BLOCK_LEN as u64
}

fn steps_kind(header: Option<&SegmentHeader>, body: &[u8]) -> RecordKind {
    let Some(h) = header else {
        return RecordKind::Steps {
            timesteps: None,
            seq: None,
            contiguous: true,
        };
    };
    let rec_len = RECORD_HEADER_BYTES + h.schema.step_payload_bytes;
    if body.len() % rec_len != 0 {
        return RecordKind::Steps {
            timesteps: None,
            seq: None,
            contiguous: true,
        };
    }
    let mut first = None;
    let mut last = None;
    let mut contiguous = true;
    for s in iter_records(body, h.schema.step_payload_bytes) {
        if let Some(prev) = last {
            contiguous &= s.seq == prev + 1;
        }
        first.get_or_insert(s.seq);
        last = Some(s.seq);
    }
    RecordKind::Steps {
        timesteps: Some((body.len() / rec_len) as u64),
        seq: first.zip(last),
        contiguous,
    }
}

/// Whether `path` should be shown as a journal: a shard (SHRD magic) never is; with
/// `peek`, or a `.wal` name, anything else is; otherwise only a file whose bytes scan to
/// at least one journal record. Unreadable files are left to the shard view to report.
#[must_use]
pub fn is_journal(path: &Path, peek: bool) -> bool {
    let mut magic = [0u8; 4];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    if f.read_exact(&mut magic).is_ok() && magic == MAGIC {
        return false;
    }
    if peek || path.extension().is_some_and(|e| e == "wal") {
        return true;
    }
    std::fs::read(path).is_ok_and(|b| !scan(&b).records.is_empty())
}

/// How `wshard inspect --peek` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeekOptions {
    /// Also print each segment header's JSON.
    pub verbose: bool,
    /// One JSON object instead of text.
    pub json: bool,
}
