//! Helpers of the uploader tests (`publish_upload_*`, `crash_upload_*`,
//! `fault_upload_*`, `publish_retention_*`): the `[publish]` table pointing a daemon at an
//! [`S3Server`], its status, a large episode, and the remote checks.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard::episode::{DType, Lane};
use wshard_client::{ChannelSpec, CodecChoice, Durability, Outcome};
use wshard_publish::episodes::select;
use wshard_publish::layout::Keys;
use wshard_publish::{Credentials, Store, StoreConfig, TransferOptions};

use crate::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::{bins, data, Daemon};

/// The dataset the tests publish to.
pub const DATASET: &str = "lab/upload";
/// The robot name the tests configure.
pub const ROBOT: &str = "robot-7";
/// The part size (S3's smallest).
pub const PART: u64 = 5 << 20;
/// How long an upload may take in a test.
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(45);

/// Put the test credentials in this process's environment (inherited by the daemon).
/// Every test sets the same values.
pub fn set_credentials() {
    std::env::set_var("AWS_ACCESS_KEY_ID", ACCESS_KEY);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    std::env::remove_var("AWS_SESSION_TOKEN");
}

/// The `[publish]` table for `endpoint`, 5 MiB parts from 5 MiB on, quick scans and
/// retries; `extra` lines appended inside the table.
#[must_use]
pub fn publish_toml(endpoint: &str, extra: &str) -> String {
    format!(
        "[publish]\nenabled = true\nendpoint = {endpoint:?}\nallow_http = true\n\
         bucket = {BUCKET:?}\ndataset = {DATASET:?}\nrobot = {ROBOT:?}\n\
         part_size_bytes = {PART}\nmultipart_threshold_bytes = {PART}\n\
         scan_interval_ms = 100\nretry_min_ms = 100\nretry_max_ms = 400\n{extra}\n"
    )
}

/// `wshard status --json`'s result.
#[must_use]
pub fn status(d: &Daemon) -> Value {
    control_json(d, "status")
}

/// `wshard episodes --json`'s result.
#[must_use]
pub fn episodes(d: &Daemon) -> Value {
    control_json(d, "episodes")
}

fn control_json(d: &Daemon, verb: &str) -> Value {
    let o = Command::new(bins::wshard())
        .args([verb, "--json", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("cannot run wshard");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "wshard {verb}: not JSON ({e}): {}",
            crate::check::output_text(&o)
        )
    });
    v["result"].clone()
}

/// Poll `status.upload` until `pred` holds; panics with the status and the log after
/// `timeout`.
pub fn wait_upload(
    d: &Daemon,
    timeout: Duration,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let s = status(d);
        if pred(&s["upload"]) {
            return s["upload"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {timeout:?}; upload status: {:#}\nlog:\n{}",
            s["upload"],
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `status.upload.queue.<state>`.
#[must_use]
pub fn queued(up: &Value, state: &str) -> u64 {
    up["queue"][state].as_u64().unwrap_or(0)
}

/// One uncompressed 1 MiB channel: `mib` timesteps make a chunk of about `mib` MiB.
#[must_use]
pub fn big_channels() -> Vec<ChannelSpec> {
    vec![
        ChannelSpec::new("frame", Lane::Signal, DType::U8, vec![1024, 1024])
            .with_codec(CodecChoice::None),
    ]
}

/// Record episode `id` of `mib` 1 MiB timesteps and close it `complete`.
pub fn record_big(d: &Daemon, id: &str, mib: u64) {
    let ch = big_channels();
    let mut client = d.client(&format!("upload-test/{id}"));
    let mut w = client
        .open_episode(data::open_spec(id, &ch, Durability::Ack))
        .unwrap_or_else(|e| panic!("OPEN {id}: {e}"));
    for _ in 0..mib {
        data::push_steps(&mut w, &ch, 1).unwrap_or_else(|e| panic!("push {id}: {e}"));
    }
    w.close(Outcome::Completed)
        .unwrap_or_else(|e| panic!("CLOSE {id}: {e}"));
}

/// A store client on `s3` with the test keys (prefix `prefix`).
#[must_use]
pub fn store(s3: &S3Server, prefix: &str) -> Store {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: s3.endpoint().to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: prefix.to_owned(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    Store::new(
        cfg,
        &Credentials::new(ACCESS_KEY, SECRET_KEY),
        TransferOptions::default(),
    )
    .expect("store client")
}

/// Every file of episode `id` of `data_dir` is on the store under its hash, with its size
/// and SHA-256 (a streamed read of the remote copy).
pub fn assert_remote_copy(s3: &S3Server, prefix: &str, data_dir: &Path, id: &str) {
    let store = store(s3, prefix);
    let keys = Keys::new(store.config().key_prefix());
    let sel = select(data_dir, &[id.to_owned()]).expect("local episode");
    for ep in &sel.episodes {
        for f in &ep.files {
            let (hash, size) = store
                .hash_remote(&keys.blob(&f.sha256))
                .unwrap_or_else(|e| panic!("{id}/{}: {e}", f.rel));
            assert_eq!(
                (hash.as_str(), size),
                (f.sha256.as_str(), f.size),
                "{id}/{}",
                f.rel
            );
        }
    }
}

/// The episode keys of the dataset's latest version (its manifest's `episodes`).
#[must_use]
pub fn remote_episode_keys(s3: &S3Server, prefix: &str) -> Vec<String> {
    let store = store(s3, prefix);
    let keys = Keys::new(store.config().key_prefix());
    let ds = wshard_publish::DatasetId::parse(DATASET).expect("dataset");
    let Some(latest) = store.get(&keys.latest(&ds)).expect("latest.json") else {
        return Vec::new();
    };
    let l: Value = serde_json::from_slice(&latest.bytes).expect("latest JSON");
    let version = l["version"].as_str().expect("latest.version").to_owned();
    let m = store
        .get(&keys.version(&ds, &version))
        .expect("manifest")
        .expect("manifest present");
    let m: Value = serde_json::from_slice(&m.bytes).expect("manifest JSON");
    m["episodes"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every file the dataset's latest manifest lists for episode key `key` is on the store
/// with the manifest's size and SHA-256 (streamed): the remote copy verifies without the
/// local one.
pub fn assert_remote_episode_verifies(s3: &S3Server, prefix: &str, key: &str) {
    let store = store(s3, prefix);
    let keys = Keys::new(store.config().key_prefix());
    let ds = wshard_publish::DatasetId::parse(DATASET).expect("dataset");
    let latest = store
        .get(&keys.latest(&ds))
        .expect("latest.json")
        .expect("latest.json present");
    let l: Value = serde_json::from_slice(&latest.bytes).expect("latest JSON");
    let version = l["version"].as_str().expect("latest.version").to_owned();
    let m = store
        .get(&keys.version(&ds, &version))
        .expect("manifest")
        .expect("manifest present");
    let m: Value = serde_json::from_slice(&m.bytes).expect("manifest JSON");
    let files = m["episodes"][key]["files"]
        .as_object()
        .unwrap_or_else(|| panic!("episode {key} not in the manifest: {m}"));
    assert!(!files.is_empty(), "{key}: no files");
    for (rel, f) in files {
        let sha = f["sha256"].as_str().expect("sha256");
        let size = f["size"].as_u64().expect("size");
        let (hash, got) = store
            .hash_remote(&keys.blob(sha))
            .unwrap_or_else(|e| panic!("{key}/{rel}: {e}"));
        assert_eq!((hash.as_str(), got), (sha, size), "{key}/{rel}");
    }
}
