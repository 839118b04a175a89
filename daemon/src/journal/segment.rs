//! One journal segment: the accepted timesteps of one chunk, written through [`Fs`] and
//! synced by group commit.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use super::format::JournalWriter;
use super::record::{decode_gap, encode_gap, kind, SegmentHeader};
use super::scan::{scan, JournalScan};
use crate::error::StorageError;
use wshard_storage::fsio::{DurableFile, FailStop, Fs};

const WRITE_BUFFER: usize = 1 << 20;

/// An open segment being appended to.
pub(crate) struct JournalSegment {
    path: PathBuf,
    writer: JournalWriter<BufWriter<Box<dyn DurableFile>>>,
    dirty: bool,
}

impl std::fmt::Debug for JournalSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalSegment")
            .field("path", &self.path)
            .field("offset", &self.writer.offset())
            .finish()
    }
}

impl JournalSegment {
    /// Create the segment, write its header, fsync it and its directory (so that the
    /// segment's existence is durable before any DURABLE ack depends on it).
    ///
    /// # Errors
    /// The failing step.
    pub(crate) fn create(
        fs: &dyn Fs,
        path: &Path,
        header: &SegmentHeader,
    ) -> Result<Self, StorageError> {
        let file = fs
            .create_new(path)
            .map_err(|e| StorageError::io("create journal", path, e))?;
        // Dropping the segment after a failure must not write its buffered rest.
        let file = FailStop::wrap(file);
        let mut seg = Self {
            path: path.to_path_buf(),
            writer: JournalWriter::new(BufWriter::with_capacity(WRITE_BUFFER, file), 0),
            dirty: true,
        };
        seg.writer
            .append(&[&header.encode()])
            .map_err(|e| StorageError::io("write journal header", path, e))?;
        seg.sync()?;
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        fs.sync_dir(dir)
            .map_err(|e| StorageError::io("fsync directory", dir, e))?;
        Ok(seg)
    }

    /// The file.
    #[must_use]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True when something was appended since the last sync.
    #[must_use]
    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Append a STEPS record holding `records` (wire-format timestep records).
    ///
    /// # Errors
    /// The write error; the segment must not be used afterwards.
    pub(crate) fn append_steps(&mut self, records: &[u8]) -> Result<(), StorageError> {
        self.writer
            .append(&[&[kind::STEPS], records])
            .map_err(|e| StorageError::io("write journal", &self.path, e))?;
        self.dirty = true;
        Ok(())
    }

    /// Append a GAP record: the seqs `[start, end)` were dropped by the producer; the
    /// next STEPS record starts at seq `end`.
    ///
    /// # Errors
    /// The write error; the segment must not be used afterwards.
    pub(crate) fn append_gap(&mut self, start: u64, end: u64) -> Result<(), StorageError> {
        self.writer
            .append(&[&[kind::GAP], &encode_gap(start, end)])
            .map_err(|e| StorageError::io("write journal", &self.path, e))?;
        self.dirty = true;
        Ok(())
    }

    /// Flush the buffer and `fdatasync`. Never retried by callers after an error.
    ///
    /// # Errors
    /// The failing step.
    pub(crate) fn sync(&mut self) -> Result<(), StorageError> {
        self.writer
            .flush()
            .map_err(|e| StorageError::io("write journal", &self.path, e))?;
        self.writer
            .get_mut()
            .get_mut()
            .sync_data()
            .map_err(|e| StorageError::io("fdatasync journal", &self.path, e))?;
        self.dirty = false;
        Ok(())
    }
}

/// Where the timesteps of one STEPS record lie in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StepsSpan {
    /// Offset of the record's first fragment header.
    pub(crate) offset: u64,
    /// Offset just past its last fragment.
    pub(crate) end: u64,
    /// Where its timestep records start in [`SegmentContents::steps`].
    pub(crate) steps_at: usize,
}

/// A GAP record read back: the seqs `[start, end)` were dropped before the timestep that
/// starts at `steps_at` in [`SegmentContents::steps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GapMark {
    /// Offset of the record in the file.
    pub(crate) offset: u64,
    /// Where the timesteps that follow it start in [`SegmentContents::steps`].
    pub(crate) steps_at: usize,
    /// `[start, end)`.
    pub(crate) range: [u64; 2],
}

/// What a segment holds, as far as it can be read.
#[derive(Debug, Default)]
pub struct SegmentContents {
    pub(crate) header: Option<SegmentHeader>,
    /// Timestep records back to back, in journal order.
    pub(crate) steps: Vec<u8>,
    /// The STEPS records `steps` was taken from, in order: so that timesteps recovery
    /// cannot use can be reported as the file regions that held them.
    pub(crate) spans: Vec<StepsSpan>,
    /// The GAP records, in order.
    pub(crate) gaps: Vec<GapMark>,
    pub scan: JournalScan,
    /// Problems above the framing: a bad header, a STEPS record of the wrong size, ...
    pub problems: Vec<(u64, String)>,
}

/// Decode a segment's bytes.
#[must_use]
pub fn read_segment(bytes: &[u8]) -> SegmentContents {
    let scan = scan(bytes);
    let mut out = SegmentContents::default();
    for rec in &scan.records {
        let Some((&k, body)) = rec.data.split_first() else {
            out.problems.push((rec.offset, "empty record".into()));
            continue;
        };
        match (k, &out.header) {
            (kind::SEGMENT, None) => match SegmentHeader::decode(body) {
                Ok(h) => out.header = Some(h),
                Err(e) => out.problems.push((rec.offset, e.to_string())),
            },
            (kind::SEGMENT, Some(_)) => out
                .problems
                .push((rec.offset, "second segment header ignored".into())),
            (kind::STEPS, Some(h)) => {
                let rec_len =
                    wshard_ingest_proto::RECORD_HEADER_BYTES + h.schema.step_payload_bytes;
                if body.len() % rec_len == 0 {
                    out.spans.push(StepsSpan {
                        offset: rec.offset,
                        end: rec.end,
                        steps_at: out.steps.len(),
                    });
                    out.steps.extend_from_slice(body);
                } else {
                    out.problems.push((
                        rec.offset,
                        format!(
                            "STEPS record of {} bytes is not a multiple of the {rec_len}-byte step",
                            body.len()
                        ),
                    ));
                }
            }
            (kind::STEPS, None) => out
                .problems
                .push((rec.offset, "STEPS record before the segment header".into())),
            (kind::GAP, Some(_)) => match decode_gap(body) {
                Ok(range) => out.gaps.push(GapMark {
                    offset: rec.offset,
                    steps_at: out.steps.len(),
                    range,
                }),
                Err(e) => out.problems.push((rec.offset, e.to_string())),
            },
            (kind::GAP, None) => out
                .problems
                .push((rec.offset, "GAP record before the segment header".into())),
            (other, _) => out
                .problems
                .push((rec.offset, format!("unknown record kind {other}"))),
        }
    }
    out.scan = scan;
    out
}
