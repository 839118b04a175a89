//! `wshard inspect DIR` and `wshard cat --aligned DIR` on episode directories, run as the
//! real binary: a multi-stream directory written with the format library's writer (index,
//! `streams/*`, events, annotations), and a single-stream episode recorded by the daemon's
//! session code.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod common;
mod live_episode;

use std::fs;
use std::path::{Path, PathBuf};

use common::wshard;
use live_episode::{record_and_crash, EPISODE};
use serde_json::{json, Map, Value};
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::annotations::{Annotation, Annotations};
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::{
    ChannelEntry, EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS,
};
use wshard::episode_dir::names::{
    annotations_file_name, events_file_name, index_file_name, stream_dir,
};
use wshard::manifest::write_episode_chunked;

const MS: i64 = 1_000_000;

fn stream_entry(name: &str, timebase: &str, tick_hz: f64, channel: ChannelEntry) -> StreamEntry {
    StreamEntry {
        name: name.into(),
        manifest: format!("streams/{name}/{name}_manifest.wshard"),
        timebase: timebase.into(),
        tick_hz,
        channels: vec![channel],
        producer: format!("{name}-driver/1"),
        status: EpisodeStatus::Complete,
        steps: 0,
        chunks: 0,
        first_t_ns: None,
        last_t_ns: None,
    }
}

/// `EP/`: `joints` (timestamps_ns, 1 kHz, 20 steps 0..19 ms, `q` f32 [2] = [k, k + 0.5],
/// chunks of 8) and `cam` (ticks 100 Hz, 3 steps, `rgb` u8 [2, 2] = 4k..4k+3), one text
/// event at 5 ms and one annotation at 20 ms.
fn multi_stream(root: &Path) -> PathBuf {
    let dir = root.join("EP");
    let opts = EpisodeWriteOptions::default();

    let n = 20usize;
    let mut joints = Episode::new("joints", "Env", Timebase::TimestampsNs { dt_ns: 1_000_000 });
    #[allow(clippy::cast_precision_loss)]
    let q: Vec<f32> = (0..n).flat_map(|k| [k as f32, k as f32 + 0.5]).collect();
    joints.push_channel(Channel::from_f32("q", Lane::Signal, vec![2], &q).unwrap());
    joints.set_reward(vec![0.0; n]);
    joints.set_done(vec![false; n]);
    joints.timestamps_ns = Some((0..20).map(|k| k * MS).collect());
    fs::create_dir_all(stream_dir(&dir, "joints")).unwrap();
    write_episode_chunked(&joints, &stream_dir(&dir, "joints"), 8, &opts).unwrap();

    let mut cam = Episode::new("cam", "Env", Timebase::ticks(100.0));
    cam.push_channel(Channel::new(
        "rgb",
        Lane::Signal,
        DType::U8,
        vec![2, 2],
        (0..12).collect(),
    ));
    cam.set_reward(vec![0.0; 3]);
    cam.set_done(vec![false; 3]);
    fs::create_dir_all(stream_dir(&dir, "cam")).unwrap();
    write_episode_chunked(&cam, &stream_dir(&dir, "cam"), 100, &opts).unwrap();

    let mut index = EpisodeIndex::new("EP", "Env", Map::new(), 7);
    index.status = EpisodeStatus::Complete;
    index.closed = true;
    let ch = |name: &str, dtype: &str, shape: Vec<u64>| ChannelEntry {
        name: name.into(),
        lane: "signal".into(),
        dtype: dtype.into(),
        shape,
    };
    index.streams.push(stream_entry(
        "joints",
        TIMEBASE_TIMESTAMPS,
        0.0,
        ch("q", "f32", vec![2]),
    ));
    index.streams.push(stream_entry(
        "cam",
        TIMEBASE_TICKS,
        100.0,
        ch("rgb", "u8", vec![2, 2]),
    ));
    fs::write(dir.join(index_file_name("EP")), index.to_json_bytes()).unwrap();

    let event = EventRecord {
        seq: 0,
        t_ns: 5 * MS,
        label: "instruction".into(),
        source: "joints".into(),
        data: EventData::Text("pick the cube".into()),
    };
    fs::write(dir.join(events_file_name("EP")), event.to_line()).unwrap();
    let mut ann = Annotations::new("EP");
    ann.annotations.push(Annotation {
        seq: 0,
        t_ns: 20 * MS,
        label: "success".into(),
        data: EventData::Json(json!({"ok": true})),
        author: "uid 1000".into(),
        created_unix_ns: 9,
    });
    fs::write(dir.join(annotations_file_name("EP")), ann.to_json_bytes()).unwrap();
    dir
}

