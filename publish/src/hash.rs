//! Content hashes as the store names blobs and versions: lower-case hex SHA-256 (computed by
//! the format library's `wshard::digest`; this module only checks the names).

/// Length of a SHA-256 in hex.
pub const SHA256_HEX_LEN: usize = 64;

/// True for 64 lower-case hex digits.
#[must_use]
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == SHA256_HEX_LEN
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
