//! Printing a [`JournalPeek`]: a summary, a table of records, the corrupt regions and the
//! problems, as text or as one JSON object.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::model::{block_of, JournalPeek, RecordKind, RecordRow};
use crate::output::table::{Align, Table};
use wshard_recorder::journal::format::BLOCK_LEN;
use wshard_recorder::journal::record::SegmentHeader;

fn field(out: &mut dyn Write, key: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(out, "{key:<20} {value}")
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `episode ep, chunk 0, first timestep 0, channels: state signal f32 [8], ...`
fn segment_label(h: &SegmentHeader) -> String {
    let channels: Vec<String> = h
        .schema
        .channels
        .iter()
        .map(|c| {
            format!(
                "{} {} {} {:?}",
                c.name,
                c.lane.prefix(),
                c.dtype.code(),
                c.shape
            )
        })
        .collect();
    format!(
        "episode {}, chunk {}, first timestep {}, {} bytes per step, channels: {}",
        h.schema.episode_id,
        h.chunk_index,
        h.first_timestep,
        h.schema.step_payload_bytes,
        channels.join(", ")
    )
}

/// The `steps`, `seq` and `detail` cells of a record.
fn cells(r: &RecordRow) -> (String, String, String) {
    match &r.kind {
        RecordKind::Segment(Some(h)) => ("-".into(), "-".into(), segment_label(h)),
        RecordKind::Segment(None) => ("-".into(), "-".into(), "header does not decode".into()),
        RecordKind::Steps {
            timesteps,
            seq,
            contiguous,
        } => (
            timesteps.map_or_else(|| "?".into(), |n| n.to_string()),
            seq.map_or_else(|| "-".into(), |(a, b)| format!("{a}..={b}")),
            if *contiguous {
                String::new()
            } else {
                "seq not contiguous".into()
            },
        ),
        RecordKind::Empty => ("-".into(), "-".into(), "empty record".into()),
        RecordKind::Unknown(k) => ("-".into(), "-".into(), format!("unknown kind {k}")),
    }
}

/// The text report.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_text(p: &JournalPeek, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    field(out, "file", p.path.display())?;
    field(out, "kind", "journal segment (wshardd-journal)")?;
    let blocks = p.file_len.div_ceil(BLOCK_LEN as u64);
    field(
        out,
        "size",
        format!(
            "{} ({} of {BLOCK_LEN})",
            plural(p.file_len, "byte", "bytes"),
            plural(blocks, "block", "blocks")
        ),
    )?;
    let count = |name: &str| p.records.iter().filter(|r| r.kind.name() == name).count();
    field(
        out,
        "records",
        format!(
            "{}: {} SEGMENT, {} STEPS ({})",
            p.records.len(),
            count("SEGMENT"),
            count("STEPS"),
            plural(p.timesteps(), "timestep", "timesteps")
        ),
    )?;
    if let Some(h) = p.header() {
        field(out, "segment", segment_label(h))?;
    }
    field(out, "valid_end", p.valid_end)?;
    field(
        out,
        "discarded",
        format!(
            "{} in {}",
            plural(p.discarded_bytes(), "byte", "bytes"),
            plural(p.corrupt.len() as u64, "region", "regions")
        ),
    )?;
    writeln!(out)?;
    let mut t = Table::new(&[
        ("offset", Align::Right),
        ("end", Align::Right),
        ("kind", Align::Left),
        ("length", Align::Right),
        ("steps", Align::Right),
        ("seq", Align::Left),
        ("detail", Align::Left),
    ]);
    for r in &p.records {
        let (steps, seq, detail) = cells(r);
        t.push(vec![
            r.offset.to_string(),
            r.end.to_string(),
            r.kind.name().into(),
            r.length.to_string(),
            steps,
            seq,
            detail,
        ]);
    }
    t.write(out)?;
    if !p.corrupt.is_empty() {
        writeln!(out, "\ncorrupt regions:")?;
        let mut t = Table::new(&[
            ("block", Align::Right),
            ("offset", Align::Right),
            ("len", Align::Right),
            ("reason", Align::Left),
        ]);
        for c in &p.corrupt {
            t.push(vec![
                block_of(c.offset).to_string(),
                c.offset.to_string(),
                c.len.to_string(),
                c.reason.clone(),
            ]);
        }
        t.write(out)?;
    }
    if p.header().is_none() {
        writeln!(out, "error: no readable segment header")?;
    }
    for (offset, why) in &p.problems {
        writeln!(out, "error: record at offset {offset}: {why}")?;
    }
    if verbose {
        for r in &p.records {
            if let Some(v) = &r.header_json {
                writeln!(out, "\nsegment header at offset {}:", r.offset)?;
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(v).unwrap_or_default()
                )?;
            }
        }
    }
    Ok(())
}

fn segment_json(h: &SegmentHeader) -> Value {
    json!({
        "episode_id": h.schema.episode_id,
        "env_id": h.schema.env_id,
        "chunk_index": h.chunk_index,
        "first_timestep": h.first_timestep,
        "step_payload_bytes": h.schema.step_payload_bytes,
        "channels": h.schema.channels.iter().map(|c| json!({
            "name": c.name,
            "lane": c.lane.prefix(),
            "dtype": c.dtype.code(),
            "shape": c.shape,
        })).collect::<Vec<_>>(),
    })
}

fn record_json(r: &RecordRow, verbose: bool) -> Value {
    let mut v = json!({
        "offset": r.offset,
        "end": r.end,
        "kind": r.kind.name(),
        "length": r.length,
    });
    match &r.kind {
        RecordKind::Segment(h) => {
            v["segment"] = h.as_deref().map_or(Value::Null, segment_json);
            if verbose {
                v["header"] = r.header_json.clone().unwrap_or(Value::Null);
            }
        }
        RecordKind::Steps {
            timesteps,
            seq,
            contiguous,
        } => {
            v["timesteps"] = json!(timesteps);
            v["seq_first"] = json!(seq.map(|s| s.0));
            v["seq_last"] = json!(seq.map(|s| s.1));
            v["seq_contiguous"] = json!(contiguous);
        }
        RecordKind::Empty => {}
        RecordKind::Unknown(k) => v["kind_byte"] = json!(k),
    }
    v
}

/// One JSON object on one line.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_json(p: &JournalPeek, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let doc = json!({
        "path": p.path.display().to_string(),
        "kind": "journal",
        "ok": p.ok(),
        "file_len": p.file_len,
        "block_len": BLOCK_LEN,
        "valid_end": p.valid_end,
        "timesteps": p.timesteps(),
        "segment": p.header().map_or(Value::Null, segment_json),
        "records": p.records.iter().map(|r| record_json(r, verbose)).collect::<Vec<_>>(),
        "corrupt": p.corrupt.iter().map(|c| json!({
            "block": block_of(c.offset),
            "offset": c.offset,
            "len": c.len,
            "reason": c.reason,
        })).collect::<Vec<_>>(),
        "bytes_discarded": p.discarded_bytes(),
        "problems": p.problems.iter().map(|(o, why)| json!({"offset": o, "reason": why})).collect::<Vec<_>>(),
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
