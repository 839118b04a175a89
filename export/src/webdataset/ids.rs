//! Sample ids: a UUID derived from the episode id and the anchor frame (never random), so
//! the same input gives the same keys.

use sha2::{Digest, Sha256};

/// Domain separation of the hash.
const DOMAIN: &[u8] = b"wshard-export/webdataset/sample\0";
/// RFC 9562 version 8 (custom) in the high nibble of byte 6.
const VERSION_8: u8 = 0x80;
/// RFC 9562 variant (`10xx`) in the high bits of byte 8.
const VARIANT: u8 = 0x80;

/// The sample id of `anchor_frame` of `episode_id`: the first 16 bytes of
/// SHA-256(domain, episode id, 0, anchor frame as u64 little-endian), stamped as a version 8
/// UUID, in its hyphenated lower-case form (no `.`, so a WebDataset key).
#[must_use]
pub fn sample_id(episode_id: &str, anchor_frame: u64) -> String {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(episode_id.as_bytes());
    h.update([0]);
    h.update(anchor_frame.to_le_bytes());
    let digest = h.finalize();
    let mut b = [0_u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | VERSION_8;
    b[8] = (b[8] & 0x3f) | VARIANT;
    let hex = wshard::digest::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
