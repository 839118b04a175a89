//! `wshard_export::mcap` round trips: episodes written with the format library, exported,
//! and read back with the `mcap` crate's reader: every message, every dtype's values, the
//! pictures (raw, PNG, JPEG), the log times, the events and annotations, the metadata
//! record, the chunk compression and size, the same bytes on every run, data directories.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod mcap_support;

use std::fs;
use std::path::Path;

use base64::Engine;
use half::{bf16, f16};
use mcap_support::{meta, read_mcap, small_episode, write_episode, Stream};
use serde_json::{json, Value};
use wshard::episode::{Channel, DType, Lane, Timebase};
use wshard::episode_dir::annotations::Annotation;
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;
use wshard_export::mcap::{
    export_episode, export_mcap, resolve_inputs, ImageMode, InputsError, McapCompression,
    McapOptions,
};

const T0: i64 = 1_700_000_000_000_000_000;
const STEPS: usize = 5;
const SIDE: u64 = 8;

fn b64(s: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s.as_str().unwrap())
        .unwrap()
}

/// Bytes of `steps` steps of `elements` elements of `dtype`, from (step, element).
fn data(dtype: DType, elements: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for s in 0..STEPS {
        for e in 0..elements {
            let k = (s * 31 + e * 7) as i64;
            match dtype {
                DType::F64 => out.extend((k as f64 * 0.1 - 3.0).to_le_bytes()),
                DType::F32 if s == 2 && e == 0 => out.extend(f32::NAN.to_le_bytes()),
                DType::F32 => out.extend((k as f32 * 0.1 - 3.0).to_le_bytes()),
                DType::F16 => out.extend(f16::from_f32(k as f32 * 0.25).to_le_bytes()),
                DType::BF16 => out.extend(bf16::from_f32(-(k as f32) * 0.5).to_le_bytes()),
                DType::I64 => out.extend((i64::MIN + k).to_le_bytes()),
                DType::I32 => out.extend((-(k as i32) * 1000).to_le_bytes()),
                DType::I16 => out.extend((-(k as i16)).to_le_bytes()),
                DType::I8 => out.extend((-(k as i8)).to_le_bytes()),
                DType::U64 => out.extend((u64::MAX - k as u64).to_le_bytes()),
                DType::U32 => out.extend((k as u32 * 1000).to_le_bytes()),
                DType::U16 => out.extend((k as u16).wrapping_mul(300).to_le_bytes()),
                DType::U8 => out.push((k * 5 % 256) as u8),
                DType::Bool => out.push(u8::from(k % 2 == 1)),
            }
        }
    }
    out
}

/// A JSON value back to the little-endian bytes of `dtype` (null: NaN).
fn back(dtype: DType, v: &Value) -> Vec<u8> {
    match dtype {
        DType::F64 => v.as_f64().unwrap().to_le_bytes().to_vec(),
        DType::F32 if v.is_null() => f32::NAN.to_le_bytes().to_vec(),
        DType::F32 => (v.as_f64().unwrap() as f32).to_le_bytes().to_vec(),
        DType::F16 => f16::from_f64(v.as_f64().unwrap()).to_le_bytes().to_vec(),
        DType::BF16 => bf16::from_f64(v.as_f64().unwrap()).to_le_bytes().to_vec(),
        DType::I64 => v.as_i64().unwrap().to_le_bytes().to_vec(),
        DType::I32 => (v.as_i64().unwrap() as i32).to_le_bytes().to_vec(),
        DType::I16 => (v.as_i64().unwrap() as i16).to_le_bytes().to_vec(),
        DType::I8 => (v.as_i64().unwrap() as i8).to_le_bytes().to_vec(),
        DType::U64 => v.as_u64().unwrap().to_le_bytes().to_vec(),
        DType::U32 => (v.as_u64().unwrap() as u32).to_le_bytes().to_vec(),
        DType::U16 => (v.as_u64().unwrap() as u16).to_le_bytes().to_vec(),
        DType::U8 => vec![v.as_u64().unwrap() as u8],
        DType::Bool => vec![u8::from(v.as_bool().unwrap())],
    }
}

