//! `.npz` writing: a zip archive of `.npy` arrays, every entry stored (no compression),
//! as `numpy.savez` writes it.
//!
//! Written by hand rather than with the `zip` crate: the format needed is small (local
//! headers, a central directory, the end record; no zip64, no compression), and every byte
//! is fixed here (the DOS date 1980-01-01 00:00, no extra fields), so the same arrays give
//! the same bytes whatever the crate's defaults for timestamps would be.

use crate::npy::{header, NpyError};

/// Zip local file header signature.
const ZIP_LOCAL: u32 = 0x0403_4b50;
/// Zip central directory header signature.
const ZIP_CENTRAL: u32 = 0x0201_4b50;
/// Zip end of central directory signature.
const ZIP_END: u32 = 0x0605_4b50;
/// "Version needed to extract" / "made by": 2.0.
const ZIP_VERSION: u16 = 20;
/// DOS date of 1980-01-01 (day 1, month 1, year 0).
const ZIP_DATE_1980: u16 = (1 << 5) | 1;

/// One `.npy` file: `descr`, C order, `shape`, then `data` (already little-endian).
///
/// # Errors
/// [`NpyError`] when the header does not fit version 1.0.
pub fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Result<Vec<u8>, NpyError> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = header(descr, &shape)?;
    out.extend_from_slice(data);
    Ok(out)
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Too large for a zip without zip64.
#[derive(Debug, thiserror::Error)]
#[error("npz entry {name} or the archive exceeds 4 GiB (zip64 is not written)")]
pub struct NpzTooLarge {
    pub name: String,
}

/// A zip of `(name, bytes)` entries, stored, in the given order.
///
/// # Errors
/// [`NpzTooLarge`] past 4 GiB or 65535 entries.
pub fn zip_stored(entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>, NpzTooLarge> {
    let too_large = |name: &str| NpzTooLarge {
        name: name.to_owned(),
    };
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let offset = u32::try_from(out.len()).map_err(|_| too_large(name))?;
        let size = u32::try_from(data.len()).map_err(|_| too_large(name))?;
        let name_len = u16::try_from(name.len()).map_err(|_| too_large(name))?;
        let crc = crc32fast::hash(data);
        put32(&mut out, ZIP_LOCAL);
        for v in [ZIP_VERSION, 0, 0, 0, ZIP_DATE_1980] {
            put16(&mut out, v);
        }
        for v in [crc, size, size] {
            put32(&mut out, v);
        }
        put16(&mut out, name_len);
        put16(&mut out, 0);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);

        put32(&mut central, ZIP_CENTRAL);
        for v in [ZIP_VERSION, ZIP_VERSION, 0, 0, 0, ZIP_DATE_1980] {
            put16(&mut central, v);
        }
        for v in [crc, size, size] {
            put32(&mut central, v);
        }
        for v in [name_len, 0, 0, 0, 0] {
            put16(&mut central, v);
        }
        put32(&mut central, 0);
        put32(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
    }
    let count = u16::try_from(entries.len()).map_err(|_| too_large("(entry count)"))?;
    let cd_offset = u32::try_from(out.len()).map_err(|_| too_large("(central directory)"))?;
    let cd_size = u32::try_from(central.len()).map_err(|_| too_large("(central directory)"))?;
    out.extend_from_slice(&central);
    put32(&mut out, ZIP_END);
    for v in [0, 0, count, count] {
        put16(&mut out, v);
    }
    put32(&mut out, cd_size);
    put32(&mut out, cd_offset);
    put16(&mut out, 0);
    Ok(out)
}
