//! Printing a [`DirInspection`]: summary fields, a stream table and an event table, or one
//! JSON object.

use std::io::{self, Write};

use serde_json::json;
use wshard::episode_dir::index::ChannelEntry;

use super::model::{DirInspection, StreamRow};
use crate::output::table::{Align, Table};

fn field(out: &mut dyn Write, key: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(out, "{key:<20} {value}")
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// `q f32[7]`, `flag bool` (a scalar per step).
fn channel_label(c: &ChannelEntry) -> String {
    if c.shape.is_empty() {
        format!("{} {}", c.name, c.dtype)
    } else {
        let dims: Vec<String> = c.shape.iter().map(u64::to_string).collect();
        format!("{} {}[{}]", c.name, c.dtype, dims.join(","))
    }
}

/// `1000` for a ticks stream; `~29.97` (the mean over its span) for a timestamps stream.
fn rate_label(s: &StreamRow) -> String {
    match (s.tick_hz, s.mean_hz) {
        (Some(hz), _) => hz.to_string(),
        (None, Some(m)) => format!("~{m:.2}"),
        (None, None) => "-".to_owned(),
    }
}

fn stream_table(ins: &DirInspection) -> Table {
    let mut t = Table::new(&[
        ("stream", Align::Left),
        ("clock", Align::Left),
        ("rate_hz", Align::Right),
        ("steps", Align::Right),
        ("chunks", Align::Right),
        ("first_t_ns", Align::Right),
        ("last_t_ns", Align::Right),
        ("status", Align::Left),
        ("producer", Align::Left),
        ("channels", Align::Left),
    ]);
    for s in &ins.streams {
        let status = match (&s.status, s.manifest_missing) {
            (Some(st), true) => format!("{st} (no manifest yet)"),
            (st, _) => opt(st.as_ref()),
        };
        t.push(vec![
            s.name.clone(),
            s.clock.clone(),
            rate_label(s),
            s.steps.to_string(),
            s.chunks.to_string(),
            opt(s.first_t_ns),
            opt(s.last_t_ns),
            status,
            opt(s.producer.as_ref()),
            s.channels
                .iter()
                .map(channel_label)
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    t
}

fn event_table(ins: &DirInspection) -> Table {
    let mut t = Table::new(&[
        ("t_ns", Align::Right),
        ("seq", Align::Right),
        ("origin", Align::Left),
        ("by", Align::Left),
        ("label", Align::Left),
        ("kind", Align::Left),
        ("data", Align::Left),
    ]);
    for e in &ins.events {
        t.push(vec![
            e.t_ns.to_string(),
            e.seq.to_string(),
            e.origin.to_owned(),
            e.by.clone(),
            e.label.clone(),
            e.kind.to_owned(),
            e.preview(),
        ]);
    }
    t
}

/// The text report.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_text(ins: &DirInspection, out: &mut dyn Write) -> io::Result<()> {
    field(out, "episode_dir", ins.path.display())?;
    field(out, "episode_id", &ins.episode_id)?;
    field(out, "layout", ins.layout)?;
    if let Some(env) = &ins.env_id {
        field(out, "env_id", env)?;
    }
    field(out, "status", opt(ins.status.as_ref()))?;
    if let Some(closed) = ins.closed {
        field(out, "closed", closed)?;
    }
    if ins.kept {
        field(
            out,
            "kept",
            "yes (a keep mark in its data directory: never evicted)",
        )?;
    }
    if let Some(origin) = &ins.origin {
        field(out, "origin", origin)?;
    }
    if let Some(l) = &ins.split {
        let name = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_owned();
        field(
            out,
            "split",
            format!(
                "part {} of {} (previous {}, next {})",
                l["part"],
                name(&l["episode"]),
                name(&l["previous"]),
                name(&l["next"])
            ),
        )?;
    }
    field(out, "streams", ins.streams.len())?;
    let annotations = ins
        .events
        .iter()
        .filter(|e| e.origin == "annotation")
        .count();
    field(
        out,
        "events",
        format!(
            "{} ({} events, {annotations} annotations)",
            ins.events.len(),
            ins.events.len() - annotations
        ),
    )?;
    if ins.torn_event_bytes > 0 {
        field(
            out,
            "torn_events_tail",
            format!(
                "{} bytes after the last complete line (never acknowledged; ignored)",
                ins.torn_event_bytes
            ),
        )?;
    }
    writeln!(out)?;
    stream_table(ins).write(out)?;
    if !ins.events.is_empty() {
        writeln!(out)?;
        event_table(ins).write(out)?;
    }
    Ok(())
}

/// One JSON object: the summary, every stream, every event with its full `data`.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_json(ins: &DirInspection, out: &mut dyn Write) -> io::Result<()> {
    let streams: Vec<_> = ins
        .streams
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "clock": s.clock,
                "tick_hz": s.tick_hz,
                "mean_hz": s.mean_hz,
                "steps": s.steps,
                "chunks": s.chunks,
                "first_t_ns": s.first_t_ns,
                "last_t_ns": s.last_t_ns,
                "status": s.status,
                "producer": s.producer,
                "manifest_missing": s.manifest_missing,
                "channels": s.channels.iter().map(|c| json!({
                    "name": c.name, "lane": c.lane, "dtype": c.dtype, "shape": c.shape,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let events: Vec<_> = ins
        .events
        .iter()
        .map(|e| {
            json!({
                "t_ns": e.t_ns,
                "seq": e.seq,
                "origin": e.origin,
                "by": e.by,
                "label": e.label,
                "kind": e.kind,
                "data": e.data,
            })
        })
        .collect();
    let doc = json!({
        "path": ins.path.display().to_string(),
        "episode_id": ins.episode_id,
        "layout": ins.layout,
        "env_id": ins.env_id,
        "status": ins.status,
        "closed": ins.closed,
        "origin": ins.origin,
        "streams": streams,
        "events": events,
        "torn_event_bytes": ins.torn_event_bytes,
        "kept": ins.kept,
        "split": ins.split,
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