const VECTORS: [(&str, DType, &[u64]); 13] = [
    ("f64", DType::F64, &[2]),
    ("f32", DType::F32, &[3]),
    ("f16", DType::F16, &[1]),
    ("bf16", DType::BF16, &[1]),
    ("i64", DType::I64, &[1]),
    ("i32", DType::I32, &[2]),
    ("i16", DType::I16, &[1]),
    ("i8", DType::I8, &[1]),
    ("u64", DType::U64, &[1]),
    ("u32", DType::U32, &[1]),
    ("u16", DType::U16, &[2]),
    ("rot", DType::U8, &[3, 3]),
    ("flags", DType::Bool, &[2]),
];

/// (name, dtype, shape, raw encoding, bytes per pixel)
const PICTURES: [(&str, DType, &[u64], &str, u64); 4] = [
    ("rgb", DType::U8, &[SIDE, SIDE, 3], "rgb8", 3),
    ("mono", DType::U8, &[SIDE, SIDE], "mono8", 1),
    ("depth_mm", DType::U16, &[SIDE, SIDE, 1], "16UC1", 2),
    ("wrist_depth", DType::F32, &[SIDE, SIDE], "32FC1", 4),
];

fn elements(shape: &[u64]) -> usize {
    shape.iter().product::<u64>() as usize
}

fn all_channels() -> Vec<Channel> {
    let mut out = Vec::new();
    for (name, dtype, shape) in VECTORS {
        out.push(Channel::new(
            name,
            Lane::Signal,
            dtype,
            shape.to_vec(),
            data(dtype, elements(shape)),
        ));
    }
    out.push(Channel::new(
        "cmd",
        Lane::Action,
        DType::F32,
        vec![2],
        data(DType::F32, 2),
    ));
    for (name, dtype, shape, _, _) in PICTURES {
        out.push(Channel::new(
            name,
            Lane::Signal,
            dtype,
            shape.to_vec(),
            data(dtype, elements(shape)),
        ));
    }
    out
}

fn stream_times() -> Vec<i64> {
    // Equal timestamps are allowed; the stream starts after the first event.
    vec![T0 + 100, T0 + 250, T0 + 250, T0 + 400, T0 + 1_000]
}

/// `EP`: stream `all` (timestamps_ns, every dtype and picture kind, chunks of 2 steps) and
/// stream `tick` (ticks 10 Hz: timestamps from 0), events and an annotation.
fn full_episode(data_dir: &Path) -> std::path::PathBuf {
    let all = Stream {
        name: "all",
        timebase: Timebase::TimestampsNs { dt_ns: 1 },
        timestamps: Some(stream_times()),
        channels: all_channels(),
        steps: STEPS,
        chunk: 2,
    };
    let tick = Stream {
        name: "tick",
        timebase: Timebase::ticks(10.0),
        timestamps: None,
        channels: vec![Channel::new(
            "v",
            Lane::Signal,
            DType::F32,
            vec![1],
            data(DType::F32, 1),
        )],
        steps: STEPS,
        chunk: 100,
    };
    let ev = |seq, t_ns, label: &str, data| EventRecord {
        seq,
        t_ns,
        label: label.into(),
        source: "all".into(),
        data,
    };
    let events = [
        ev(0, T0, "instruction", EventData::Text("pick it up".into())),
        ev(
            1,
            T0 + 250,
            "phase",
            EventData::Json(json!({"phase": "grasp"})),
        ),
        ev(
            2,
            T0 + 2_000,
            "blob",
            EventData::Binary(vec![0, 1, 254, 255]),
        ),
    ];
    let annotations = [Annotation {
        seq: 0,
        t_ns: T0 + 400,
        label: "success".into(),
        data: EventData::Json(json!({"score": 1})),
        author: "uid 1000".into(),
        created_unix_ns: 77,
    }];
    write_episode(
        data_dir,
        "EP",
        EpisodeStatus::Complete,
        &[all, tick],
        &events,
        &annotations,
    )
}

