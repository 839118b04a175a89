//! Same bytes for the same episode: the `mcap` crate (0.24) writes the summary section's
//! Schema and Channel records in hash-map order, which changes from run to run. After the
//! file is finished, [`sort_summary`] puts each run of Schema records and each run of Channel
//! records in id order, in place (the groups keep their offsets and lengths, so the summary
//! offsets stay true), and recomputes the footer's summary CRC.
//!
//! Layout used (MCAP spec): a record is opcode u8, length u64 LE, body; the file ends with
//! the Footer record (opcode 0x02, length 20: summary_start u64, summary_offset_start u64,
//! summary_crc u32) and the 8-byte magic. The summary CRC covers the summary section and the
//! footer up to (not including) the CRC field. Schema and Channel bodies start with their id
//! (u16 LE).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Length of the magic at the end of the file.
const MAGIC_LEN: u64 = 8;
/// Opcode of a Footer record.
const OP_FOOTER: u8 = 0x02;
/// Opcode of a Schema record.
const OP_SCHEMA: u8 = 0x03;
/// Opcode of a Channel record.
const OP_CHANNEL: u8 = 0x04;
/// Opcode and length of a record.
const RECORD_HEAD: usize = 9;
/// Footer body: summary_start, summary_offset_start, summary_crc.
const FOOTER_BODY: usize = 20;
/// Footer bytes the summary CRC covers (opcode, length, two offsets).
const FOOTER_CRC_COVERED: usize = RECORD_HEAD + 16;
const FOOTER_LEN: usize = RECORD_HEAD + FOOTER_BODY;

fn bad(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
}

/// `(opcode, start, end)` of each record in `b`.
fn records(b: &[u8]) -> io::Result<Vec<(u8, usize, usize)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let op = b[pos];
        let len = u64_at(b, pos + 1)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| bad("summary record header cut short"))?;
        let end = (pos + RECORD_HEAD)
            .checked_add(len)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| bad("summary record longer than the summary"))?;
        out.push((op, pos, end));
        pos = end;
    }
    Ok(out)
}

/// The record's id (its body's first two bytes).
fn id(b: &[u8], start: usize) -> u16 {
    let at = start + RECORD_HEAD;
    u16::from_le_bytes([
        b.get(at).copied().unwrap_or(0),
        b.get(at + 1).copied().unwrap_or(0),
    ])
}

/// `summary` with every run of Schema records and of Channel records sorted by id.
fn sorted(summary: &[u8]) -> io::Result<Vec<u8>> {
    let recs = records(summary)?;
    let mut out = Vec::with_capacity(summary.len());
    let mut i = 0;
    while i < recs.len() {
        let op = recs[i].0;
        let mut j = i + 1;
        if op == OP_SCHEMA || op == OP_CHANNEL {
            while j < recs.len() && recs[j].0 == op {
                j += 1;
            }
        }
        let mut run: Vec<(u8, usize, usize)> = recs[i..j].to_vec();
        run.sort_by_key(|&(_, start, _)| id(summary, start));
        for (_, start, end) in run {
            out.extend_from_slice(&summary[start..end]);
        }
        i = j;
    }
    Ok(out)
}

/// Sort the summary's Schema and Channel records of the finished MCAP file `f` by id.
///
/// # Errors
/// The I/O error, or `InvalidData` when the file does not end in a footer and magic.
pub(crate) fn sort_summary(f: &mut File) -> io::Result<()> {
    let len = f.seek(SeekFrom::End(0))?;
    let footer_at = len
        .checked_sub(MAGIC_LEN + FOOTER_LEN as u64)
        .ok_or_else(|| bad("file shorter than a footer"))?;
    let mut footer = [0u8; FOOTER_LEN];
    f.seek(SeekFrom::Start(footer_at))?;
    f.read_exact(&mut footer)?;
    if footer[0] != OP_FOOTER || u64_at(&footer, 1) != Some(FOOTER_BODY as u64) {
        return Err(bad("no footer record before the closing magic"));
    }
    let summary_start = u64_at(&footer, RECORD_HEAD).unwrap_or(0);
    if summary_start == 0 {
        return Ok(());
    }
    if summary_start > footer_at {
        return Err(bad("summary start past the footer"));
    }
    let summary_len = usize::try_from(footer_at - summary_start)
        .map_err(|_| bad("summary larger than memory"))?;
    let mut summary = vec![0u8; summary_len];
    f.seek(SeekFrom::Start(summary_start))?;
    f.read_exact(&mut summary)?;
    let summary = sorted(&summary)?;
    let old_crc = footer
        .get(FOOTER_CRC_COVERED..)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes);
    f.seek(SeekFrom::Start(summary_start))?;
    f.write_all(&summary)?;
    if old_crc != 0 {
        let mut h = crc32fast::Hasher::new();
        h.update(&summary);
        h.update(&footer[..FOOTER_CRC_COVERED]);
        f.seek(SeekFrom::Start(footer_at + FOOTER_CRC_COVERED as u64))?;
        f.write_all(&h.finalize().to_le_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![op];
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn runs_sorted_by_id_others_kept() {
        let s: Vec<u8> = [
            rec(OP_SCHEMA, &[2, 0, 9]),
            rec(OP_SCHEMA, &[1, 0]),
            rec(0x0b, &[5]),
            rec(OP_CHANNEL, &[3, 0]),
            rec(OP_CHANNEL, &[1, 1, 7]),
            rec(OP_CHANNEL, &[2, 0]),
        ]
        .concat();
        let want: Vec<u8> = [
            rec(OP_SCHEMA, &[1, 0]),
            rec(OP_SCHEMA, &[2, 0, 9]),
            rec(0x0b, &[5]),
            rec(OP_CHANNEL, &[2, 0]),
            rec(OP_CHANNEL, &[3, 0]),
            rec(OP_CHANNEL, &[1, 1, 7]),
        ]
        .concat();
        assert_eq!(sorted(&s).ok(), Some(want));
        let mut cut = rec(OP_SCHEMA, &[1, 0]);
        cut.pop();
        assert!(sorted(&cut).is_err());
        assert!(sorted(&[OP_SCHEMA, 1]).is_err());
    }
}