fn line<'a>(stdout: &'a str, first: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no line starting with {first} in:\n{stdout}"))
}

fn words(l: &str) -> Vec<&str> {
    l.split_whitespace().collect()
}

#[test]
fn cli_multirate_inspect_lists_streams_and_events() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = multi_stream(tmp.path());
    let run = wshard(["inspect".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    for needle in [
        "episode_id           EP\n",
        "layout               multi-stream\n",
        "status               complete\n",
        "closed               true\n",
        "streams              2\n",
        "events               2 (1 events, 1 annotations)\n",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert_eq!(
        words(line(out, "joints")),
        [
            "joints",
            "timestamps_ns",
            "~1000.00",
            "20",
            "3",
            "0",
            "19000000",
            "complete",
            "joints-driver/1",
            "q",
            "f32[2]"
        ]
    );
    assert_eq!(
        words(line(out, "cam")),
        [
            "cam",
            "ticks",
            "100",
            "3",
            "1",
            "0",
            "20000000",
            "complete",
            "cam-driver/1",
            "rgb",
            "u8[2,2]"
        ]
    );
    assert_eq!(
        words(line(out, "5000000")),
        [
            "5000000",
            "0",
            "event",
            "joints",
            "instruction",
            "text",
            "pick",
            "the",
            "cube"
        ]
    );
    assert_eq!(
        words(line(out, "20000000")),
        [
            "20000000",
            "0",
            "annotation",
            "uid",
            "1000",
            "success",
            "json",
            "{\"ok\":true}"
        ]
    );

    let run = wshard(["inspect".as_ref(), "--json".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["layout"], "multi-stream");
    assert_eq!(v["streams"][0]["name"], "joints");
    assert_eq!(v["streams"][0]["channels"][0]["shape"], json!([2]));
    assert_eq!(v["streams"][1]["tick_hz"], json!(100.0));
    assert_eq!(v["events"][1]["data"], json!({"ok": true}));
    assert_eq!(v["events"][1]["origin"], "annotation");
}

#[test]
fn cli_multirate_cat_aligned_csv_at_camera_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = multi_stream(tmp.path());
    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "--clock".as_ref(),
        "cam".as_ref(),
        "--policy".as_ref(),
        "q=linear".as_ref(),
        "--max-staleness-ms".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "t_ns,joints/q[0],joints/q[1],joints/q:valid,joints/q:src_t_ns,joints/q:src_next_t_ns,\
         cam/rgb[0],cam/rgb[1],cam/rgb[2],cam/rgb[3],cam/rgb:valid,cam/rgb:src_t_ns\n\
         0,0,0.5,true,0,0,0,1,2,3,true,0\n\
         10000000,10,10.5,true,10000000,10000000,4,5,6,7,true,10000000\n\
         20000000,,,false,,,8,9,10,11,true,20000000\n"
    );

    // Hold (the default): at 20 ms the last joints sample is 19 ms, exactly 1 ms stale.
    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "--clock".as_ref(),
        "cam".as_ref(),
        "--channel".as_ref(),
        "joints/q".as_ref(),
        "--max-staleness-ms".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.lines().last(),
        Some("20000000,19,19.5,true,19000000")
    );
}

