//! Printing an [`AlignedTable`] as CSV or JSON Lines.
//!
//! Columns, for each aligned channel `NAME` (`STREAM/CHANNEL`): its values (`NAME` for a
//! scalar channel, `NAME[i]` per element in C order otherwise), `NAME:valid`,
//! `NAME:src_t_ns` (the source sample's timestamp; for `linear` the earlier neighbour's) and,
//! for `linear` only, `NAME:src_next_t_ns`. A value without a source sample is an empty
//! cell (CSV) or `null` (JSON); a stale value is printed and marked `false`.

use std::io::{self, Write};

use wshard::align::{AlignedColumn, AlignedTable, NO_ROW, NO_SAMPLE_T_NS};
use wshard::episode::DType;

use crate::verbs::cat::csv::format_value;

/// Elements per row of a column.
fn elements(c: &AlignedColumn) -> usize {
    c.row_bytes() / c.dtype.size()
}

fn value_names(c: &AlignedColumn) -> Vec<String> {
    if c.shape.is_empty() {
        vec![c.name()]
    } else {
        (0..elements(c))
            .map(|i| format!("{}[{i}]", c.name()))
            .collect()
    }
}

fn t_cell(t: i64) -> String {
    if t == NO_SAMPLE_T_NS {
        String::new()
    } else {
        t.to_string()
    }
}

/// The header row: `t_ns`, then each column's value, validity and source-time cells.
#[must_use]
pub fn csv_header(table: &AlignedTable) -> Vec<String> {
    let mut h = vec!["t_ns".to_owned()];
    for c in &table.columns {
        h.extend(value_names(c));
        h.push(format!("{}:valid", c.name()));
        h.push(format!("{}:src_t_ns", c.name()));
        if c.next_t_ns.is_some() {
            h.push(format!("{}:src_next_t_ns", c.name()));
        }
    }
    h
}

/// The table as CSV: a header row, then one row per clock time.
///
/// # Errors
/// Write errors.
pub fn write_csv(table: &AlignedTable, out: &mut dyn Write) -> io::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out);
    w.write_record(csv_header(table))?;
    let mut record: Vec<String> = Vec::new();
    for (i, t) in table.t_ns.iter().enumerate() {
        record.clear();
        record.push(t.to_string());
        for c in &table.columns {
            let size = c.dtype.size();
            match c.row(i).filter(|_| c.source_row[i] != NO_ROW) {
                Some(bytes) => record.extend(
                    bytes
                        .chunks_exact(size)
                        .map(|b| format_value(c.dtype.code(), b).unwrap_or_default()),
                ),
                None => record.extend(std::iter::repeat(String::new()).take(elements(c))),
            }
            record.push(c.valid[i].to_string());
            record.push(t_cell(c.source_t_ns[i]));
            if let Some(next) = &c.next_t_ns {
                record.push(t_cell(next[i]));
            }
        }
        w.write_record(&record)?;
    }
    w.flush()
}

/// One element as JSON text: numbers as printed for CSV, non-finite floats as `null`,
/// `bool` as `true` / `false`.
fn json_element(dtype: DType, b: &[u8]) -> String {
    match (dtype, format_value(dtype.code(), b)) {
        (DType::Bool, Some(v)) => (v != "0").to_string(),
        (DType::F64 | DType::F32 | DType::F16 | DType::BF16, Some(v))
            if v.parse::<f64>().map_or(true, |f| !f.is_finite()) =>
        {
            "null".to_owned()
        }
        (_, Some(v)) => v,
        (_, None) => "null".to_owned(),
    }
}

/// Elements nested by `shape` (`[[1,2],[3,4]]` for shape `[2, 2]`); a bare value for a
/// scalar channel.
fn json_nested(dtype: DType, shape: &[u64], bytes: &[u8], out: &mut String) {
    let size = dtype.size();
    let Some((&first, rest)) = shape.split_first() else {
        out.push_str(&json_element(dtype, bytes.get(..size).unwrap_or_default()));
        return;
    };
    let n = usize::try_from(first).unwrap_or(0);
    let step = bytes.len().checked_div(n).unwrap_or(0);
    out.push('[');
    for k in 0..n {
        if k > 0 {
            out.push(',');
        }
        json_nested(
            dtype,
            rest,
            bytes.get(k * step..(k + 1) * step).unwrap_or_default(),
            out,
        );
    }
    out.push(']');
}

