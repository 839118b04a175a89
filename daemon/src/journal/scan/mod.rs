//! Reading a journal back ([`scan`]): every record whose fragments verify, and every
//! region that could not be used, with why.
//!
//! Damage costs only what it touches. A fragment that does not verify (bad CRC, impossible
//! kind or length, torn at the end of the file), zeros where a header should be, or a
//! fragment out of sequence is reported, and reading resumes at the next record start in
//! the same block (`super::resync`), or else at the next block. Besides the records and
//! the regions, the scan says where the file first stopped reading as the writer wrote it
//! ([`JournalScan::first_damage`]) and where the last fragment that verified ends
//! (`JournalScan::intact_end`): when the latter is past the former, intact bytes follow
//! the damage, which is what tells a torn tail (nothing intact after it) from damage in
//! the middle of the file.

use super::format::{block_end, fragment_crc, kind, FragmentHeader, HEADER_LEN};
use super::resync::next_record_start;

/// One logical record found by the reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalRecord {
    /// Offset of the record's first fragment header.
    pub offset: u64,
    /// Offset just past its last fragment.
    pub end: u64,
    pub data: Vec<u8>,
}

/// A region the reader could not use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// Everything a scan of a journal found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalScan {
    pub records: Vec<JournalRecord>,
    pub corruptions: Vec<Corruption>,
    /// End of the last complete record: where a writer may continue.
    pub valid_end: u64,
    /// Bytes scanned.
    pub len: u64,
    /// Where the file first stops reading as the writer wrote it: the first fragment that
    /// does not verify, zeros where a header should be, or the fragment at which a record
    /// turned out to be missing a piece. `None` for a file that reads cleanly to its end
    /// (a record cut by the end of the file is not damage: it is how a torn append ends).
    pub first_damage: Option<u64>,
    /// End of the last fragment whose CRC32C verified, whatever it belongs to (a complete
    /// record, a record missing a piece, a continuation without its start).
    pub(crate) intact_end: u64,
}

impl JournalScan {
    /// Total bytes discarded.
    #[must_use]
    pub fn discarded_bytes(&self) -> u64 {
        self.corruptions.iter().map(|c| c.len).sum()
    }

    /// True when a fragment that verifies lies after the first damage: the damage is not
    /// a torn tail, and bytes after it are intact.
    #[must_use]
    pub fn intact_after_damage(&self) -> bool {
        self.first_damage.is_some_and(|d| self.intact_end > d)
    }
}

/// The state of one scan.
struct Scanner<'a> {
    bytes: &'a [u8],
    out: JournalScan,
    /// A record whose FIRST (and MIDDLE) fragments were read: its offset and bytes so far.
    pending: Option<(u64, Vec<u8>)>,
}

