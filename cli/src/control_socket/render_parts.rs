//! The rolling state in `wshard status`'s text, after the rest ([`super::render`]):
//! `[rolling]` and the quota beyond eviction (`status.daemon.rolling`,
//! `status.daemon.quota`), and for each open episode that was split or rolls, the part
//! recording now and the last cut (`status.episodes[].parts`, and
//! `status.multi_episodes[].parts` for a multi-stream episode).

use std::io::{self, Write};

use serde_json::Value;

use super::render::human_bytes;

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The rolling lines of the `status` result `r` (nothing when there is nothing to say).
///
/// # Errors
/// Errors writing to `out`.
pub fn render(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let d = &r["daemon"];
    let eps = r["episodes"].as_array().map_or(&[][..], Vec::as_slice);
    // Multi-stream episodes have their parts beside their streams (`multi_episodes`).
    let multi = r["multi_episodes"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let rolling = d["rolling"]["enabled"] == Value::Bool(true);
    let split = eps
        .iter()
        .chain(multi)
        .any(|e| count(&e["parts"]["part_number"]) > 0);
    let quota = count(&d["quota"]["quota_bytes"]) > 0;
    if rolling || split || quota {
        writeln!(out)?;
    }
    render_daemon(d, out)?;
    render_episodes(eps, rolling, out)?;
    render_episodes(multi, rolling, out)
}

/// The daemon's lines: `[rolling]` when it is on, the quota when one is set.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_daemon(d: &Value, out: &mut dyn Write) -> io::Result<()> {
    let r = &d["rolling"];
    if r["enabled"] == Value::Bool(true) {
        let mut bounds = Vec::new();
        if count(&r["max_bytes"]) > 0 {
            bounds.push(human_bytes(count(&r["max_bytes"])));
        }
        if count(&r["max_duration_ms"]) > 0 {
            bounds.push(format!(
                "{} s",
                count(&r["max_duration_ms"]) as f64 / 1000.0
            ));
        }
        writeln!(
            out,
            "rolling         on: parts of at most {}",
            bounds.join(" or ")
        )?;
    }
    let q = &d["quota"];
    if count(&q["quota_bytes"]) > 0 {
        let state = if q["exceeded"] == Value::Bool(true) {
            format!(
                "EXCEEDED by what may not be evicted (policy {})",
                text(&q["policy"])
            )
        } else {
            "ok".to_owned()
        };
        writeln!(
            out,
            "quota           {} kept of {}: {state}",
            human_bytes(count(&q["kept_bytes"])),
            human_bytes(count(&q["quota_bytes"]))
        )?;
    }
    Ok(())
}

/// One line per open episode that was split (or rolls): the part recording now.
///
/// # Errors
/// Errors writing to `out`.
pub fn render_episodes(eps: &[Value], rolling: bool, out: &mut dyn Write) -> io::Result<()> {
    for e in eps {
        let p = &e["parts"];
        if p.is_null() || (!rolling && count(&p["part_number"]) == 0) {
            continue;
        }
        let last = &p["last_cut"];
        let cut = if last.is_object() {
            format!(
                "; last cut: {} by {}",
                text(&last["finished"]),
                text(&last["reason"])
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "parts of {}: recording {} ({} finished, {} by rolling), {} in {:.1} s{cut}{}",
            text(&e["episode"]),
            text(&p["part"]),
            count(&p["parts_finished"]),
            count(&p["parts_rolled"]),
            human_bytes(count(&p["part_bytes"])),
            p["part_seconds"].as_f64().unwrap_or(0.0),
            p["rolling_error"]
                .as_str()
                .map_or(String::new(), |why| format!("; rolling stopped: {why}"))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_render_parts_of_single_and_multi_stream_episodes_with_the_last_cut() {
        let parts = |part: &str, n: u64, rolled: u64, cut: Value| {
            json!({"part": part, "part_number": n, "parts_finished": n, "parts_rolled": rolled,
                   "part_bytes": 2048, "part_seconds": 1.5, "rolling_error": null,
                   "last_cut": cut})
        };
        let r = json!({
            "daemon": {"rolling": {"enabled": false}, "quota": {"quota_bytes": 0}},
            "episodes": [{"episode": "cam", "parts": parts("cam.0002", 2, 0,
                json!({"finished": "cam.0001", "reason": "split"}))},
                         {"episode": "run/imu", "parts": null}],
            "multi_episodes": [{"episode": "run", "parts": parts("run.0003", 3, 2,
                json!({"finished": "run.0002", "reason": "max_bytes"}))}],
        });
        let mut out = Vec::new();
        render(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("parts of cam: recording cam.0002 (2 finished, 0 by rolling), 2.0 KiB in 1.5 s; last cut: cam.0001 by split"),
            "{text}"
        );
        assert!(
            text.contains("parts of run: recording run.0003 (3 finished, 2 by rolling), 2.0 KiB in 1.5 s; last cut: run.0002 by max_bytes"),
            "{text}"
        );
        assert!(!text.contains("run/imu"), "{text}");
    }
}
