//! Decoding one `.npy` array (NumPy format versions 1, 2 and 3): the header dict
//! (`descr`, `fortran_order`, `shape`) and the element bytes, converted to little-endian.
//! Object arrays (pickled Python objects), strings, structured and complex dtypes and
//! Fortran-ordered arrays are refused.

use wshard::episode::DType;

use crate::array::Array;

/// The magic string of `.npy` files.
const MAGIC: &[u8] = b"\x93NUMPY";
/// Bytes before the header length field: magic + major + minor.
const PREAMBLE: usize = 8;

/// What is wrong with an `.npy` member; the caller adds the file and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NpyProblem {
    /// Not an array the importer converts (the text says what it is).
    Unsupported(String),
    /// Malformed bytes.
    Bad(String),
}

fn bad(m: impl Into<String>) -> NpyProblem {
    NpyProblem::Bad(m.into())
}

/// The element type and byte order of a `descr` string such as `<f4`, `|u1`, `>i8`, `|b1`.
fn parse_descr(descr: &str) -> Result<(DType, bool), NpyProblem> {
    let unsupported = |what: &str| NpyProblem::Unsupported(format!("{what} (dtype {descr:?})"));
    let mut chars = descr.chars();
    let order = chars.next().ok_or_else(|| bad("empty descr"))?;
    let rest: String = chars.collect();
    let big = match order {
        '<' | '|' | '=' => false,
        '>' => true,
        _ => return Err(unsupported("dtype")),
    };
    let dtype = match rest.as_str() {
        "f8" => DType::F64,
        "f4" => DType::F32,
        "f2" => DType::F16,
        "i8" => DType::I64,
        "i4" => DType::I32,
        "i2" => DType::I16,
        "i1" => DType::I8,
        "u8" => DType::U64,
        "u4" => DType::U32,
        "u2" => DType::U16,
        "u1" => DType::U8,
        "b1" => DType::Bool,
        "O" => return Err(unsupported("object array (pickled Python objects)")),
        r if r.starts_with('U') || r.starts_with('S') => return Err(unsupported("string array")),
        r if r.starts_with('c') => return Err(unsupported("complex array")),
        _ => return Err(unsupported("dtype")),
    };
    Ok((dtype, big))
}

/// The value of `'key':` in the header dict, as the raw text up to the next top-level
/// comma (or the closing brace).
fn header_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat_single = format!("'{key}':");
    let pat_double = format!("\"{key}\":");
    let at = header
        .find(&pat_single)
        .map(|i| i + pat_single.len())
        .or_else(|| header.find(&pat_double).map(|i| i + pat_double.len()))?;
    let rest = header[at..].trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
        if depth < 0 {
            return Some(rest[..i].trim());
        }
    }
    Some(rest.trim())
}

fn parse_shape(text: &str) -> Result<Vec<u64>, NpyProblem> {
    let inner = text
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| bad(format!("shape {text:?} is not a tuple")))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<u64>()
                .map_err(|_| bad(format!("shape {text:?}: {s:?} is not a size")))
        })
        .collect()
}

/// Decode a whole `.npy` file.
///
/// # Errors
/// [`NpyProblem`] saying what is wrong.
pub fn decode(bytes: &[u8]) -> Result<Array, NpyProblem> {
    if bytes.len() < PREAMBLE + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad("not an .npy array (bad magic)"));
    }
    let major = bytes[6];
    let (len_bytes, header_len) = match major {
        1 => (2, usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))),
        2 | 3 => {
            let b = bytes
                .get(8..12)
                .ok_or_else(|| bad("truncated header length"))?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (4, usize::try_from(n).map_err(|_| bad("header too long"))?)
        }
        v => return Err(bad(format!("unknown .npy format version {v}"))),
    };
    let start = PREAMBLE + len_bytes;
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| bad("header is not text"))?;
    let descr_text = header_value(header, "descr").ok_or_else(|| bad("header has no descr"))?;
    if descr_text.starts_with('[') {
        return Err(NpyProblem::Unsupported(format!(
            "structured array (dtype {descr_text})"
        )));
    }
    let descr = descr_text.trim_matches(|c| c == '\'' || c == '"');
    let (dtype, big) = parse_descr(descr)?;
    match header_value(header, "fortran_order") {
        Some("False") => {}
        Some("True") => {
            return Err(NpyProblem::Unsupported(
                "Fortran-ordered array (save it C-contiguous)".into(),
            ))
        }
        _ => return Err(bad("header has no fortran_order")),
    }
    let shape =
        parse_shape(header_value(header, "shape").ok_or_else(|| bad("header has no shape"))?)?;
    let count = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size() as u64))
        .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
    let data = &bytes[end..];
    if data.len() as u64 != count {
        return Err(bad(format!(
            "shape {shape:?} of {} needs {count} bytes, the member holds {}",
            dtype.code(),
            data.len()
        )));
    }
    let mut data = data.to_vec();
    if big && dtype.size() > 1 {
        for el in data.chunks_exact_mut(dtype.size()) {
            el.reverse();
        }
    }
    if dtype == DType::Bool {
        for b in &mut data {
            *b = u8::from(*b != 0);
        }
    }
    Ok(Array { dtype, shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut h = header.to_owned();
        while (PREAMBLE + 2 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend(u16::try_from(h.len()).unwrap_or(0).to_le_bytes());
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn import_npy_decodes_big_endian_and_scalars() {
        let a = decode(&npy(
            "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }",
            &[0, 1, 1, 0],
        ));
        assert_eq!(
            a,
            Ok(Array {
                dtype: DType::I16,
                shape: vec![2],
                data: vec![1, 0, 0, 1]
            })
        );
        let s = decode(&npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
            &[0; 8],
        ));
        assert_eq!(s.map(|a| a.shape), Ok(vec![]));
    }

    #[test]
    fn import_npy_refuses_objects_fortran_and_short_data() {
        let o = decode(&npy(
            "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
            &[0; 8],
        ));
        assert!(matches!(o, Err(NpyProblem::Unsupported(m)) if m.contains("pickled")));
        let f = decode(&npy(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
            &[0; 16],
        ));
        assert!(matches!(f, Err(NpyProblem::Unsupported(m)) if m.contains("Fortran")));
        let s = decode(&npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
            &[0; 15],
        ));
        assert!(matches!(s, Err(NpyProblem::Bad(m)) if m.contains("needs 16 bytes")));
        assert!(matches!(
            decode(b"PK\x03\x04 not npy"),
            Err(NpyProblem::Bad(_))
        ));
    }
}
