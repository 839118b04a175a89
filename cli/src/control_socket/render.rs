//! Printing the control socket's `status`, `episodes` and `close` results as text.
//!
//! The two episode tables use the same words for the same figures: `timesteps`,
//! `received` (payload bytes received) and `on disk` (chunk files published).

use std::io::{self, Write};

use serde_json::Value;

use crate::output::table::{Align, Table};

/// `1.5 GiB`, `512 B`.
#[must_use]
#[allow(clippy::cast_precision_loss)] // display only
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// `3d04h`, `1h02m`, `4m05s`, `12.3s`.
#[must_use]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // display only
pub fn human_duration(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "-".into();
    }
    if secs < 60.0 {
        return format!("{secs:.1}s");
    }
    let s = secs as u64;
    match s {
        0..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

fn num(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `yes` for `true`, blank otherwise (a flag column).
fn yes_or_blank(v: &Value) -> String {
    if *v == Value::Bool(true) {
        "yes".into()
    } else {
        String::new()
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// A byte count, or `-` when the daemon does not know it (`null`).
fn bytes_cell(v: &Value) -> String {
    v.as_u64().map_or_else(|| "-".into(), human_bytes)
}

/// The column of an episode's timesteps (received so far while open, the manifest's
/// total once finished), in both tables.
const TIMESTEPS: &str = "timesteps";
/// The column of the payload bytes received from the client (`received_bytes`), in both
/// tables.
const RECEIVED: &str = "received";
/// The column of the published chunk files' size (`on_disk_bytes`), in both tables.
const ON_DISK: &str = "on disk";

/// The `status` result.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_status(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let d = &r["daemon"];
    writeln!(
        out,
        "wshardd {}  pid {}  up {}",
        num(&d["version"]),
        num(&d["pid"]),
        human_duration(d["uptime_s"].as_f64().unwrap_or(0.0))
    )?;
    writeln!(out, "data_dir        {}", num(&d["data_dir"]))?;
    writeln!(out, "control socket  {}", num(&d["control_socket"]))?;
    let disk = &d["disk"];
    let free = disk["free_bytes"].as_u64().map_or_else(
        || "not measured yet".into(),
        |f| format!("{} free", human_bytes(f)),
    );
    writeln!(
        out,
        "disk            {free}, {} (low watermark {}, high {})",
        num(&disk["state"]),
        human_bytes(u(&disk["low_watermark_free_bytes"])),
        human_bytes(u(&disk["high_watermark_free_bytes"]))
    )?;
    let c = &d["counters"];
    writeln!(
        out,
        "connections     {} active, {} accepted, {} refused",
        num(&d["connections_active"]),
        num(&c["connections_accepted"]),
        num(&c["connections_refused"])
    )?;
    writeln!(
        out,
        "connections cut {} no HELLO in time, {} without an episode too long, {} not reading",
        num(&c["connections_cut_handshake"]),
        num(&c["connections_cut_no_episode"]),
        num(&c["connections_cut_write"])
    )?;
    writeln!(
        out,
        "episodes        {} opened, {} finalized, {} stopped, {} refused (disk low)",
        num(&c["episodes_opened"]),
        num(&c["episodes_finalized"]),
        num(&c["episodes_stopped"]),
        num(&c["episodes_refused_disk"])
    )?;
    render_upload(&r["upload"], out)?;
    let kept: Vec<String> = d["kept_episodes"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(num)
        .collect();
    if !kept.is_empty() {
        writeln!(out, "kept            {} (never evicted)", kept.join(", "))?;
    }
    let recovery = d["recovery"].as_array().map_or(&[][..], Vec::as_slice);
    if recovery.is_empty() {
        writeln!(out, "recovery        nothing to recover at startup")?;
    } else {
        writeln!(out, "\nrecovered at startup:")?;
        let mut t = Table::new(&[
            ("episode", Align::Left),
            ("was", Align::Left),
            ("timesteps replayed", Align::Right),
            ("timesteps in episode", Align::Right),
            ("chunks recovered", Align::Right),
            ("discarded", Align::Right),
            ("quarantined", Align::Right),
            ("lost data", Align::Left),
        ]);
        for x in recovery {
            t.push(vec![
                num(&x["episode"]),
                num(&x["previous_status"]),
                num(&x["timesteps_recovered"]),
                num(&x["total_timesteps"]),
                num(&x["chunks_recovered"]),
                human_bytes(u(&x["bytes_discarded"])),
                num(&x["files_quarantined"]),
                if x["lost_data"] == Value::Bool(true) {
                    "yes"
                } else {
                    "no"
                }
                .into(),
            ]);
        }
        t.write(out)?;
    }
    let left_alone = d["recovery_left_alone"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for x in left_alone {
        writeln!(
            out,
            "left alone at startup: {}: not an episode ({})",
            num(&x["path"]),
            num(&x["reason"])
        )?;
    }
    let eps = r["episodes"].as_array().map_or(&[][..], Vec::as_slice);
    writeln!(out, "\nopen episodes: {}", eps.len())?;
    if eps.is_empty() {
        return Ok(());
    }
    // The kept column only when some open episode is kept.
    let any_kept = eps.iter().any(|e| e["kept"] == Value::Bool(true));
    let mut columns = vec![
        ("episode", Align::Left),
        ("client", Align::Left),
        ("uid", Align::Right),
        ("pid", Align::Right),
        ("via", Align::Left),
        ("durab", Align::Left),
        ("age", Align::Right),
        (TIMESTEPS, Align::Right),
        ("durable", Align::Right),
        ("steps/s", Align::Right),
        (RECEIVED, Align::Right),
        ("MiB/s", Align::Right),
        (ON_DISK, Align::Right),
        ("queue", Align::Right),
        ("chunks", Align::Right),
        ("fsync ms", Align::Right),
        ("dropped", Align::Right),
        ("gaps", Align::Right),
    ];
    if any_kept {
        columns.push(("kept", Align::Left));
    }
    let mut t = Table::new(&columns);
    for e in eps {
        let mut row = vec![
            num(&e["episode"]),
            num(&e["client"]),
            num(&e["peer_uid"]),
            num(&e["peer_pid"]),
            num(&e["transport"]),
            num(&e["durability"]),
            human_duration(e["age_s"].as_f64().unwrap_or(0.0)),
            num(&e["received"]),
            num(&e["durable"]),
            format!("{:.1}", e["timesteps_per_s"].as_f64().unwrap_or(0.0)),
            bytes_cell(&e["received_bytes"]),
            format!(
                "{:.2}",
                e["bytes_per_s"].as_f64().unwrap_or(0.0) / f64::from(1u32 << 20)
            ),
            bytes_cell(&e["on_disk_bytes"]),
            num(&e["queue_depth"]),
            num(&e["chunks"]),
            format!("{:.2}", e["last_fsync_us"].as_f64().unwrap_or(0.0) / 1000.0),
            num(&e["dropped_steps"]),
            num(&e["gaps"]),
        ];
        if any_kept {
            row.push(yes_or_blank(&e["kept"]));
        }
        t.push(row);
    }
    t.write(out)?;
    render_producer_counters(eps, out)
}

/// The uploader's line(s) of `status` (`status.upload`); nothing when it is off.
fn render_upload(up: &Value, out: &mut dyn Write) -> io::Result<()> {
    if up["enabled"] != Value::Bool(true) {
        return Ok(());
    }
    let q = &up["queue"];
    writeln!(
        out,
        "upload          {} to {} as {}: {} pending, {} sent; episodes {} queued, {} uploading, \
         {} published, {} evicted",
        num(&up["state"]),
        num(&up["dataset"]),
        num(&up["robot"]),
        human_bytes(u(&up["pending_bytes"])),
        human_bytes(u(&up["sent_bytes_total"])),
        u(&q["queued"]) + u(&q["uploaded"]),
        num(&q["uploading"]),
        num(&q["published"]),
        num(&q["evicted"])
    )?;
    if let Some(c) = up["current"].as_object() {
        writeln!(
            out,
            "upload current  {}/{} ({}): part {} of {}",
            num(&c["episode"]),
            num(&c["file"]),
            human_bytes(u(&c["size"])),
            num(&c["parts_done"]),
            num(&c["parts_total"])
        )?;
    }
    if let Some(e) = up["last_error"].as_object() {
        writeln!(
            out,
            "upload error    {}: {}",
            num(&e["kind"]),
            e["message"].as_str().unwrap_or("").replace('\n', " ")
        )?;
    }
    Ok(())
}

/// The producers' own counters (`COUNTERS`, protocol version 2) of the open episodes and
/// streams, one row per counter; nothing when no producer sent any.
fn render_producer_counters(eps: &[Value], out: &mut dyn Write) -> io::Result<()> {
    let mut t = Table::new(&[
        ("episode", Align::Left),
        ("counter", Align::Left),
        ("value", Align::Right),
    ]);
    let mut any = false;
    for e in eps {
        let Some(counters) = e["producer_counters"].as_object() else {
            continue;
        };
        for (name, value) in counters {
            any = true;
            t.push(vec![num(&e["episode"]), name.clone(), num(value)]);
        }
    }
    if !any {
        return Ok(());
    }
    writeln!(out, "\nproducer counters:")?;
    t.write(out)
}

/// The `episodes` result.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_episodes(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let eps = r["episodes"].as_array().map_or(&[][..], Vec::as_slice);
    if eps.is_empty() {
        return writeln!(out, "no episodes");
    }
    // The upload columns only when the uploader is on (some row has an `upload`).
    let uploads = eps.iter().any(|e| e["upload"].is_object());
    let mut columns = vec![
        ("episode", Align::Left),
        ("status", Align::Left),
        (TIMESTEPS, Align::Right),
        ("chunks", Align::Right),
        (RECEIVED, Align::Right),
        (ON_DISK, Align::Right),
    ];
    // The kept column only when some episode is kept (`wshard keep`).
    let any_kept = eps.iter().any(|e| e["kept"] == Value::Bool(true));
    if any_kept {
        columns.push(("kept", Align::Left));
    }
    if uploads {
        columns.push(("upload", Align::Left));
        columns.push(("pending", Align::Right));
    }
    columns.push(("reason", Align::Left));
    let mut t = Table::new(&columns);
    for e in eps {
        let status = if e["open"] == Value::Bool(true) {
            "recording (open)".to_owned()
        } else {
            num(&e["status"])
        };
        let mut row = vec![
            num(&e["episode"]),
            status,
            num(&e["timesteps"]),
            num(&e["chunks"]),
            bytes_cell(&e["received_bytes"]),
            bytes_cell(&e["on_disk_bytes"]),
        ];
        if any_kept {
            row.push(yes_or_blank(&e["kept"]));
        }
        if uploads {
            let up = &e["upload"];
            row.push(up["state"].as_str().unwrap_or("-").to_owned());
            row.push(bytes_cell(&up["pending_bytes"]));
        }
        row.push(e["reason"].as_str().unwrap_or("").replace('\n', " "));
        t.push(row);
    }
    t.write(out)
}

/// The `close` result.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_close(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    // A split episode: the part the verb finalized, when another id named it.
    let part = match r["part"].as_str() {
        Some(p) if r["episode"].as_str() != Some(p) => format!(" (part `{p}`)"),
        _ => String::new(),
    };
    writeln!(
        out,
        "episode `{}`{part} finalized as {} ({}): {} timesteps in {} chunks",
        num(&r["episode"]),
        num(&r["status"]),
        num(&r["reason"]),
        num(&r["timesteps"]),
        num(&r["chunks"])
    )
}

/// The `keep` result.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_keep(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let kept = r["kept"] == Value::Bool(true);
    let changed = r["changed"] == Value::Bool(true);
    let what = match (kept, changed) {
        (true, true) => "is kept now: it is never evicted",
        (true, false) => "was kept already: it is never evicted",
        (false, true) => "is no longer kept: it may be evicted once published",
        (false, false) => "was not kept",
    };
    writeln!(out, "episode `{}` {what}", num(&r["episode"]))?;
    // The producer's id of an open split episode: the part recording now too.
    if let Some(part) = r["part"].as_str() {
        let also = if kept { "kept too" } else { "released too" };
        writeln!(out, "part `{part}` (recording now) {also}")?;
    }
    Ok(())
}

/// The `annotate` result.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_annotate(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "episode `{}`: annotation {} `{}` at t_ns {} added to {}",
        num(&r["episode"]),
        num(&r["seq"]),
        num(&r["label"]),
        num(&r["t_ns"]),
        num(&r["file"])
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_human_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(human_duration(12.34), "12.3s");
        assert_eq!(human_duration(3725.0), "1h02m");
        assert_eq!(human_duration(245.0), "4m05s");
    }

    #[test]
    fn control_render_upload_lines_and_columns() {
        let status = json!({"daemon": {"version": "0.1.0", "pid": 1, "uptime_s": 1.0,
            "disk": {}, "counters": {}, "recovery": []},
            "upload": {"enabled": true, "state": "offline", "dataset": "lab/pick",
                "robot": "arm-3", "pending_bytes": 2048, "sent_bytes_total": 1024,
                "queue": {"queued": 1, "uploading": 1, "uploaded": 0, "published": 2,
                          "evicted": 0},
                "current": {"episode": "ep9", "file": "c", "size": 4096, "parts_done": 1,
                            "parts_total": 4},
                "last_error": {"kind": "endpoint_unreachable", "message": "down\nnow"}},
            "episodes": []});
        let mut out = Vec::new();
        render_status(&status, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("upload          offline to lab/pick as arm-3: 2.0 KiB pending, 1.0 KiB sent; episodes 1 queued, 1 uploading, 2 published, 0 evicted"),
            "{text}"
        );
        assert!(
            text.contains("upload current  ep9/c (4.0 KiB): part 1 of 4"),
            "{text}"
        );
        assert!(
            text.contains("upload error    endpoint_unreachable: down now"),
            "{text}"
        );
        let off = json!({"daemon": {"disk": {}, "counters": {}, "recovery": []},
            "upload": {"enabled": false, "state": "disabled"}, "episodes": []});
        let mut out = Vec::new();
        render_status(&off, &mut out).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("upload"));
        let eps = json!({"episodes": [
            {"episode": "a", "open": true, "status": "recording", "timesteps": 5, "chunks": 0,
             "received_bytes": 1536, "on_disk_bytes": 0, "reason": null, "upload": null},
            {"episode": "b", "open": false, "status": "complete", "timesteps": 9, "chunks": 1,
             "received_bytes": null, "on_disk_bytes": 2048, "reason": null,
             "upload": {"state": "uploading", "pending_bytes": 1024}},
        ]});
        let mut out = Vec::new();
        render_episodes(&eps, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("on disk  upload     pending  reason"),
            "{text}"
        );
        assert!(
            lines[1].contains(" -  ") && lines[2].contains("uploading  1.0 KiB"),
            "{text}"
        );
    }

    #[test]
    fn control_render_episodes_table() {
        let r = json!({"episodes": [
            {"episode": "a", "open": true, "status": "recording", "timesteps": 5, "chunks": 0,
             "received_bytes": 1536, "on_disk_bytes": 0, "reason": null},
            {"episode": "b", "open": false, "status": "interrupted", "timesteps": 9, "chunks": 1,
             "received_bytes": null, "on_disk_bytes": 2048, "reason": "closed by operator (uid 0)"},
        ]});
        let mut out = Vec::new();
        render_episodes(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0], "episode  status            timesteps  chunks  received  on disk  reason",
            "{text}"
        );
        assert_eq!(
            lines[1].trim_end(),
            "a        recording (open)          5       0   1.5 KiB      0 B"
        );
        assert_eq!(
            lines[2],
            "b        interrupted               9       1         -  2.0 KiB  closed by operator (uid 0)"
        );
    }

    #[test]
    fn control_render_kept_column_and_keep_reply() {
        let r = json!({"episodes": [
            {"episode": "a", "open": false, "status": "complete", "timesteps": 5, "chunks": 1,
             "received_bytes": null, "on_disk_bytes": 1024, "reason": null, "kept": true},
            {"episode": "b", "open": false, "status": "aborted", "timesteps": 9, "chunks": 1,
             "received_bytes": null, "on_disk_bytes": 2048, "reason": null, "kept": false},
        ]});
        let mut out = Vec::new();
        render_episodes(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("on disk  kept"), "{text}");
        assert!(lines[1].trim_end().ends_with("1.0 KiB  yes"), "{text}");
        assert!(lines[2].trim_end().ends_with("2.0 KiB"), "{text}");
        for (kept, changed, want) in [
            (true, true, "is kept now"),
            (true, false, "was kept already"),
            (false, true, "is no longer kept"),
            (false, false, "was not kept"),
        ] {
            let mut out = Vec::new();
            render_keep(
                &json!({"episode": "a", "kept": kept, "changed": changed}),
                &mut out,
            )
            .unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.starts_with("episode `a` ") && text.contains(want),
                "{text}"
            );
        }
    }
}