impl Scanner<'_> {
    fn damage(&mut self, at: usize) {
        if self.out.first_damage.is_none() {
            self.out.first_damage = Some(at as u64);
        }
    }

    fn corrupt(&mut self, offset: usize, end: usize, reason: String) {
        self.out.corruptions.push(Corruption {
            offset: offset as u64,
            len: (end - offset) as u64,
            reason,
        });
    }

    /// Report the record in progress, if any, as lost up to `at`.
    fn drop_pending(&mut self, at: usize, why: &str) {
        if let Some((start, data)) = self.pending.take() {
            self.out.corruptions.push(Corruption {
                offset: start,
                len: at as u64 - start,
                reason: format!("record of {} bytes so far, {why}", data.len()),
            });
        }
    }

    /// A fragment at `pos` that cannot be used. Drops the record in progress, reports the
    /// region up to the next record start in the block (or the block's end) and returns
    /// where to go on.
    fn bad(&mut self, pos: usize, reason: String) -> usize {
        self.drop_pending(pos, "dropped with a corrupt fragment after it");
        self.damage(pos);
        let end = block_end(pos).min(self.bytes.len());
        match next_record_start(self.bytes, pos) {
            Some(next) => {
                self.corrupt(
                    pos,
                    next,
                    format!("{reason}; the next record starts at offset {next}"),
                );
                next
            }
            None => {
                self.corrupt(pos, end, reason);
                end
            }
        }
    }

    /// Zeros where a header should be at `pos`: the rest of the block was never written,
    /// unless non-zero bytes follow in it.
    fn zeros(&mut self, pos: usize) -> usize {
        // The writer never leaves zeros inside a record, so a record in progress lost its
        // next fragment (a page that never reached the disk): joining what follows to it
        // would report bytes that were never written together.
        self.drop_pending(pos, "followed by zero-filled space");
        self.damage(pos);
        let end = block_end(pos).min(self.bytes.len());
        if self.bytes[pos..end].iter().all(|&b| b == 0) {
            return block_end(pos);
        }
        match next_record_start(self.bytes, pos) {
            Some(next) => {
                if self.bytes[pos..next].iter().any(|&b| b != 0) {
                    self.corrupt(
                        pos,
                        next,
                        format!(
                            "non-zero bytes after a zero fragment header; the next record starts at offset {next}"
                        ),
                    );
                }
                next
            }
            None => {
                self.corrupt(
                    pos,
                    end,
                    "non-zero bytes after a zero fragment header".into(),
                );
                end
            }
        }
    }

    /// A verified fragment of `kind` at `pos` with `data`, ending at `next`.
    fn fragment(&mut self, pos: usize, k: u8, data: &[u8], next: usize) {
        self.out.intact_end = next as u64;
        match k {
            kind::FULL | kind::FIRST => {
                if self.pending.is_some() {
                    self.damage(pos);
                    self.drop_pending(pos, "not finished before a new record");
                }
                if k == kind::FULL {
                    self.out.records.push(JournalRecord {
                        offset: pos as u64,
                        end: next as u64,
                        data: data.to_vec(),
                    });
                    self.out.valid_end = next as u64;
                } else {
                    self.pending = Some((pos as u64, data.to_vec()));
                }
            }
            _ => match self.pending.as_mut() {
                Some((_, buf)) => {
                    buf.extend_from_slice(data);
                    if k == kind::LAST {
                        if let Some((start, data)) = self.pending.take() {
                            self.out.records.push(JournalRecord {
                                offset: start,
                                end: next as u64,
                                data,
                            });
                            self.out.valid_end = next as u64;
                        }
                    }
                }
                None => {
                    self.damage(pos);
                    self.corrupt(
                        pos,
                        next,
                        "continuation fragment without a first fragment".into(),
                    );
                }
            },
        }
    }

    /// Read the fragment at `pos`; returns where to go on, `None` at the end of the file.
    fn step(&mut self, pos: usize) -> Option<usize> {
        let len = self.bytes.len();
        let block_end = block_end(pos);
        if block_end - pos < HEADER_LEN {
            // Block trailer: zeros, nothing to read.
            return Some(block_end);
        }
        let Some(h) = FragmentHeader::read(self.bytes, pos) else {
            if self.bytes[pos..].iter().any(|&b| b != 0) {
                self.drop_pending(pos, "cut by the end of the file");
                self.damage(pos);
                self.corrupt(
                    pos,
                    len,
                    "torn fragment header at the end of the file".into(),
                );
            }
            return None;
        };
        if h.is_zero() {
            return Some(self.zeros(pos));
        }
        let end = pos + HEADER_LEN + h.len;
        if h.kind == kind::ZERO || h.kind > kind::LAST {
            // Kind 0 is only ever padding, with a header of zeros.
            return Some(self.bad(pos, format!("unknown fragment kind {}", h.kind)));
        }
        if end > block_end {
            return Some(self.bad(
                pos,
                format!("fragment length {} crosses the block boundary", h.len),
            ));
        }
        if matches!(h.kind, kind::FIRST | kind::MIDDLE) && end != block_end {
            return Some(self.bad(
                pos,
                format!(
                    "fragment of kind {} ends at offset {end}, inside its block",
                    h.kind
                ),
            ));
        }
        if end > len {
            // A torn append, or a length that was damaged with records after it: look for
            // them before calling it the end.
            let reason = format!(
                "torn fragment at the end of the file: header says {} bytes, {} present",
                h.len,
                len - pos - HEADER_LEN
            );
            if next_record_start(self.bytes, pos).is_some() {
                return Some(self.bad(pos, reason));
            }
            self.drop_pending(pos, "cut by the end of the file");
            self.damage(pos);
            self.corrupt(pos, len, reason);
            return None;
        }
        let data = &self.bytes[pos + HEADER_LEN..end];
        let computed = fragment_crc(h.kind, data);
        if computed != h.crc {
            return Some(self.bad(
                pos,
                format!(
                    "fragment crc32c stored {:#010x}, computed {computed:#010x}",
                    h.crc
                ),
            ));
        }
        self.fragment(pos, h.kind, data, end);
        Some(end)
    }
}

/// Scan a whole journal. Never panics, whatever the bytes.
#[must_use]
pub fn scan(bytes: &[u8]) -> JournalScan {
    let mut s = Scanner {
        bytes,
        out: JournalScan {
            len: bytes.len() as u64,
            ..JournalScan::default()
        },
        pending: None,
    };
    let mut pos = 0usize;
    while pos < bytes.len() {
        match s.step(pos) {
            Some(next) => pos = next,
            None => break,
        }
    }
    s.drop_pending(bytes.len(), "cut by the end of the file");
    s.out
}

#[cfg(test)]
mod tests;