#[test]
fn export_mcap_round_trip_every_dtype_picture_event_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = full_episode(&tmp.path().join("data"));
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let r = export_episode(&dir, &out, &McapOptions::default()).unwrap();
    assert_eq!(r.file, out.join("EP.mcap"));
    assert_eq!(fs::read_dir(&out).unwrap().count(), 1, "no .partial left");
    let m = read_mcap(&r.file);
    let episode = EpisodeDir::open(&dir).unwrap();

    let mut want_topics: Vec<String> = all_channels()
        .iter()
        .map(|c| format!("/all/{}", c.id))
        .collect();
    want_topics.extend(["/tick/v".into(), "/events".into(), "/annotations".into()]);
    want_topics.sort();
    assert_eq!(m.topics(), want_topics);
    assert_eq!(r.channels, want_topics.len() as u64);
    let total = (all_channels().len() + 1) * STEPS + 3 + 1;
    assert_eq!((r.messages, m.messages.len()), (total as u64, total));
    assert_eq!(
        m.summary.stats.as_ref().unwrap().message_count,
        total as u64
    );
    assert_eq!(m.compressions(), ["zstd"]);
    // Written in log-time order.
    assert!(m
        .messages
        .windows(2)
        .all(|w| w[0].log_time <= w[1].log_time));

    // Vectors: every value back to the recorded bytes; times and sequence from the stream.
    let all = episode.read_stream("all").unwrap();
    assert_eq!(all.timestamps_ns(), stream_times());
    let mut vectors: Vec<(&str, DType, &[u64])> = VECTORS.to_vec();
    vectors.push(("cmd", DType::F32, &[2]));
    for (name, dtype, shape) in vectors {
        let msgs = m.topic(&format!("/all/{name}"));
        assert_eq!(msgs.len(), STEPS, "{name}");
        let ch = all.channel(name).unwrap();
        for (i, msg) in msgs.iter().enumerate() {
            assert_eq!(msg.schema, "wshard.Vector");
            let t = stream_times()[i] as u64;
            assert_eq!(
                (msg.log_time, msg.publish_time, msg.sequence),
                (t, t, i as u32),
                "{name} {i}"
            );
            assert_eq!(
                msg.json["timestamp"],
                json!({"sec": t / 1_000_000_000, "nsec": t % 1_000_000_000})
            );
            let values = msg.json["values"].as_array().unwrap();
            assert_eq!(values.len(), elements(shape), "{name}");
            let got: Vec<u8> = values.iter().flat_map(|v| back(dtype, v)).collect();
            let want = ch.step(i as u64).unwrap();
            if dtype == DType::F32 && i == 2 {
                assert!(values[0].is_null(), "NaN is written as null");
                assert_eq!(got[4..], want[4..]);
            } else {
                assert_eq!(got, want, "{name} step {i}");
            }
        }
    }
    // Channel metadata says where the channel comes from.
    let cmd = m
        .summary
        .channels
        .values()
        .find(|c| c.topic == "/all/cmd")
        .unwrap();
    assert_eq!(cmd.metadata["lane"], "action");
    assert_eq!(cmd.metadata["shape"], "[2]");
    assert_eq!(cmd.metadata["timebase"], "timestamps_ns");
    let rot = m
        .summary
        .channels
        .values()
        .find(|c| c.topic == "/all/rot")
        .unwrap();
    assert_eq!(
        (
            rot.metadata["kind"].as_str(),
            rot.metadata["shape"].as_str()
        ),
        ("vector", "[3,3]")
    );

    // Pictures, raw: the recorded pixels, base64.
    for (name, _, _, encoding, bpp) in PICTURES {
        let msgs = m.topic(&format!("/all/{name}"));
        let ch = all.channel(name).unwrap();
        for (i, msg) in msgs.iter().enumerate() {
            assert_eq!(msg.schema, "foxglove.RawImage");
            let j = &msg.json;
            assert_eq!(j["encoding"], encoding);
            assert_eq!(
                (j["width"].as_u64(), j["height"].as_u64()),
                (Some(SIDE), Some(SIDE))
            );
            assert_eq!(j["step"].as_u64(), Some(SIDE * bpp));
            assert_eq!(j["frame_id"], "all");
            assert_eq!(
                b64(&j["data"]),
                ch.step(i as u64).unwrap(),
                "{name} step {i}"
            );
        }
    }

    // The ticks stream: times from its tick rate, as the reader gives them.
    let tick = episode.read_stream("tick").unwrap();
    let times: Vec<u64> = m.topic("/tick/v").iter().map(|m| m.log_time).collect();
    assert_eq!(
        times,
        tick.timestamps_ns()
            .iter()
            .map(|&t| t as u64)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        times,
        [0, 100_000_000, 200_000_000, 300_000_000, 400_000_000]
    );
    let tick_meta = &m
        .summary
        .channels
        .values()
        .find(|c| c.topic == "/tick/v")
        .unwrap()
        .metadata;
    assert_eq!(
        (
            tick_meta["timebase"].as_str(),
            tick_meta["tick_hz"].as_str()
        ),
        ("ticks", "10")
    );

    // Events and annotations.
    let ev = m.topic("/events");
    let got: Vec<(u64, &str, &str, Value, u32)> = ev
        .iter()
        .map(|e| {
            (
                e.log_time,
                e.json["label"].as_str().unwrap(),
                e.json["kind"].as_str().unwrap(),
                e.json["data"].clone(),
                e.sequence,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (T0 as u64, "instruction", "text", json!("pick it up"), 0),
            (
                T0 as u64 + 250,
                "phase",
                "json",
                json!({"phase": "grasp"}),
                1
            ),
            (T0 as u64 + 2_000, "blob", "binary", json!("AAH+/w=="), 2),
        ]
    );
    assert!(ev
        .iter()
        .all(|e| e.schema == "wshard.Event" && e.json["source"] == "all"));
    let [a] = m.topic("/annotations")[..] else {
        panic!("one annotation")
    };
    assert_eq!(a.schema, "wshard.Annotation");
    assert_eq!(a.log_time, T0 as u64 + 400);
    assert_eq!(
        (
            a.json["label"].as_str(),
            a.json["author"].as_str(),
            a.json["created_unix_ns"].as_u64()
        ),
        (Some("success"), Some("uid 1000"), Some(77))
    );
    assert_eq!(a.json["data"], json!({"score": 1}));

    // The episode's metadata record.
    let md = &m.metadata["wshard.episode"];
    assert_eq!(md["episode_id"], "EP");
    assert_eq!(md["env_id"], "Env-v0");
    assert_eq!(md["status"], "complete");
    assert_eq!(md["layout"], "multi-stream");
    assert_eq!(md["streams"], "all,tick");
    assert_eq!(md["created_unix_ns"], "1234");
    assert_eq!(
        serde_json::from_str::<Value>(&md["metadata"]).unwrap(),
        Value::Object(meta())
    );
}

