//! Finding the next record inside a damaged block.
//!
//! The writer packs records back to back, so damage to one fragment says nothing about
//! the records after it in the same block. When a fragment does not verify (or zeros
//! stand where a header should be), the reader looks for the first offset after the damage
//! where a fragment that *starts* a record verifies, and reads on from there. Only the rest
//! of the damaged block is searched: the next block starts with a fragment anyway.
//!
//! What is accepted: a FULL or FIRST fragment (a MIDDLE or LAST one never starts inside a
//! block), lying entirely within its block and the file, ending exactly at the block's end
//! if it is a FIRST fragment (the writer splits a record only where it does not fit), whose
//! header's CRC32C matches its kind byte and the bytes it covers. A FIRST fragment is then
//! joined only to the MIDDLE/LAST fragments that start the next blocks, as any other.
//!
//! Why a false record is not accepted, or is harmless: damaged or random bytes pass these
//! checks with a probability of about 2^-32 per offset tried (the kind and length checks
//! cut it further), under 2^-17 for a whole block. Bytes that pass by design are a fragment
//! the writer wrote, or a copy of one inside a record's payload (a client that sends
//! journal framing as sensor data). The damaged header's length is not trusted to skip
//! such a payload: a flip in the length field is far likelier than such a copy, and
//! trusting it could jump over intact records. A record found inside a payload goes
//! through every check above the framing like any other (record kind, STEPS size, seq
//! continuity in replay: it would have to carry exactly the seqs the damaged record held),
//! so at worst it stands for timesteps that the same client sent in a payload; and since
//! intact bytes then follow damage, the journal is kept in quarantine
//! (`recovery::fate`).

use super::format::{block_end, fragment_crc, kind, FragmentHeader, HEADER_LEN};

/// True when a fragment that starts a record (FULL, or FIRST ending at its block's end)
/// lies at `at`, entirely within its block and `bytes`, and its CRC32C verifies.
#[must_use]
pub(crate) fn starts_record(bytes: &[u8], at: usize) -> bool {
    let Some(h) = FragmentHeader::read(bytes, at) else {
        return false;
    };
    if h.kind != kind::FULL && h.kind != kind::FIRST {
        return false;
    }
    let end = at + HEADER_LEN + h.len;
    let block_end = block_end(at);
    if end > block_end || (h.kind == kind::FIRST && end != block_end) {
        return false;
    }
    bytes
        .get(at + HEADER_LEN..end)
        .is_some_and(|data| fragment_crc(h.kind, data) == h.crc)
}

/// Where reading resumes after damage at `damaged` (a fragment header that did not
/// verify, or zeros where a header should be): the first offset after it in the same
/// block where a record starts. `None` when no record starts in the rest of the block.
#[must_use]
pub(crate) fn next_record_start(bytes: &[u8], damaged: usize) -> Option<usize> {
    let last = block_end(damaged)
        .min(bytes.len())
        .checked_sub(HEADER_LEN)?;
    let mut p = damaged + 1;
    while p <= last {
        // The kind byte first: in random bytes it rules out all but 2 offsets in 256.
        let k = *bytes.get(p + KIND_AT)?;
        if (k == kind::FULL || k == kind::FIRST) && starts_record(bytes, p) {
            return Some(p);
        }
        p += 1;
    }
    None
}

/// Where the kind byte is in a fragment header.
const KIND_AT: usize = HEADER_LEN - 1;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::journal::format::{JournalWriter, BLOCK_LEN};

    fn journal(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
        let mut w = JournalWriter::new(Vec::new(), 0);
        let mut starts = Vec::new();
        for r in records {
            let at = w.offset();
            let left = BLOCK_LEN as u64 - at % BLOCK_LEN as u64;
            let at = if left < HEADER_LEN as u64 {
                at.next_multiple_of(BLOCK_LEN as u64)
            } else {
                at
            };
            starts.push(at);
            w.append(&[r]).unwrap();
        }
        (w.into_inner(), starts)
    }

    #[test]
    fn resync_finds_the_next_record_start_only() {
        let records: Vec<Vec<u8>> = (0..80u8).map(|i| vec![i; 500]).collect();
        let (bytes, starts) = journal(&records);
        for &s in &starts {
            assert!(starts_record(&bytes, s as usize), "{s}");
        }
        // No offset between two record starts verifies as one.
        for p in 0..bytes.len() {
            let is_start = starts.contains(&(p as u64));
            assert_eq!(starts_record(&bytes, p), is_start, "offset {p}");
        }
        // From inside record 3, the next start is record 4.
        let from = starts[3] as usize;
        assert_eq!(next_record_start(&bytes, from), Some(starts[4] as usize));
        // The record crossing into block 1 is found as a FIRST fragment; past it, nothing
        // is left in block 0.
        let crossing = starts
            .iter()
            .position(|&s| s < BLOCK_LEN as u64 && s + 507 > BLOCK_LEN as u64)
            .unwrap();
        let before = starts[crossing - 1] as usize;
        assert_eq!(
            next_record_start(&bytes, before),
            Some(starts[crossing] as usize)
        );
        assert_eq!(next_record_start(&bytes, starts[crossing] as usize), None);
        // Never past the end of the file, never with less than a header left.
        assert_eq!(next_record_start(&bytes[..3], 0), None);
        assert_eq!(next_record_start(&[], 0), None);
    }

    #[test]
    fn resync_refuses_fragments_out_of_place() {
        // A FIRST fragment that does not end at its block's end, and MIDDLE/LAST fragments
        // inside a block, are never taken for a record start, even with a good CRC.
        for (k, len) in [(kind::FIRST, 10usize), (kind::MIDDLE, 10), (kind::LAST, 10)] {
            let data = vec![7u8; len];
            let mut bytes = vec![0u8; 100];
            bytes[20..24].copy_from_slice(&fragment_crc(k, &data).to_le_bytes());
            bytes[24..26].copy_from_slice(&u16::try_from(len).unwrap().to_le_bytes());
            bytes[26] = k;
            bytes[27..27 + len].copy_from_slice(&data);
            assert!(!starts_record(&bytes, 20), "kind {k}");
            bytes[26] = kind::FULL;
            assert!(!starts_record(&bytes, 20), "kind {k}: crc of another kind");
            bytes[20..24].copy_from_slice(&fragment_crc(kind::FULL, &data).to_le_bytes());
            assert!(starts_record(&bytes, 20));
            // Cut by the end of the file.
            assert!(!starts_record(&bytes[..30], 20));
        }
    }
}
