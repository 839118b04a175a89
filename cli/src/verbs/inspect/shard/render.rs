//! Printing an [`Inspection`]: a text report with a block table, or one JSON object.

use std::io::{self, Write};

use serde_json::{json, Value};
use wshard::consts::MAGIC;
use wshard::entry::content_type;
use wshard::episode::Timebase;

use super::model::{BlockKind, BlockRow, Inspection};
use crate::output::table::{Align, Table};
use crate::shard_view::describe::{
    codec_code_name, crc_hex, flags_label, header_flag_names, role_label, role_name,
};
use crate::shard_view::episode_view::timebase_label;

fn field(out: &mut dyn Write, key: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(out, "{key:<20} {value}")
}

fn dtype_label(row: &BlockRow) -> &str {
    match &row.kind {
        BlockKind::Json => "json",
        BlockKind::Tensor(t) => &t.dtype,
        BlockKind::Unknown => "-",
    }
}

fn codec_label(row: &BlockRow) -> &'static str {
    row.codec.map_or("unknown", |c| c.name())
}

fn write_header(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    let h = &ins.header;
    field(out, "file", ins.path.display())?;
    field(
        out,
        "magic",
        format!("{} version {}", String::from_utf8_lossy(&MAGIC), h.version),
    )?;
    field(out, "role", role_label(h.role))?;
    field(out, "flags", flags_label(h.flags))?;
    field(out, "alignment", h.alignment)?;
    field(
        out,
        "compression_default",
        format!(
            "{} ({})",
            h.compression_default,
            codec_code_name(h.compression_default)
        ),
    )?;
    field(out, "index_entry_size", h.index_entry_size)?;
    field(out, "entry_count", h.entry_count)?;
    field(out, "string_table_offset", h.string_table_offset)?;
    field(out, "data_section_offset", h.data_section_offset)?;
    field(out, "schema_offset", h.schema_offset)?;
    if h.total_file_size == ins.file_len {
        field(out, "total_file_size", h.total_file_size)
    } else {
        field(
            out,
            "total_file_size",
            format!("{} (the file is {} bytes)", h.total_file_size, ins.file_len),
        )
    }
}

fn write_summary(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    if let Some(view) = &ins.episode {
        if let Some(m) = &view.meta {
            field(out, "episode_id", &m.id)?;
            field(out, "env_id", &m.env_id)?;
            field(out, "timebase", timebase_label(&m.timebase))?;
            if let Some(c) = m.chunk {
                let total = c
                    .total_chunks
                    .map_or_else(|| "?".to_owned(), |t| t.to_string());
                field(out, "chunk", format!("{} of {total}", c.chunk_index))?;
            }
            if let Some([s, e]) = m.timestep_range {
                field(out, "timestep_range", format!("[{s}, {e}]"))?;
            }
        }
        let t = view
            .length
            .map_or_else(|| "unknown".to_owned(), |t| t.to_string());
        field(out, "length_T", t)?;
    }
    if let Some(m) = &ins.manifest {
        field(out, "episode_id", &m.episode_id)?;
        if !m.env_id.is_empty() {
            field(out, "env_id", &m.env_id)?;
        }
        field(out, "total_timesteps", m.total_timesteps)?;
        field(out, "chunks", m.chunks.len())?;
        if let Some(s) = &m.status {
            field(out, "status", s)?;
        }
    }
    Ok(())
}

fn block_table(ins: &Inspection) -> Table {
    let t = ins.episode.as_ref().and_then(|v| v.length);
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("name", Align::Left),
        ("dtype", Align::Left),
        ("shape", Align::Left),
        ("codec", Align::Left),
        ("disk", Align::Right),
        ("orig", Align::Right),
        ("offset", Align::Right),
        ("crc32c", Align::Left),
        ("crc", Align::Left),
    ]);
    for row in &ins.blocks {
        let shape = match &row.kind {
            BlockKind::Tensor(tt) => tt.shape_label(t),
            _ => "-".to_owned(),
        };
        table.push(vec![
            row.index.to_string(),
            row.name.clone(),
            dtype_label(row).to_owned(),
            shape,
            codec_label(row).to_owned(),
            row.entry.disk_size.to_string(),
            row.entry.orig_size.to_string(),
            row.entry.data_offset.to_string(),
            crc_hex(row.entry.checksum),
            row.crc_label().to_owned(),
        ]);
    }
    table
}

/// The text report: header fields, episode or manifest summary, block table, problems, and
/// with `verbose` the pretty JSON of every `meta/*` block.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_text(ins: &Inspection, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    write_header(ins, out)?;
    if ins.episode.is_some() || ins.manifest.is_some() {
        writeln!(out)?;
        write_summary(ins, out)?;
    }
    writeln!(out)?;
    block_table(ins).write(out)?;
    for row in &ins.blocks {
        if let Some(e) = &row.error {
            writeln!(out, "error: block `{}` (#{}): {e}", row.name, row.index)?;
        }
    }
    for note in &ins.notes {
        writeln!(out, "error: {note}")?;
    }
    if verbose {
        for m in &ins.meta {
            writeln!(out)?;
            writeln!(out, "{}:", m.name)?;
            match &m.value {
                Ok(v) => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(v).unwrap_or_default()
                )?,
                Err(e) => writeln!(out, "(unreadable: {e})")?,
            }
        }
    }
    Ok(())
}