fn decode_png(bytes: &[u8]) -> (png::ColorType, png::BitDepth, Vec<u8>) {
    let mut r = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; r.output_buffer_size().expect("png size")];
    let info = r.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.color_type, info.bit_depth, buf)
}

#[test]
fn export_mcap_png_is_lossless_and_jpeg_keeps_depth_lossless() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = full_episode(&tmp.path().join("data"));
    let episode = EpisodeDir::open(&dir).unwrap();
    let all = episode.read_stream("all").unwrap();
    for images in [ImageMode::Png, ImageMode::Jpeg] {
        let out = tmp.path().join(images.as_str());
        fs::create_dir_all(&out).unwrap();
        let opts = McapOptions {
            images,
            ..McapOptions::default()
        };
        let m = read_mcap(&export_episode(&dir, &out, &opts).unwrap().file);
        for (i, msg) in m.topic("/all/rgb").iter().enumerate() {
            assert_eq!(msg.schema, "foxglove.CompressedImage");
            assert_eq!(msg.json["format"], images.as_str());
            assert_eq!(msg.json["frame_id"], "all");
            let bytes = b64(&msg.json["data"]);
            if images == ImageMode::Png {
                let (color, depth, px) = decode_png(&bytes);
                assert_eq!((color, depth), (png::ColorType::Rgb, png::BitDepth::Eight));
                assert_eq!(px, all.channel("rgb").unwrap().step(i as u64).unwrap());
            } else {
                assert_eq!(bytes[..2], [0xff, 0xd8], "a JPEG");
            }
        }
        for (i, msg) in m.topic("/all/mono").iter().enumerate() {
            let bytes = b64(&msg.json["data"]);
            if images == ImageMode::Png {
                let (color, _, px) = decode_png(&bytes);
                assert_eq!(color, png::ColorType::Grayscale);
                assert_eq!(px, all.channel("mono").unwrap().step(i as u64).unwrap());
            } else {
                assert_eq!(msg.json["format"], "jpeg");
            }
        }
        // u16 depth: a 16-bit PNG in both (PNG stores samples big-endian).
        for (i, msg) in m.topic("/all/depth_mm").iter().enumerate() {
            assert_eq!(msg.json["format"], "png");
            let (color, depth, px) = decode_png(&b64(&msg.json["data"]));
            assert_eq!(
                (color, depth),
                (png::ColorType::Grayscale, png::BitDepth::Sixteen)
            );
            let le: Vec<u8> = px.chunks_exact(2).flat_map(|c| [c[1], c[0]]).collect();
            assert_eq!(le, all.channel("depth_mm").unwrap().step(i as u64).unwrap());
        }
        // f32 depth stays raw.
        for msg in m.topic("/all/wrist_depth") {
            assert_eq!(msg.schema, "foxglove.RawImage");
            assert_eq!(msg.json["encoding"], "32FC1");
        }
    }
}