#[test]
fn cli_multirate_cat_aligned_jsonl_fixed_rate_drop_invalid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = multi_stream(tmp.path());
    let out = tmp.path().join("aligned.jsonl");
    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "--rate".as_ref(),
        "200".as_ref(),
        "--policy".as_ref(),
        "cam/rgb=nearest".as_ref(),
        "--max-staleness-ms".as_ref(),
        "2".as_ref(),
        "--drop-invalid".as_ref(),
        "--format".as_ref(),
        "jsonl".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let text = fs::read_to_string(&out).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 200 Hz over 0..20 ms: 0, 5, 10, 15, 20 ms. The camera (nearest, <= 2 ms) is valid
    // at 0, 10 and 20 ms only; the others are dropped.
    let t: Vec<i64> = rows.iter().map(|r| r["t_ns"].as_i64().unwrap()).collect();
    assert_eq!(t, [0, 10 * MS, 20 * MS]);
    assert_eq!(rows[1]["cam/rgb"], json!([[4, 5], [6, 7]]));
    assert_eq!(rows[2]["joints/q"], json!([19, 19.5]));
    assert_eq!(rows[2]["joints/q:src_t_ns"], json!(19 * MS));
    assert!(rows.iter().all(|r| r["cam/rgb:valid"] == json!(true)));
}

#[test]
fn cli_multirate_single_stream_episode_recorded_by_the_daemon() {
    let live = tempfile::tempdir().unwrap();
    let crashed = tempfile::tempdir().unwrap();
    record_and_crash(live.path(), crashed.path(), 100, 250, 10);
    let dir = live.path().join(EPISODE);
    let run = wshard(["inspect".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("layout               single-stream\n"),
        "{run:?}"
    );
    assert_eq!(
        words(line(&run.stdout, "main")),
        ["main", "ticks", "100", "250", "3", "0", "249000", "complete", "-", "state", "f32[8]"]
    );

    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "--clock".as_ref(),
        "main".as_ref(),
        "--format".as_ref(),
        "jsonl".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let rows: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 250);
    for (i, r) in rows.iter().enumerate() {
        let want: Vec<f64> = live_episode::payload(i as u64)
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        let got: Vec<f64> = r["main/state"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(got, want, "row {i}");
        assert_eq!(r["t_ns"], json!(i as i64 * 1000));
    }
}

#[test]
fn cli_multirate_cat_aligned_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = multi_stream(tmp.path());
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["--clock", "imu"],
            2,
            "clock stream `imu` does not exist (streams: joints, cam)",
        ),
        (
            vec!["--rate", "10", "--policy", "q=cubic"],
            2,
            "--policy \"q=cubic\"",
        ),
        (
            vec!["--rate", "10", "--policy", "nope=hold"],
            2,
            "no channel `nope`",
        ),
        (vec![], 2, "--aligned needs a clock"),
        (vec!["--rate", "10", "--format", "npy"], 2, "csv or jsonl"),
        (vec!["--rate", "0"], 2, "must be finite and > 0"),
    ];
    for (args, code, needle) in cases {
        let mut all: Vec<&std::ffi::OsStr> =
            vec!["cat".as_ref(), "--aligned".as_ref(), dir.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let run = wshard(&all);
        assert_eq!(run.code, code, "{args:?}: {run:?}");
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    // Block and --aligned together, and --clock without --aligned, are usage errors.
    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "signal/q".as_ref(),
        "--rate".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    let run = wshard([
        "cat".as_ref(),
        dir.as_os_str(),
        "signal/q".as_ref(),
        "--clock".as_ref(),
        "cam".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{run:?}");

    // A corrupt index is a corrupt episode (exit 1), naming the file and the field.
    let index = dir.join(index_file_name("EP"));
    let text = fs::read_to_string(&index).unwrap();
    fs::write(&index, text.replace("\"steps\": 0", "\"steps\": -1")).unwrap();
    let run = wshard([
        "cat".as_ref(),
        "--aligned".as_ref(),
        dir.as_os_str(),
        "--rate".as_ref(),
        "10".as_ref(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("EP_index.json: field `streams[0].steps`"),
        "{}",
        run.stderr
    );
    let run = wshard(["inspect".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 1, "{run:?}");

    // A directory that is not an episode.
    let run = wshard(["inspect".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("not an episode directory"),
        "{}",
        run.stderr
    );
}
