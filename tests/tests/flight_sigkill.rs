//! The flight recorder and SIGKILL of the real daemon: a trigger window pending when the
//! daemon dies is built at the next start from the ring's files, holding every acknowledged
//! step inside it.

use serde_json::json;
use wshard_e2e::data;
use wshard_e2e::flight::*;

#[test]
fn flight_sigkill_with_a_window_pending_keeps_every_acknowledged_step() {
    let mut d = daemon();
    let ch = data::channels();
    let mut c = open_flight(&d, "crashy", &json!({"ring_seconds": 1}));
    c.timesteps(&ch, 0..200);
    c.flush_until(200);
    let r = trigger_ok(&d, json!({"verb":"trigger","pre_ms":500,"post_ms":5000}));
    let w = r["episode"].as_str().expect("w").to_owned();
    // Part of the post-window, acknowledged, then the daemon dies.
    c.timesteps(&ch, 200..260);
    let acked = c.flush_until(260);
    let _ = d.kill9();
    drop(c);
    d.restart();
    wait_window(&d, &w);
    let t = data::t_ns(199);
    check_exact(
        &window_stream(&d, &w, "crashy"),
        &ch,
        first_at(t - 500 * NS_PER_MS)..=acked - 1,
    );
    verify(&d.data_dir().join(&w));
    verify(&d.data_dir().join("crashy"));
}

#[test]
fn flight_sigkill_loop_with_triggers_in_flight_loses_no_acknowledged_window_step() {
    let mut d = daemon();
    let ch = data::channels();
    // (window episode, episode, first seq of the window, last acked seq + 1, window end seq)
    let mut windows: Vec<(String, String, u64, u64, u64)> = Vec::new();
    for round in 0..4u64 {
        let id = format!("loop{round}");
        let mut c = open_flight(&d, &id, &json!({"ring_seconds": 1}));
        c.timesteps(&ch, 0..120);
        c.flush_until(120);
        // Two triggers: the second, before the first window's post-window is recorded,
        // extends it (merged); the window stays pending until the kill.
        let a = trigger_ok(
            &d,
            json!({"verb":"trigger","pre_ms":300,"post_ms":200,"streams":[id]}),
        );
        c.timesteps(&ch, 120..125 + round);
        let b = trigger_ok(
            &d,
            json!({"verb":"trigger","pre_ms":100,"post_ms":2000,"streams":[id]}),
        );
        assert_eq!(a["episode"], b["episode"], "{b}");
        let sent = 140 + round * 13;
        c.timesteps(&ch, 125 + round..sent);
        let acked = c.flush_until(sent);
        let t = data::t_ns(119);
        let end_seq = last_at(data::t_ns(124 + round) + 2000 * NS_PER_MS);
        windows.push((
            a["episode"].as_str().expect("w").to_owned(),
            id,
            first_at(t - 300 * NS_PER_MS),
            acked,
            end_seq,
        ));
        let _ = d.kill9();
        drop(c);
        d.restart();
    }
    for (w, id, first, acked, end) in &windows {
        wait_window(&d, w);
        let ep = window_stream(&d, w, id);
        // Every acknowledged step inside the window, exactly (and nothing past its end).
        check_exact(&ep, &ch, *first..=(*acked - 1).min(*end));
        verify(&d.data_dir().join(w));
    }
}