#[test]
fn export_mcap_compression_and_chunk_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = full_episode(&tmp.path().join("data"));
    for (compression, want) in [
        (McapCompression::Zstd, "zstd"),
        (McapCompression::Lz4, "lz4"),
        (McapCompression::None, ""),
    ] {
        let out = tmp.path().join(compression.as_str());
        fs::create_dir_all(&out).unwrap();
        let opts = McapOptions {
            compression,
            ..McapOptions::default()
        };
        let m = read_mcap(&export_episode(&dir, &out, &opts).unwrap().file);
        assert_eq!(m.compressions(), [want]);
        assert_eq!(
            m.summary.chunk_indexes.len(),
            1,
            "the default chunk holds this small episode"
        );
    }
    let out = tmp.path().join("small");
    fs::create_dir_all(&out).unwrap();
    let opts = McapOptions {
        chunk_size: 1_000,
        ..McapOptions::default()
    };
    let m = read_mcap(&export_episode(&dir, &out, &opts).unwrap().file);
    assert!(
        m.summary.chunk_indexes.len() > 10,
        "{} chunks",
        m.summary.chunk_indexes.len()
    );
    // A chunk closes once over the target: at most one message (under 1 KB here) more,
    // but for the first, which also holds the schemas and channels.
    let sizes: Vec<u64> = m
        .summary
        .chunk_indexes
        .iter()
        .map(|c| c.uncompressed_size)
        .collect();
    assert!(sizes[1..].iter().all(|&s| s < 2_000), "{sizes:?}");
}

#[test]
fn export_mcap_same_bytes_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = full_episode(&tmp.path().join("data"));
    let mut files = Vec::new();
    for (k, images) in [
        ImageMode::Raw,
        ImageMode::Raw,
        ImageMode::Jpeg,
        ImageMode::Jpeg,
    ]
    .into_iter()
    .enumerate()
    {
        let out = tmp.path().join(format!("run{k}"));
        fs::create_dir_all(&out).unwrap();
        let opts = McapOptions {
            images,
            ..McapOptions::default()
        };
        files.push(fs::read(export_episode(&dir, &out, &opts).unwrap().file).unwrap());
    }
    assert!(files[0] == files[1], "raw: two runs differ");
    assert!(files[2] == files[3], "jpeg: two runs differ");
}

