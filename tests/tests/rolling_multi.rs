//! `rolling_multi_*`: the rolling state of a multi-stream episode under `[rolling]`, as
//! `wshard status` (text and `--json`), `wshard metrics`, `wshard episodes` and
//! `wshard inspect` show it while its real producers record: the part recording now, the
//! parts made (by rolling), and why the last part was cut (the bound it reached, or
//! `split`).

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_e2e::control_cli::{json_ok, wshard};
use wshard_e2e::multi::{episode_close, rolling_pair, rolling_pair_with, RollingPair};
use wshard_e2e::parts::part_id;
use wshard_e2e::raw::RawConn;
use wshard_e2e::{data, Daemon, TIMEOUT};
use wshard_ingest_proto::{Durability, Outcome};

const EP: &str = "mroll-status";

/// The `status` entry of the open multi-stream episode `ep`.
fn multi_status(d: &Daemon, ep: &str) -> Value {
    let st = json_ok(d, &["status", "--json"]);
    st["multi_episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["episode"] == ep))
        .cloned()
        .unwrap_or_else(|| panic!("{ep} not in multi_episodes: {st}"))
}

/// Send the next `n.0` timesteps of `joints` on `a` and `n.1` of `imu` on `b` (`sent`
/// so far, counted on), each acknowledged.
fn push(a: &mut RawConn, b: &mut RawConn, sent: &mut (u64, u64), n: (u64, u64)) {
    a.timesteps(&data::channels(), sent.0..sent.0 + n.0);
    b.timesteps(&data::small_channels(), sent.1..sent.1 + n.1);
    *sent = (sent.0 + n.0, sent.1 + n.1);
    a.flush_until(sent.0);
    b.flush_until(sent.1);
}

/// [`push`] batches of `n` until `ep`'s status counts `rolled` parts cut by rolling; its
/// `status` entry then.
fn record_until_rolled(
    d: &Daemon,
    ep: &str,
    (a, b): (&mut RawConn, &mut RawConn),
    sent: &mut (u64, u64),
    n: (u64, u64),
    rolled: u64,
) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        push(a, b, sent, n);
        let m = multi_status(d, ep);
        if m["parts"]["parts_rolled"].as_u64().unwrap() >= rolled {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {rolled} rolling cuts: {m}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stdout(d: &Daemon, args: &[&str]) -> String {
    let o = wshard(d, args);
    assert_eq!(o.status.code(), Some(0), "wshard {args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn rolling_multi_status_metrics_episodes_inspect_show_parts_and_cut_reason() {
    let RollingPair {
        d,
        owner: mut o,
        joints: mut a,
        imu: mut b,
    } = rolling_pair(EP, 60, Durability::Ack);
    let dd = d.data_dir();
    let mut sent = (0, 0);
    // Before any cut: part 0, nothing rolled.
    push(&mut a, &mut b, &mut sent, (10, 0));
    let m = multi_status(&d, EP);
    assert_eq!(m["parts"]["part"], EP, "{m}");
    assert_eq!(m["parts"]["part_number"], 0, "{m}");
    assert_eq!(m["parts"]["last_cut"], Value::Null, "{m}");
    let mut streams: Vec<_> = m["streams"].as_array().unwrap().clone();
    streams.sort_by_key(|s| s.to_string());
    assert_eq!(streams, ["imu", "joints"], "{m}");
    // Record until rolling made two parts.
    let deadline = Instant::now() + TIMEOUT;
    let m = record_until_rolled(&d, EP, (&mut a, &mut b), &mut sent, (10, 2), 2);
    let p = &m["parts"];
    let n = p["part_number"].as_u64().unwrap();
    let rolled = p["parts_rolled"].as_u64().unwrap();
    assert_eq!(n, rolled, "every cut by rolling: {m}");
    assert_eq!(p["part"], part_id(EP, n), "{m}");
    assert_eq!(p["parts_finished"], n, "{m}");
    assert_eq!(p["last_cut"]["reason"], "max_bytes", "{m}");
    assert_eq!(p["last_cut"]["finished"], part_id(EP, n - 1), "{m}");
    assert_eq!(p["rolling_error"], Value::Null, "{m}");
    assert!(
        p["part_bytes"].is_u64() && p["part_seconds"].is_f64(),
        "{m}"
    );

    // A cut by hand says so, and counts as no rolled part (each stream needs a timestep
    // in the part first).
    loop {
        let o_split = wshard(&d, &["split", EP, "--json"]);
        let v: Value = serde_json::from_slice(&o_split.stdout).unwrap();
        if v["error"]["code"] == "EMPTY_PART" && Instant::now() < deadline {
            push(&mut a, &mut b, &mut sent, (1, 1));
            continue;
        }
        assert_eq!(o_split.status.code(), Some(0), "{v}");
        break;
    }
    let m = multi_status(&d, EP);
    let n = m["parts"]["part_number"].as_u64().unwrap();
    let rolled = m["parts"]["parts_rolled"].as_u64().unwrap();
    assert!(n > rolled, "{m}");
    assert_eq!(m["parts"]["last_cut"]["reason"], "split", "{m}");
    let part = part_id(EP, n);

    let text = stdout(&d, &["status"]);
    let line = format!("parts of {EP}: recording {part} ({n} finished, {rolled} by rolling)");
    assert!(text.contains(&line), "{line} not in {text}");
    assert!(
        text.contains(&format!("last cut: {} by split", part_id(EP, n - 1))),
        "{text}"
    );
    let metrics = stdout(&d, &["metrics"]);
    for series in [
        format!("wshardd_episode_part{{episode=\"{EP}\",part=\"{part}\"}} {n}"),
        format!("wshardd_episode_parts_rolled_total{{episode=\"{EP}\",part=\"{part}\"}} {rolled}"),
    ] {
        assert!(metrics.contains(&series), "{series} not in {metrics}");
    }
    let eps = json_ok(&d, &["episodes", "--json"]);
    let list = eps["episodes"].as_array().unwrap();
    let row = |id: &str| list.iter().find(|e| e["episode"] == id).cloned().unwrap();
    let open = row(&part);
    assert_eq!(open["open"], true, "{open}");
    assert_eq!(open["part_of"], EP, "{open}");
    assert_eq!(open["parts"]["parts_rolled"], rolled, "{open}");
    assert_eq!(open["parts"]["last_cut"]["reason"], "split", "{open}");
    let first = row(&part_id(EP, 1));
    assert_eq!(first["split"]["previous"], EP, "{first}");
    assert_eq!(first["split"]["next"], part_id(EP, 2), "{first}");
    let inspect = std::process::Command::new(wshard_e2e::bins::wshard())
        .arg("inspect")
        .arg(dd.join(part_id(EP, 1)))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        shown.contains(&format!(
            "part 1 of {EP} (previous {EP}, next {})",
            part_id(EP, 2)
        )),
        "{shown}"
    );

    a.close(Outcome::Completed, sent.0);
    b.close(Outcome::Completed, sent.1);
    assert_eq!(episode_close(&mut o), 0);
}

/// `max_duration_ms`: the episode is cut when one of its streams spans it (`t_ns` 10 ms
/// apart: 20 joints timesteps span 190 ms), and status and the metrics say so.
#[test]
fn rolling_multi_by_duration_names_the_bound_in_status_and_metrics() {
    const EP: &str = "mroll-span";
    let RollingPair {
        d,
        owner: mut o,
        joints: mut a,
        imu: mut b,
    } = rolling_pair_with(EP, "max_duration_ms = 200", Durability::Ack);
    let mut sent = (0, 0);
    let m = record_until_rolled(&d, EP, (&mut a, &mut b), &mut sent, (5, 1), 1);
    let p = &m["parts"];
    let n = p["part_number"].as_u64().unwrap();
    assert_eq!(p["last_cut"]["reason"], "max_duration_ms", "{m}");
    assert_eq!(p["last_cut"]["finished"], part_id(EP, n - 1), "{m}");
    // The finished part spans the bound (the cut comes after the step that reached it).
    let first = wshard_e2e::multi::wait_index_final(&d.data_dir(), EP, TIMEOUT).unwrap();
    let joints = first.stream("joints").unwrap();
    let span = joints.last_t_ns.unwrap() - joints.first_t_ns.unwrap();
    assert!(span >= 200_000_000, "{span} ns: {first:?}");
    let metrics = stdout(&d, &["metrics"]);
    let part = p["part"].as_str().unwrap();
    let series = format!("wshardd_episode_part_seconds{{episode=\"{EP}\",part=\"{part}\"}}");
    assert!(metrics.contains(&series), "{series} not in {metrics}");
    a.close(Outcome::Completed, sent.0);
    b.close(Outcome::Completed, sent.1);
    assert_eq!(episode_close(&mut o), 0);
}
