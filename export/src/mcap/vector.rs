//! Messages of low-dimensional channels: `{"timestamp": {"sec", "nsec"}, "values": [...]}`
//! with the step's elements decoded from little-endian and flattened row-major.
//!
//! Floats are written in the shortest form that reads back to the same value of their
//! dtype (f16 and bf16 widened to f32 exactly); NaN and infinities, which JSON cannot
//! spell, as `null`. Integers exactly (JavaScript readers lose precision past 2^53), bools
//! as `true`/`false`.

use std::io::Write;

use half::{bf16, f16};
use wshard::episode::DType;

use super::stamp::Stamp;

/// Append one float `v` (f32 precision) as JSON.
fn f32_json(v: f32, out: &mut Vec<u8>) {
    if v.is_finite() {
        // serde_json writes an f32 in its shortest round-trip form; a Vec never fails.
        let _ = serde_json::to_writer(&mut *out, &v);
    } else {
        out.extend_from_slice(b"null");
    }
}

fn f64_json(v: f64, out: &mut Vec<u8>) {
    if v.is_finite() {
        let _ = serde_json::to_writer(&mut *out, &v);
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Fixed-size little-endian element `N` bytes wide at the front of `c`.
fn le<const N: usize>(c: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = N.min(c.len());
    a[..n].copy_from_slice(&c[..n]);
    a
}

/// Append the elements of one step (`bytes`, little-endian `dtype`) as a JSON array.
pub(crate) fn write_values(dtype: DType, bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, c) in bytes.chunks_exact(dtype.size()).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing into a Vec cannot fail.
        let _ = match dtype {
            DType::F64 => {
                f64_json(f64::from_le_bytes(le(c)), out);
                Ok(())
            }
            DType::F32 => {
                f32_json(f32::from_le_bytes(le(c)), out);
                Ok(())
            }
            DType::F16 => {
                f32_json(f16::from_le_bytes(le(c)).to_f32(), out);
                Ok(())
            }
            DType::BF16 => {
                f32_json(bf16::from_le_bytes(le(c)).to_f32(), out);
                Ok(())
            }
            DType::I64 => write!(out, "{}", i64::from_le_bytes(le(c))),
            DType::I32 => write!(out, "{}", i32::from_le_bytes(le(c))),
            DType::I16 => write!(out, "{}", i16::from_le_bytes(le(c))),
            DType::I8 => write!(out, "{}", i8::from_le_bytes(le(c))),
            DType::U64 => write!(out, "{}", u64::from_le_bytes(le(c))),
            DType::U32 => write!(out, "{}", u32::from_le_bytes(le(c))),
            DType::U16 => write!(out, "{}", u16::from_le_bytes(le(c))),
            DType::U8 => write!(out, "{}", c.first().copied().unwrap_or(0)),
            DType::Bool => {
                out.extend_from_slice(if c.first().copied().unwrap_or(0) != 0 {
                    b"true"
                } else {
                    b"false"
                });
                Ok(())
            }
        };
    }
    out.push(b']');
}

/// The message of one step of a low-dimensional channel.
pub(crate) fn vector_message(stamp: Stamp, dtype: DType, bytes: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"{\"timestamp\":");
    stamp.write_json(out);
    out.extend_from_slice(b",\"values\":");
    write_values(dtype, bytes, out);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(dtype: DType, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_values(dtype, bytes, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn every_dtype() {
        let f: Vec<u8> = [0.1f32, -2.5, f32::NAN, f32::INFINITY]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(values(DType::F32, &f), "[0.1,-2.5,null,null]");
        let d: Vec<u8> = [0.1f64, 1e300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(values(DType::F64, &d), "[0.1,1e+300]");
        assert_eq!(
            values(DType::F16, &f16::from_f32(0.5).to_le_bytes()),
            "[0.5]"
        );
        assert_eq!(
            values(DType::BF16, &bf16::from_f32(-3.0).to_le_bytes()),
            "[-3.0]"
        );
        assert_eq!(
            values(DType::I64, &i64::MIN.to_le_bytes()),
            "[-9223372036854775808]"
        );
        assert_eq!(
            values(DType::U64, &u64::MAX.to_le_bytes()),
            "[18446744073709551615]"
        );
        assert_eq!(values(DType::I32, &(-7i32).to_le_bytes()), "[-7]");
        assert_eq!(values(DType::U32, &7u32.to_le_bytes()), "[7]");
        assert_eq!(values(DType::I16, &(-7i16).to_le_bytes()), "[-7]");
        assert_eq!(values(DType::U16, &700u16.to_le_bytes()), "[700]");
        assert_eq!(values(DType::I8, &[0xff]), "[-1]");
        assert_eq!(values(DType::U8, &[0xff, 1]), "[255,1]");
        assert_eq!(values(DType::Bool, &[0, 1]), "[false,true]");
        assert_eq!(values(DType::F32, &[]), "[]");
    }
}