#[test]
fn export_mcap_single_stream_episode_is_stream_main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("solo");
    fs::create_dir_all(&dir).unwrap();
    let s = Stream {
        name: "solo",
        timebase: Timebase::ticks(50.0),
        timestamps: None,
        channels: vec![Channel::new(
            "q",
            Lane::Signal,
            DType::F32,
            vec![2],
            data(DType::F32, 2),
        )],
        steps: STEPS,
        chunk: 2,
    };
    wshard::manifest::write_episode_chunked(&s.episode(), &dir, 2, &Default::default()).unwrap();
    let out = tmp.path().join("out");
    let report = export_mcap(&[dir], &out, &McapOptions::default(), &|_, _| {}).unwrap();
    let [(_, Ok(r))] = &report.episodes[..] else {
        panic!("{report:?}")
    };
    let m = read_mcap(&r.file);
    assert_eq!(m.topics(), ["/main/q"]);
    assert_eq!(m.topic("/main/q").len(), STEPS);
    assert_eq!(m.topic("/main/q")[1].log_time, 20_000_000);
    let md = &m.metadata["wshard.episode"];
    assert_eq!(
        (md["episode_id"].as_str(), md["layout"].as_str()),
        ("solo", "single-stream")
    );
}

#[test]
fn export_mcap_data_dir_exports_finished_episodes_sorted_and_skips_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    small_episode(&data, "b-done", EpisodeStatus::Complete, 0);
    small_episode(&data, "a-interrupted", EpisodeStatus::Interrupted, 0);
    small_episode(&data, "c-recovered", EpisodeStatus::Recovered, 0);
    small_episode(&data, "d-recording", EpisodeStatus::Recording, 0);
    small_episode(&data, "e-aborted", EpisodeStatus::Aborted, 0);
    small_episode(&data.join(".upload"), "x", EpisodeStatus::Complete, 0);
    fs::create_dir_all(data.join("notes")).unwrap();
    fs::write(data.join("README"), "not a dir").unwrap();
    // A second data directory, and an episode named on its own (aborted: exported anyway;
    // one still recording is refused, its files are still changing).
    let other = tmp.path().join("other");
    let named = small_episode(&other, "f-named", EpisodeStatus::Aborted, 0);
    let open = small_episode(&other, "g-open", EpisodeStatus::Recording, 0);
    let e = resolve_inputs(&[data.clone(), open.clone()]).unwrap_err();
    assert!(
        matches!(&e, InputsError::StillRecording { episode, dir } if episode == "g-open" && *dir == open),
        "{e}"
    );

    let inputs = resolve_inputs(&[data.clone(), named.clone(), data.join("b-done")]).unwrap();
    let ids: Vec<&str> = inputs
        .episodes
        .iter()
        .map(|e| e.episode_id.as_str())
        .collect();
    assert_eq!(ids, ["a-interrupted", "b-done", "c-recovered", "f-named"]);
    let skipped: Vec<(String, &str)> = inputs
        .skipped
        .iter()
        .map(|s| {
            (
                s.dir.file_name().unwrap().to_string_lossy().into_owned(),
                s.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (".upload".into(), "hidden directory"),
            ("d-recording".into(), "status recording"),
            ("e-aborted".into(), "status aborted"),
            ("notes".into(), "not an episode directory"),
        ]
    );

    let out = tmp.path().join("out");
    let opts = McapOptions {
        workers: 3,
        ..McapOptions::default()
    };
    let report = export_mcap(&[data, named], &out, &opts, &|_, _| {}).unwrap();
    assert_eq!(report.failures().count(), 0);
    let mut files: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ".wshard-export.json",
            "a-interrupted.mcap",
            "b-done.mcap",
            "c-recovered.mcap",
            "f-named.mcap"
        ]
    );
    let order: Vec<String> = report
        .episodes
        .iter()
        .map(|(_, r)| r.as_ref().unwrap().episode_id.clone())
        .collect();
    assert_eq!(order, ["a-interrupted", "b-done", "c-recovered", "f-named"]);
    assert_eq!(read_mcap(&out.join("b-done.mcap")).topic("/s/x").len(), 3);
}
