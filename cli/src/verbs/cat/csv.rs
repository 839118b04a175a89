//! A tensor block as CSV: a header row `t,<name>[0],<name>[1],...` (just `t,<name>` for
//! one value per step), then one row per timestep with the step's values flattened in
//! C order. Floats are printed with Rust's `{}`, the shortest text that reads back to the
//! same value; `f16` and `bf16` are printed through `f32`, which holds them exactly.

use std::io::{self, Write};

/// One element of `dtype` from its little-endian bytes. `None` for an unknown dtype or a
/// slice of the wrong size.
#[must_use]
pub fn format_value(dtype: &str, b: &[u8]) -> Option<String> {
    let s = match (dtype, b) {
        ("f64", &[a0, a1, a2, a3, a4, a5, a6, a7]) => {
            f64::from_le_bytes([a0, a1, a2, a3, a4, a5, a6, a7]).to_string()
        }
        ("i64", &[a0, a1, a2, a3, a4, a5, a6, a7]) => {
            i64::from_le_bytes([a0, a1, a2, a3, a4, a5, a6, a7]).to_string()
        }
        ("u64", &[a0, a1, a2, a3, a4, a5, a6, a7]) => {
            u64::from_le_bytes([a0, a1, a2, a3, a4, a5, a6, a7]).to_string()
        }
        ("f32", &[a0, a1, a2, a3]) => f32::from_le_bytes([a0, a1, a2, a3]).to_string(),
        ("i32", &[a0, a1, a2, a3]) => i32::from_le_bytes([a0, a1, a2, a3]).to_string(),
        ("u32", &[a0, a1, a2, a3]) => u32::from_le_bytes([a0, a1, a2, a3]).to_string(),
        ("f16", &[a0, a1]) => half::f16::from_le_bytes([a0, a1]).to_f32().to_string(),
        ("bf16", &[a0, a1]) => half::bf16::from_le_bytes([a0, a1]).to_f32().to_string(),
        ("i16", &[a0, a1]) => i16::from_le_bytes([a0, a1]).to_string(),
        ("u16", &[a0, a1]) => u16::from_le_bytes([a0, a1]).to_string(),
        ("i8", &[a0]) => i8::from_le_bytes([a0]).to_string(),
        ("u8" | "bool", &[a0]) => a0.to_string(),
        _ => return None,
    };
    Some(s)
}

/// Write `data` (`rows` steps of `per_step` elements of `dtype`, each `size` bytes) as CSV
/// (quoting by the `csv` crate: a cell with a comma, a quote or a line break is quoted).
///
/// # Errors
/// Write errors; `InvalidInput` for an unknown dtype or a length that does not fit.
pub fn write_csv(
    out: &mut dyn Write,
    name: &str,
    dtype: &str,
    size: usize,
    per_step: usize,
    data: &[u8],
) -> io::Result<()> {
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    let step = per_step
        .checked_mul(size)
        .filter(|&s| s > 0 && data.len() % s == 0)
        .ok_or_else(|| bad(format!("{} bytes are not whole steps", data.len())))?;
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out);
    let mut record: Vec<String> = Vec::with_capacity(per_step + 1);
    record.push("t".to_owned());
    if per_step == 1 {
        record.push(name.to_owned());
    } else {
        record.extend((0..per_step).map(|i| format!("{name}[{i}]")));
    }
    w.write_record(&record)?;
    for (t, row) in data.chunks_exact(step).enumerate() {
        record.clear();
        record.push(t.to_string());
        for v in row.chunks_exact(size) {
            record
                .push(format_value(dtype, v).ok_or_else(|| bad(format!("unknown dtype {dtype}")))?);
        }
        w.write_record(&record)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_round_trip_floats() {
        let vals = [0.1f32, -2.5, 1e-8, 3.0];
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = Vec::new();
        write_csv(&mut out, "signal/obs", "f32", 4, 2, &data).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "t,signal/obs[0],signal/obs[1]\n0,0.1,-2.5\n1,0.00000001,3\n"
        );
        let back: f32 = "0.00000001".parse().unwrap();
        assert_eq!(back, 1e-8);
        let mut out = Vec::new();
        write_csv(&mut out, "a,b", "u8", 1, 1, &[0, 1]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "t,\"a,b\"\n0,0\n1,1\n");
        assert_eq!(
            format_value("bf16", &half::bf16::from_f32(1.5).to_le_bytes()),
            Some("1.5".into())
        );
    }
}