fn json_key(out: &mut String, key: &str) {
    out.push_str(&serde_json::to_string(key).unwrap_or_default());
    out.push(':');
}

fn json_t(t: i64) -> String {
    if t == NO_SAMPLE_T_NS {
        "null".to_owned()
    } else {
        t.to_string()
    }
}

/// The table as JSON Lines: one object per clock time with `t_ns` and, per column, the keys
/// of the CSV header (the value nested by the channel's shape).
///
/// # Errors
/// Write errors.
pub fn write_jsonl(table: &AlignedTable, out: &mut dyn Write) -> io::Result<()> {
    let mut line = String::new();
    for (i, t) in table.t_ns.iter().enumerate() {
        line.clear();
        line.push_str("{\"t_ns\":");
        line.push_str(&t.to_string());
        for c in &table.columns {
            let name = c.name();
            line.push(',');
            json_key(&mut line, &name);
            match c.row(i).filter(|_| c.source_row[i] != NO_ROW) {
                Some(bytes) => json_nested(c.dtype, &c.shape, bytes, &mut line),
                None => line.push_str("null"),
            }
            line.push(',');
            json_key(&mut line, &format!("{name}:valid"));
            line.push_str(if c.valid[i] { "true" } else { "false" });
            line.push(',');
            json_key(&mut line, &format!("{name}:src_t_ns"));
            line.push_str(&json_t(c.source_t_ns[i]));
            if let Some(next) = &c.next_t_ns {
                line.push(',');
                json_key(&mut line, &format!("{name}:src_next_t_ns"));
                line.push_str(&json_t(next[i]));
            }
        }
        line.push_str("}\n");
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wshard::align::Policy;

    fn column(
        channel: &str,
        policy: Policy,
        dtype: DType,
        shape: Vec<u64>,
        values: Vec<u8>,
    ) -> AlignedColumn {
        let linear = policy == Policy::Linear;
        AlignedColumn {
            stream: "s".into(),
            channel: channel.into(),
            policy,
            source_dtype: dtype,
            dtype,
            shape,
            values,
            valid: vec![true, false],
            source_row: vec![0, NO_ROW],
            source_t_ns: vec![5, NO_SAMPLE_T_NS],
            next_row: linear.then(|| vec![1, NO_ROW]),
            next_t_ns: linear.then(|| vec![9, NO_SAMPLE_T_NS]),
        }
    }

    #[test]
    fn aligned_render_csv_and_jsonl() {
        let vals: Vec<u8> = [0.5f32, f32::NAN, 0.0, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let table = AlignedTable {
            t_ns: vec![7, 8],
            columns: vec![
                column("c", Policy::Linear, DType::F32, vec![2], vals),
                column("b", Policy::Hold, DType::Bool, vec![], vec![1, 0]),
            ],
        };
        let mut out = Vec::new();
        write_csv(&table, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t_ns,s/c[0],s/c[1],s/c:valid,s/c:src_t_ns,s/c:src_next_t_ns,s/b,s/b:valid,s/b:src_t_ns\n\
             7,0.5,NaN,true,5,9,1,true,5\n\
             8,,,false,,,,false,\n"
        );
        let mut out = Vec::new();
        write_jsonl(&table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["s/b"], serde_json::json!(true));
        assert!(text.starts_with(
            "{\"t_ns\":7,\"s/c\":[0.5,null],\"s/c:valid\":true,\"s/c:src_t_ns\":5,\"s/c:src_next_t_ns\":9,"
        ), "{text}");
        assert!(text
            .lines()
            .nth(1)
            .unwrap()
            .contains("\"s/c\":null,\"s/c:valid\":false,\"s/c:src_t_ns\":null"));
    }

    #[test]
    fn aligned_render_nested_shapes() {
        let mut s = String::new();
        json_nested(DType::U8, &[2, 2], &[1, 2, 3, 4], &mut s);
        assert_eq!(s, "[[1,2],[3,4]]");
    }
}
