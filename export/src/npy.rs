//! NumPy `.npy` format version 1.0: the magic, a little-endian `u16` header length, and a
//! Python dict literal naming the dtype, the order and the shape, padded with spaces and a
//! newline so that the data starts at a multiple of 64 bytes. The data follows as stored
//! (C order, little-endian), so a block's decoded bytes need no conversion.

/// The six magic bytes and the version (1.0).
const MAGIC: &[u8; 8] = b"\x93NUMPY\x01\x00";
/// The data must start at a multiple of this.
const ALIGN: usize = 64;

/// The NumPy `descr` of a WShard dtype code, and whether it stands in for a type NumPy
/// lacks: `bf16` is written as `<u2` (the raw bits). `None` for an unknown code.
#[must_use]
pub fn descr(dtype: &str) -> Option<(&'static str, bool)> {
    let d = match dtype {
        "f64" => "<f8",
        "f32" => "<f4",
        "f16" => "<f2",
        "bf16" => return Some(("<u2", true)),
        "i64" => "<i8",
        "i32" => "<i4",
        "i16" => "<i2",
        "i8" => "|i1",
        "u64" => "<u8",
        "u32" => "<u4",
        "u16" => "<u2",
        "u8" => "|u1",
        "bool" => "|b1",
        _ => return None,
    };
    Some((d, false))
}

/// `(20,)`, `(20, 3)`, `()`: a Python tuple literal.
fn shape_tuple(shape: &[u64]) -> String {
    match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Why an `.npy` header cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// The header does not fit the 16-bit length of version 1.0 (too many dimensions).
    #[error("npy header of {len} bytes is too long for version 1.0")]
    HeaderTooLong { len: usize },
}

/// The whole preamble (magic, version, header length, padded header) of a version 1.0
/// file holding a C-order array of `descr` with `shape`.
///
/// # Errors
/// [`NpyError::HeaderTooLong`] when the header does not fit the 16-bit length of version 1.0.
pub fn header(descr: &str, shape: &[u64]) -> Result<Vec<u8>, NpyError> {
    let dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_tuple(shape)
    );
    let unpadded = MAGIC.len() + 2 + dict.len() + 1;
    let pad = (ALIGN - unpadded % ALIGN) % ALIGN;
    let header_len = dict.len() + pad + 1;
    let len16 =
        u16::try_from(header_len).map_err(|_| NpyError::HeaderTooLong { len: header_len })?;
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + header_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len16.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + pad, b' ');
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_padded_to_64() {
        let h = header("<f4", &[20, 3]).unwrap();
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        let len = usize::from(u16::from_le_bytes([h[8], h[9]]));
        assert_eq!(len + 10, h.len());
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (20, 3), }"));
        assert!(text.ends_with(" \n"));
        let h = header("|u1", &[7]).unwrap();
        assert_eq!(h.len(), 128);
        assert!(std::str::from_utf8(&h[10..])
            .unwrap()
            .contains("'shape': (7,)"));
    }

    #[test]
    fn npy_descrs() {
        assert_eq!(descr("bf16"), Some(("<u2", true)));
        assert_eq!(descr("bool"), Some(("|b1", false)));
        assert_eq!(descr("i8"), Some(("|i1", false)));
        assert_eq!(descr("c64"), None);
    }
}
