//! `export_webdataset_upload_*`: `wshard export webdataset --upload s3://BUCKET/PREFIX` (the
//! real binary) against a real s3s-fs: every file of the export lands under the prefix, byte
//! for byte; a store that refuses leaves the local export complete and exits 2.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Map;
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus, StreamEntry, TIMEBASE_TIMESTAMPS};
use wshard::episode_dir::names::{index_file_name, stream_dir};
use wshard::manifest::write_episode_chunked;
use wshard_e2e::bins;
use wshard_e2e::bins::output_text as text;
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY, WRONG_SECRET};

const SIDE: u64 = 16;

fn write_stream(dir: &Path, name: &str, ts: Vec<i64>, channels: Vec<Channel>) {
    let n = ts.len();
    let mut ep = Episode::new(name, "Env-v0", Timebase::TimestampsNs { dt_ns: 1 });
    for c in channels {
        ep.push_channel(c);
    }
    ep.set_reward(vec![0.0; n]);
    ep.set_done(vec![false; n]);
    ep.timestamps_ns = Some(ts);
    std::fs::create_dir_all(stream_dir(dir, name)).expect("stream dir");
    write_episode_chunked(
        &ep,
        &stream_dir(dir, name),
        64,
        &EpisodeWriteOptions::default(),
    )
    .expect("write stream");
}

/// `data/ep-up`: `arm` 100 Hz q f32[2], `cam` 10 Hz rgb u8[16,16,3].
fn episode(data: &Path) {
    let dir = data.join("ep-up");
    let q: Vec<f32> = (0..200 * 2).map(|i| i as f32 * 0.01).collect();
    write_stream(
        &dir,
        "arm",
        (0..200).map(|s| s * 10_000_000).collect(),
        vec![Channel::from_f32("q", Lane::Signal, vec![2], &q).expect("q")],
    );
    let px = (SIDE * SIDE * 3) as usize;
    let rgb: Vec<u8> = (0..20 * px).map(|i| (i % 251) as u8).collect();
    write_stream(
        &dir,
        "cam",
        (0..20).map(|s| 5_000_000 + s * 100_000_000).collect(),
        vec![Channel::new(
            "rgb",
            Lane::Signal,
            DType::U8,
            vec![SIDE, SIDE, 3],
            rgb,
        )],
    );
    let mut index = EpisodeIndex::new("ep-up", "Env-v0", Map::new(), 1);
    index.status = EpisodeStatus::Complete;
    for name in ["arm", "cam"] {
        index.streams.push(StreamEntry {
            name: name.into(),
            manifest: format!("streams/{name}/{name}_manifest.wshard"),
            timebase: TIMEBASE_TIMESTAMPS.into(),
            tick_hz: 0.0,
            channels: Vec::new(),
            producer: "test/1".into(),
            status: EpisodeStatus::Complete,
            steps: 0,
            chunks: 1,
            first_t_ns: None,
            last_t_ns: None,
        });
    }
    std::fs::write(dir.join(index_file_name("ep-up")), index.to_json_bytes()).expect("index");
}

fn export(data: &Path, out: &Path, url: &str, s3: &S3Server, secret: &str) -> Output {
    let mut cmd = Command::new(bins::wshard());
    cmd.args([
        "export",
        "webdataset",
        "-q",
        "--samples-per-shard",
        "5",
        "--max-padding-right",
        "100",
    ])
    .arg(data)
    .arg("-o")
    .arg(out)
    .args(["--upload", url, "--endpoint", s3.endpoint(), "--allow-http"]);
    for v in [
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "WSHARD_S3_ENDPOINT",
        "WSHARD_S3_PREFIX",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", secret);
    cmd.output().expect("run wshard")
}

#[test]
fn export_webdataset_upload_every_file_under_the_prefix() {
    let s3 = S3Server::start();
    let tmp = tempfile::tempdir_in("/tmp").expect("tempdir");
    let data = tmp.path().join("data");
    episode(&data);
    let out = tmp.path().join("wds");
    let url = format!("s3://{BUCKET}/datasets/run-1/");
    let o = export(&data, &out, &url, &s3, SECRET_KEY);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .expect("output")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.iter().filter(|n| n.ends_with(".tar")).count() >= 3,
        "{names:?}"
    );
    assert!(
        t.contains(&format!("uploaded {} files", names.len())),
        "{t}"
    );
    for name in &names {
        let local = std::fs::read(out.join(name)).expect("local file");
        let remote = std::fs::read(s3.object_path(&format!("datasets/run-1/{name}")))
            .unwrap_or_else(|e| panic!("{name} not uploaded: {e}"));
        assert_eq!(local, remote, "{name}");
    }
    assert!(!t.contains(SECRET_KEY));
}

#[test]
fn export_webdataset_upload_refused_keeps_the_local_export() {
    let s3 = S3Server::start();
    let tmp = tempfile::tempdir_in("/tmp").expect("tempdir");
    let data = tmp.path().join("data");
    episode(&data);
    let out = tmp.path().join("wds");
    let o = export(&data, &out, &format!("s3://{BUCKET}/x"), &s3, WRONG_SECRET);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("upload to s3://") && t.contains("the export is complete"),
        "{t}"
    );
    assert!(out.join("manifest.jsonl").is_file() && out.join("shard_000000.tar").is_file());
    assert!(!t.contains(WRONG_SECRET), "{t}");
    // A URL without a bucket: refused before any request, the export still there.
    let out2 = tmp.path().join("wds2");
    let o = export(&data, &out2, "s3://", &s3, SECRET_KEY);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("names no bucket"), "{t}");
    assert!(out2.join("manifest.jsonl").is_file());
}
