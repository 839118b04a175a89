//! Lowercase hex and SHA-256, as chunk hashes in manifests, blob keys and dataset versions
//! spell them: one encoder and one streaming file hash for the format library, the daemon,
//! publishing, import, export and the CLI.
//!
//! The hex encoding is the `hex` crate's; the hash is `sha2`'s.

use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{FormatError, Result};

/// Bytes read at a time when hashing a file or reader.
pub const HASH_BUFFER: usize = 1 << 20;

/// Lowercase hex of `bytes`, two digits a byte.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    ::hex::encode(bytes)
}

/// Lowercase hex SHA-256 of `bytes`.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of everything `reader` yields, read [`HASH_BUFFER`] bytes at a
/// time, and how many bytes that was.
///
/// # Errors
/// The first read error.
pub fn sha256_reader<R: Read + ?Sized>(reader: &mut R) -> io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; HASH_BUFFER];
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex(&h.finalize()), size))
}

/// Lowercase hex SHA-256 of a file, streamed.
///
/// # Errors
/// [`FormatError::Io`] of `open` or `read`, with the path.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| FormatError::io_at("open", path, e))?;
    sha256_reader(&mut f)
        .map(|(digest, _)| digest)
        .map_err(|e| FormatError::io_at("read", path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn digest_hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    #[test]
    fn digest_sha256_of_bytes_reader_and_file_agree() {
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(sha256_hex(b""), empty);
        let data: Vec<u8> = (0..(HASH_BUFFER + 17)).map(|i| (i % 251) as u8).collect();
        let (streamed, size) = sha256_reader(&mut data.as_slice()).unwrap();
        assert_eq!(streamed, sha256_hex(&data));
        assert_eq!(size, data.len() as u64);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        assert_eq!(sha256_file(&path).unwrap(), streamed);
        let missing = sha256_file(&dir.path().join("absent")).unwrap_err();
        assert!(missing.to_string().starts_with("open "), "{missing}");
    }
}