fn timebase_json(tb: &Timebase) -> Value {
    match *tb {
        Timebase::Ticks { tick_hz } => {
            json!({"type": tb.type_name(), "tick_hz": tick_hz, "dt_ns": tb.dt_ns()})
        }
        Timebase::TimestampsNs { dt_ns } => json!({"type": tb.type_name(), "dt_ns": dt_ns}),
    }
}

fn summary_json(ins: &Inspection) -> (Value, Value) {
    let episode = ins.episode.as_ref().map_or(Value::Null, |view| {
        let mut v = json!({ "length_T": view.length });
        if let (Some(m), Some(obj)) = (&view.meta, v.as_object_mut()) {
            obj.insert("episode_id".into(), json!(m.id));
            obj.insert("env_id".into(), json!(m.env_id));
            obj.insert("timebase".into(), timebase_json(&m.timebase));
            obj.insert("chunk_index".into(), json!(m.chunk.map(|c| c.chunk_index)));
            obj.insert(
                "total_chunks".into(),
                json!(m.chunk.and_then(|c| c.total_chunks)),
            );
            obj.insert("timestep_range".into(), json!(m.timestep_range));
        }
        v
    });
    let manifest = ins.manifest.as_ref().map_or(Value::Null, |m| {
        json!({
            "episode_id": m.episode_id,
            "env_id": m.env_id,
            "total_timesteps": m.total_timesteps,
            "chunks": m.chunks.len(),
            "status": m.status,
        })
    });
    (episode, manifest)
}

fn block_json(row: &BlockRow, t: Option<u64>) -> Value {
    let (shape, step_shape) = match &row.kind {
        BlockKind::Tensor(tt) => (json!(tt.shape(t)), json!(tt.step_shape)),
        _ => (Value::Null, Value::Null),
    };
    let dtype = match row.kind {
        BlockKind::Unknown => Value::Null,
        _ => json!(dtype_label(row)),
    };
    json!({
        "index": row.index,
        "name": row.name,
        "dtype": dtype,
        "shape": shape,
        "step_shape": step_shape,
        "codec": codec_label(row),
        "flags": row.entry.flags,
        "content_type": content_type::name(row.entry.content_type),
        "disk_size": row.entry.disk_size,
        "orig_size": row.entry.orig_size,
        "data_offset": row.entry.data_offset,
        "crc32c": crc_hex(row.entry.checksum),
        "computed_crc32c": row.computed_crc.map(crc_hex),
        "crc_checked": row.crc_checked,
        "crc_ok": row.read.then_some(row.error.is_none()),
        "error": row.error,
    })
}

/// One JSON object with the header, summary, blocks and problems; with `verbose` also a
/// `meta` object holding each `meta/*` block's JSON (or `{"error": "..."}` when unreadable).
///
/// # Errors
/// Errors writing to `out`.
pub fn write_json(ins: &Inspection, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let h = &ins.header;
    let t = ins.episode.as_ref().and_then(|v| v.length);
    let (episode, manifest) = summary_json(ins);
    let mut doc = json!({
        "path": ins.path.display().to_string(),
        "ok": ins.ok(),
        "file_size": ins.file_len,
        "header": {
            "magic": String::from_utf8_lossy(&MAGIC),
            "version": h.version,
            "role": h.role,
            "role_name": role_name(h.role),
            "flags": h.flags,
            "flags_hex": format!("{:#06x}", h.flags),
            "flag_names": header_flag_names(h.flags),
            "alignment": h.alignment,
            "compression_default": h.compression_default,
            "compression_default_name": codec_code_name(h.compression_default),
            "index_entry_size": h.index_entry_size,
            "entry_count": h.entry_count,
            "string_table_offset": h.string_table_offset,
            "data_section_offset": h.data_section_offset,
            "schema_offset": h.schema_offset,
            "total_file_size": h.total_file_size,
        },
        "episode": episode,
        "manifest": manifest,
        "blocks": ins.blocks.iter().map(|b| block_json(b, t)).collect::<Vec<_>>(),
        "notes": ins.notes,
    });
    if verbose {
        let meta: serde_json::Map<String, Value> = ins
            .meta
            .iter()
            .map(|m| {
                let v = match &m.value {
                    Ok(v) => v.clone(),
                    Err(e) => json!({ "error": e.to_string() }),
                };
                (m.name.clone(), v)
            })
            .collect();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("meta".into(), Value::Object(meta));
        }
    }
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
