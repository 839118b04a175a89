//! `wshard annotate` against the real daemon: operator annotations of single- and
//! multi-stream episodes, recording or finalized, absolute or relative times, and the
//! refusals (unknown episode, bad time, no timestamp to count from yet, JSON nested deeper
//! than an event's).

use std::process::{Command, Output};

use serde_json::Value;
use wshard::episode_dir::annotations::Annotations;
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::names::annotations_file_name;
use wshard_e2e::multi::{episode_close, owner, producer, stream_spec};
use wshard_e2e::{bins, data, Daemon, DaemonOptions};
use wshard_ingest_proto::{Durability, Outcome, MAX_EVENT_JSON_DEPTH};

fn wshard(d: &Daemon, args: &[&str]) -> Output {
    Command::new(bins::wshard())
        .args(args)
        .arg("--control")
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("cannot run wshard")
}

fn annotations(d: &Daemon, id: &str) -> Annotations {
    let path = d.data_dir().join(id).join(annotations_file_name(id));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Annotations::from_json_bytes(&bytes, &path).unwrap_or_else(|e| panic!("{e}"))
}

fn reply(o: &Output) -> Value {
    let text = wshard_e2e::check::output_text(o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn multirate_annotate_single_and_multi_stream_episodes() {
    let d = Daemon::start(DaemonOptions::default().rotation(4));
    d.record_ok("single", 10);
    // Relative to the first timestamp of a finalized single-stream episode.
    let v = reply(&wshard(
        &d,
        &[
            "annotate",
            "single",
            "--at",
            "+0.5s",
            "--label",
            "success",
            "--text",
            "clean grasp",
            "--reply-json",
        ],
    ));
    assert_eq!(v["result"]["seq"], 0, "{v}");
    let a = annotations(&d, "single");
    assert_eq!(a.annotations.len(), 1);
    assert_eq!(a.annotations[0].t_ns, data::t_ns(0) + 500_000_000);
    assert_eq!(a.annotations[0].label, "success");
    assert_eq!(a.annotations[0].data, EventData::Text("clean grasp".into()));
    assert!(
        a.annotations[0].author.starts_with("uid "),
        "{:?}",
        a.annotations[0]
    );
    // The episode itself is untouched.
    wshard_e2e::check::check_episode(&d.data_dir(), "single", &data::channels()).expect("episode");

    // A multi-stream episode while it records, then after it finalized.
    let ep = "multi-ann";
    let mut o = owner(&d.socket(), ep);
    let mut p = producer(
        &d.socket(),
        &stream_spec(
            ep,
            "joints",
            &data::small_channels(),
            100.0,
            Durability::Ack,
        ),
    );
    let o1 = wshard(&d, &["annotate", ep, "--at", "+1s", "--label", "early"]);
    assert_eq!(
        o1.status.code(),
        Some(2),
        "{}",
        wshard_e2e::check::output_text(&o1)
    );
    assert!(wshard_e2e::check::output_text(&o1).contains("BAD_REQUEST"));
    let text = wshard_e2e::check::output_text(&wshard(
        &d,
        &[
            "annotate",
            ep,
            "--at",
            "123",
            "--label",
            "note",
            "--json",
            r#"{"k":[1,2]}"#,
        ],
    ));
    assert!(text.contains("annotation 0"), "{text}");
    p.timesteps(&data::small_channels(), 0..9);
    p.close(Outcome::Completed, 9);
    assert_eq!(episode_close(&mut o), 0);
    let v = reply(&wshard(
        &d,
        &[
            "annotate",
            ep,
            "--at",
            "+20ms",
            "--label",
            "success",
            "--reply-json",
        ],
    ));
    assert_eq!(v["result"]["seq"], 1, "{v}");
    let a = annotations(&d, ep);
    assert_eq!(a.episode_id, ep);
    let got: Vec<(u64, i64, &str)> = a
        .annotations
        .iter()
        .map(|x| (x.seq, x.t_ns, x.label.as_str()))
        .collect();
    assert_eq!(
        got,
        [(0, 123, "note"), (1, data::t_ns(0) + 20_000_000, "success")]
    );
    assert_eq!(
        a.annotations[0].data,
        EventData::Json(serde_json::json!({"k": [1, 2]}))
    );
}

#[test]
fn multirate_annotate_refusals_are_typed() {
    let d = Daemon::start(DaemonOptions::default());
    let o = wshard(&d, &["annotate", "nope", "--at", "1", "--label", "x"]);
    let text = wshard_e2e::check::output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("UNKNOWN_EPISODE"), "{text}");
    let o = wshard(&d, &["annotate", "../etc", "--at", "1", "--label", "x"]);
    assert!(wshard_e2e::check::output_text(&o).contains("BAD_REQUEST"));
    let o = wshard(&d, &["annotate", "nope", "--at", "soon", "--label", "x"]);
    let text = wshard_e2e::check::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("--at"), "{text}");
    let o = wshard(
        &d,
        &[
            "annotate", "nope", "--at", "1", "--label", "x", "--json", "{",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}

/// `n` arrays, one inside the other, around `0`.
fn nested_json(n: usize) -> String {
    format!("{}0{}", "[".repeat(n), "]".repeat(n))
}

#[test]
fn multirate_annotate_json_deeper_than_an_event_is_refused_before_writing() {
    let d = Daemon::start(DaemonOptions::default());
    d.record_ok("deep", 3);
    let at_limit = nested_json(MAX_EVENT_JSON_DEPTH);
    let o = wshard(
        &d,
        &[
            "annotate", "deep", "--at", "1", "--label", "x", "--json", &at_limit,
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        wshard_e2e::check::output_text(&o)
    );
    // 101 levels, and 125: the annotations file (three levels around the payload) would
    // then nest past what serde_json reads, and no reader could open it again.
    for depth in [MAX_EVENT_JSON_DEPTH + 1, 125] {
        let deep = nested_json(depth);
        let o = wshard(
            &d,
            &[
                "annotate", "deep", "--at", "2", "--label", "y", "--json", &deep,
            ],
        );
        let text = wshard_e2e::check::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "depth {depth}: {text}");
        assert!(text.contains("BAD_REQUEST"), "depth {depth}: {text}");
        assert!(
            text.contains(&format!(
                "may nest at most {MAX_EVENT_JSON_DEPTH} deep (MAX_EVENT_JSON_DEPTH)"
            )),
            "depth {depth}: {text}"
        );
    }
    // Nothing was written: the file holds the one annotation and reads back.
    let a = annotations(&d, "deep");
    assert_eq!(a.annotations.len(), 1);
    assert_eq!(a.annotations[0].label, "x");
    wshard::episode_dir::EpisodeDir::open(d.data_dir().join("deep")).expect("episode reads");
}
