//! `publish_*`: the publish core (wshard-publish) against a real S3-compatible server
//! (s3s-fs 0.14.1 on loopback, with access keys), with episodes recorded by the real
//! wshardd and the committed data directory golden/datadir-v0.1.

use std::path::Path;
use std::sync::{Arc, Barrier, Mutex, PoisonError};

use tempfile::TempDir;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY, WRONG_SECRET};
use wshard_e2e::{Daemon, DaemonOptions};
use wshard_publish::episodes::hash_file;
use wshard_publish::publish::{BlobAction, LatestChange};
use wshard_publish::{
    Credentials, DatasetId, PublishError, Publisher, Store, StoreConfig, TransferOptions,
};

/// A data directory holding the golden `legacy-complete` episode under each of `names`
/// (plus, with `all_golden`, the golden aborted and recording episodes).
fn data_dir(names: &[&str], all_golden: bool) -> TempDir {
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    if all_golden {
        copy_tree(&datadir_v01(), dir.path());
    }
    for n in names {
        copy_tree(&datadir_v01().join("legacy-complete"), &dir.path().join(n));
    }
    dir
}

fn config(endpoint: &str, bucket: &str) -> StoreConfig {
    StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: endpoint.to_owned(),
        bucket: bucket.to_owned(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    }
}

fn quick() -> TransferOptions {
    TransferOptions {
        max_retries: 1,
        connect_timeout: std::time::Duration::from_secs(2),
        retry_timeout: std::time::Duration::from_secs(5),
        ..TransferOptions::default()
    }
}

fn publisher_with(cfg: StoreConfig, secret: &str, opts: TransferOptions) -> Publisher {
    let store = Store::new(cfg, &Credentials::new(ACCESS_KEY, secret), opts).expect("store");
    Publisher::new(store)
}

fn publisher(s3: &S3Server) -> Publisher {
    publisher_with(config(s3.endpoint(), BUCKET), SECRET_KEY, quick())
}

fn ds() -> DatasetId {
    DatasetId::parse("lab/pick").expect("dataset")
}

fn object(s3: &S3Server, key: &str) -> Vec<u8> {
    std::fs::read(s3.object_path(key)).unwrap_or_else(|e| panic!("{key} not in the store: {e}"))
}

#[test]
fn publish_uploads_every_blob_and_republish_sends_nothing() {
    let s3 = S3Server::start();
    let data = data_dir(&[], true);
    let p = publisher(&s3);
    let r = p.publish(data.path(), &ds(), &[]).expect("publish");
    let v = r.prepared.version_hash.clone();
    // Every file of the finished episode, each stored under its hash, byte for byte.
    let files: Vec<&str> = r.prepared.files.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "legacy-complete_chunk_0000.wshard",
            "legacy-complete_chunk_0001.wshard",
            "legacy-complete_chunk_0002.wshard",
            "legacy-complete_manifest.wshard"
        ]
    );
    for f in &r.prepared.files {
        assert_eq!(f.action, BlobAction::Uploaded { multipart: false });
        assert_eq!(
            f.key,
            format!("blobs/sha256/{}/{}", &f.sha256[..2], f.sha256)
        );
        let local = std::fs::read(data.path().join(&f.episode).join(&f.file)).expect("local");
        assert_eq!(object(&s3, &f.key), local, "{}", f.key);
    }
    assert!(r.bytes_sent() > 0);
    // The aborted and the recording episodes are left out, with their status.
    let left: Vec<_> = r
        .prepared
        .left_out
        .iter()
        .map(|(d, w)| format!("{d}: {w}"))
        .collect();
    assert_eq!(
        left,
        [
            "legacy-aborted: status aborted",
            "legacy-recording: status recording"
        ]
    );
    // The manifest is stored under its own hash; latest points at it.
    let manifest_bytes = object(&s3, &format!("datasets/lab/pick/versions/{v}.json"));
    assert_eq!(wshard::digest::sha256_hex(&manifest_bytes), v);
    let text = String::from_utf8_lossy(&manifest_bytes).into_owned();
    assert!(
        !text.contains(&data.path().display().to_string()),
        "a local path in {text}"
    );
    assert!(
        !text.contains(' ') && !text.contains('\n'),
        "not canonical: {text}"
    );
    assert_eq!(r.latest, LatestChange::Created);
    assert_eq!(
        p.read_latest(&ds()).expect("latest").as_deref(),
        Some(v.as_str())
    );
    let latest_before = object(&s3, "datasets/lab/pick/latest.json");

    // Again: nothing sent, same hash, latest untouched.
    let again = p.publish(data.path(), &ds(), &[]).expect("republish");
    assert_eq!(again.bytes_sent(), 0);
    assert_eq!(again.bytes_skipped(), r.bytes_sent());
    assert!(again
        .prepared
        .files
        .iter()
        .all(|f| f.action == BlobAction::AlreadyStored));
    assert_eq!(again.prepared.version_hash, v);
    assert!(!again.prepared.version_created);
    assert_eq!(again.latest, LatestChange::Unchanged);
    assert_eq!(object(&s3, "datasets/lab/pick/latest.json"), latest_before);
    let (hash, m) = p.latest_version(&ds()).expect("latest version");
    assert_eq!((hash, m), (v, r.prepared.version));
}

#[test]
fn publish_new_episode_sends_only_its_blobs_multipart_verified() {
    let s3 = S3Server::start();
    let d = Daemon::start(DaemonOptions::default());
    d.record_ok("ep-a", 500);
    // Multipart for every file of at least 4 KiB, in parts of S3's smallest size.
    let part = wshard_publish::config::MIN_PART_SIZE;
    let opts = TransferOptions {
        multipart_threshold: 4096,
        part_size: part,
        ..quick()
    };
    let p = publisher_with(config(s3.endpoint(), BUCKET), SECRET_KEY, opts);
    let v1 = p.publish(&d.data_dir(), &ds(), &[]).expect("publish v1");
    assert!(v1
        .prepared
        .files
        .iter()
        .any(|f| f.action == BlobAction::Uploaded { multipart: true }));
    // A chunk of more than two parts (about 200 bytes per step).
    d.record_ok("ep-b", 60_000);
    let v2 = p.publish(&d.data_dir(), &ds(), &[]).expect("publish v2");
    assert_ne!(v2.prepared.version_hash, v1.prepared.version_hash);
    for f in &v2.prepared.files {
        let expected = if f.episode == "ep-b" {
            BlobAction::Uploaded {
                multipart: f.size >= 4096,
            }
        } else {
            BlobAction::AlreadyStored
        };
        assert_eq!(f.action, expected, "{}/{}", f.episode, f.file);
        if f.episode == "ep-b" && f.file.contains("chunk") {
            assert!(
                f.size > 2 * part as u64,
                "{} is only {} bytes",
                f.file,
                f.size
            );
        }
        // What the store holds hashes to the key (verified by publish; checked again here).
        let (h, size) = hash_file(&s3.object_path(&f.key)).expect("stored blob");
        assert_eq!((h.as_str(), size), (f.sha256.as_str(), f.size));
    }
    let ep_b_bytes: u64 = v2
        .prepared
        .files
        .iter()
        .filter(|f| f.episode == "ep-b")
        .map(|f| f.size)
        .sum();
    // The new episode's files and the new catalog (one row more).
    assert_eq!(
        v2.prepared.catalog.action,
        BlobAction::Uploaded { multipart: false }
    );
    assert_eq!(v2.bytes_sent(), ep_b_bytes + v2.prepared.catalog.size);
    assert_eq!(
        v2.latest,
        LatestChange::Moved {
            previous: v1.prepared.version_hash.clone()
        }
    );
    let (hash, m) = p.latest_version(&ds()).expect("latest");
    assert_eq!(hash, v2.prepared.version_hash);
    assert_eq!(m.episodes.keys().collect::<Vec<_>>(), ["ep-a", "ep-b"]);
    // The older version stays readable.
    assert_eq!(
        p.read_version(&ds(), &v1.prepared.version_hash)
            .expect("v1")
            .episodes
            .len(),
        1
    );
}

/// Two publishers prepare different versions and both read the same latest.json (the
/// read-modify-write window of a real race), then both try to move it: exactly one wins,
/// the other gets the typed conflict naming the dataset.
///
/// The two conditional puts reach the server one after the other (`serial`): s3s-fs checks
/// If-Match / If-None-Match and then writes, without a lock, so two puts inside the server
/// at the same instant can both pass its check (measured; AWS S3, MinIO and R2 decide
/// atomically). What is tested is the protocol: both saw the same latest, both tried.
fn race(s3: &S3Server, a: &Path, b: &Path) -> (String, PublishError) {
    let barrier = Arc::new(Barrier::new(2));
    let serial = Arc::new(Mutex::new(()));
    let handles: Vec<_> = [a.to_path_buf(), b.to_path_buf()]
        .into_iter()
        .map(|dir| {
            let p = publisher(s3);
            let barrier = Arc::clone(&barrier);
            let serial = Arc::clone(&serial);
            std::thread::spawn(move || {
                let prepared = p.prepare(&dir, &ds(), &[]).expect("prepare");
                let observed = p.observe_latest(&ds()).expect("observe");
                barrier.wait();
                let _one_at_a_time = serial.lock().unwrap_or_else(PoisonError::into_inner);
                p.commit_over(prepared, observed)
                    .map(|r| r.prepared.version_hash)
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let mut won = Vec::new();
    let mut lost = Vec::new();
    for r in results {
        match r {
            Ok(v) => won.push(v),
            Err(e) => lost.push(e),
        }
    }
    assert_eq!(
        (won.len(), lost.len()),
        (1, 1),
        "won {won:?}, lost {lost:?}"
    );
    (won.remove(0), lost.remove(0))
}

#[test]
fn publish_race_on_latest_exactly_one_wins() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let dirs: Vec<TempDir> = ["ep-1", "ep-2", "ep-3", "ep-4"]
        .iter()
        .map(|n| data_dir(&[n], false))
        .collect();
    // Round 1: no latest.json yet (create-only); round 2: over an existing one (If-Match).
    for round in [0, 2] {
        let (winner, err) = race(&s3, dirs[round].path(), dirs[round + 1].path());
        match &err {
            PublishError::LatestConflict {
                dataset, current, ..
            } => {
                assert_eq!(dataset, "lab/pick");
                assert_eq!(current, &winner);
            }
            other => panic!("expected LatestConflict, got {other}"),
        }
        assert!(err.to_string().contains("lab/pick"), "{err}");
        assert_eq!(
            p.read_latest(&ds()).expect("latest").as_deref(),
            Some(winner.as_str())
        );
    }
    // Retrying is the caller's choice: the loser publishes again on top of the new latest.
    let retry = p.publish(dirs[0].path(), &ds(), &[]).expect("retry");
    assert!(matches!(
        retry.latest,
        LatestChange::Moved { .. } | LatestChange::Unchanged
    ));
    assert_eq!(
        p.read_latest(&ds()).expect("latest").as_deref(),
        Some(retry.prepared.version_hash.as_str())
    );
}

fn assert_secret_free(e: &PublishError) {
    for text in [e.to_string(), format!("{e:?}")] {
        for secret in [SECRET_KEY, WRONG_SECRET] {
            assert!(!text.contains(secret), "secret in {text}");
        }
    }
}

#[test]
fn publish_wrong_secret_is_a_typed_credentials_error_without_the_secret() {
    let s3 = S3Server::start();
    let data = data_dir(&["ep"], false);
    let p = publisher_with(config(s3.endpoint(), BUCKET), WRONG_SECRET, quick());
    let e = p
        .publish(data.path(), &ds(), &[])
        .expect_err("wrong secret");
    assert!(matches!(e, PublishError::CredentialsRejected { .. }), "{e}");
    assert_secret_free(&e);
    let creds = format!("{:?}", Credentials::new(ACCESS_KEY, SECRET_KEY));
    assert!(!creds.contains(SECRET_KEY), "{creds}");
    assert!(format!("{p:?}").contains(BUCKET) && !format!("{p:?}").contains(WRONG_SECRET));
    assert!(
        !s3.object_path("datasets").exists(),
        "something was written"
    );
    // An unknown access key id is the same typed error.
    let unknown = Store::new(
        config(s3.endpoint(), BUCKET),
        &Credentials::new("no-such-key", SECRET_KEY),
        quick(),
    )
    .expect("store");
    let e = Publisher::new(unknown)
        .publish(data.path(), &ds(), &[])
        .expect_err("unknown key");
    assert!(matches!(e, PublishError::CredentialsRejected { .. }), "{e}");
    assert_secret_free(&e);
}

#[test]
fn publish_doctor_fails_the_endpoint_check_with_a_hint_and_skips_the_rest() {
    use wshard_publish::doctor::{self, CheckStatus};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let cfg = config(&format!("http://127.0.0.1:{port}"), BUCKET);
    let checks = doctor::run(&cfg, Ok(Credentials::new(ACCESS_KEY, SECRET_KEY)), &quick());
    let got: Vec<(&str, CheckStatus)> = checks.iter().map(|c| (c.name, c.status)).collect();
    assert_eq!(
        got,
        [
            ("config", CheckStatus::Ok),
            ("credentials", CheckStatus::Ok),
            ("endpoint", CheckStatus::Failed),
            ("bucket", CheckStatus::Skipped),
            ("write", CheckStatus::Skipped),
            ("create-only", CheckStatus::Skipped),
            ("compare-and-swap", CheckStatus::Skipped),
        ]
    );
    let hint = checks[2].hint.as_deref().unwrap_or_default();
    assert!(hint.contains("check the endpoint URL"), "{hint}");
    // An http:// endpoint without allow_http is a config failure.
    let mut no_http = cfg;
    no_http.allow_http = false;
    let checks = doctor::run(
        &no_http,
        Ok(Credentials::new(ACCESS_KEY, SECRET_KEY)),
        &quick(),
    );
    assert_eq!(checks[0].status, CheckStatus::Failed);
    assert!(
        checks[0].detail.contains("--allow-http"),
        "{}",
        checks[0].detail
    );
}

#[test]
fn publish_missing_bucket_is_typed() {
    let s3 = S3Server::start();
    let data = data_dir(&["ep"], false);
    let p = publisher_with(config(s3.endpoint(), "no-such-bucket"), SECRET_KEY, quick());
    let e = p
        .publish(data.path(), &ds(), &[])
        .expect_err("missing bucket");
    match &e {
        PublishError::BucketNotFound { bucket, .. } => assert_eq!(bucket, "no-such-bucket"),
        other => panic!("expected BucketNotFound, got {other}"),
    }
    assert_secret_free(&e);
}

#[test]
fn publish_unreachable_endpoint_is_typed() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let data = data_dir(&["ep"], false);
    let endpoint = format!("http://127.0.0.1:{port}");
    let p = publisher_with(config(&endpoint, BUCKET), SECRET_KEY, quick());
    let e = p.publish(data.path(), &ds(), &[]).expect_err("unreachable");
    match &e {
        PublishError::EndpointUnreachable { endpoint: ep, .. } => assert_eq!(ep, &endpoint),
        other => panic!("expected EndpointUnreachable, got {other}"),
    }
    assert_secret_free(&e);
}

#[test]
fn publish_refuses_a_recording_or_aborted_episode_by_name() {
    let s3 = S3Server::start();
    let data = data_dir(&[], true);
    let p = publisher(&s3);
    for (ep, status) in [
        ("legacy-recording", "recording"),
        ("legacy-aborted", "aborted"),
    ] {
        let e = p
            .publish(data.path(), &ds(), &["legacy-complete".into(), ep.into()])
            .expect_err("not finished");
        match &e {
            PublishError::EpisodeNotFinished { episode, status: s } => {
                assert_eq!((episode.as_str(), s.as_str()), (ep, status));
            }
            other => panic!("expected EpisodeNotFinished, got {other}"),
        }
        assert!(e.to_string().contains(ep), "{e}");
    }
    let e = p
        .publish(data.path(), &ds(), &["nope".into()])
        .expect_err("missing");
    assert!(matches!(e, PublishError::EpisodeNotFound { .. }), "{e}");
    // Refused before anything was sent.
    assert!(!s3.object_path("blobs").exists());
    assert!(!s3.object_path("datasets").exists());
}

#[test]
fn publish_detects_a_tampered_manifest_and_a_corrupt_local_chunk() {
    let s3 = S3Server::start();
    let data = data_dir(&["ep"], false);
    let p = publisher(&s3);
    let r = p.publish(data.path(), &ds(), &[]).expect("publish");
    let v = r.prepared.version_hash;
    let key = format!("datasets/lab/pick/versions/{v}.json");
    let mut bytes = object(&s3, &key);
    let last = bytes.len() - 2;
    bytes[last] ^= 1;
    std::fs::write(s3.object_path(&key), &bytes).expect("tamper");
    for e in [
        p.read_version(&ds(), &v).expect_err("tampered"),
        p.latest_version(&ds()).expect_err("tampered"),
        p.publish(data.path(), &ds(), &[]).expect_err("tampered"),
    ] {
        match &e {
            PublishError::VersionHashMismatch {
                expected, key: k, ..
            } => {
                assert_eq!((expected, k), (&v, &key));
            }
            other => panic!("expected VersionHashMismatch, got {other}"),
        }
    }
    // Unknown dataset.
    let other = DatasetId::parse("lab/other").expect("dataset");
    let e = p.latest_version(&other).expect_err("not found");
    assert!(matches!(e, PublishError::DatasetNotFound { .. }), "{e}");
    // A local chunk that no longer matches its manifest is never published.
    let chunk = data.path().join("ep/legacy-complete_chunk_0001.wshard");
    let mut c = std::fs::read(&chunk).expect("chunk");
    c[100] ^= 0xff;
    std::fs::write(&chunk, c).expect("corrupt");
    let e = p
        .publish(
            data.path(),
            &DatasetId::parse("lab/third").expect("ds"),
            &[],
        )
        .expect_err("corrupt");
    assert!(matches!(e, PublishError::LocalChunkMismatch { .. }), "{e}");
    assert!(!s3.object_path("datasets/lab/third").exists());
}

#[test]
fn publish_multistream_episode_keeps_its_layout_and_refuses_a_live_one() {
    use wshard_e2e::data;
    use wshard_e2e::multi::{episode_close, event, owner, producer, stream_spec};
    use wshard_ingest_proto::{Durability, Outcome};

    let s3 = S3Server::start();
    let d = Daemon::start(DaemonOptions::default().rotation(8));
    let mut o = owner(&d.socket(), "multi-ep");
    let joints = stream_spec(
        "multi-ep",
        "joints",
        &data::channels(),
        1000.0,
        Durability::Ack,
    );
    let imu = stream_spec(
        "multi-ep",
        "imu",
        &data::small_channels(),
        200.0,
        Durability::Ack,
    );
    let mut a = producer(&d.socket(), &joints);
    let mut b = producer(&d.socket(), &imu);
    a.timesteps(&data::channels(), 0..20);
    b.timesteps(&data::small_channels(), 0..4);
    assert_eq!(event(&mut o, data::t_ns(3), "instruction", "pick"), 0);
    a.flush_until(20);
    b.flush_until(4);
    a.close(Outcome::Completed, 20);
    b.close(Outcome::Completed, 4);
    assert_eq!(episode_close(&mut o), 0);
    // A second episode still recording while we publish.
    let live_owner = owner(&d.socket(), "live-ep");
    let live = stream_spec(
        "live-ep",
        "joints",
        &data::channels(),
        1000.0,
        Durability::Ack,
    );
    let mut l = producer(&d.socket(), &live);
    l.timesteps(&data::channels(), 0..10);
    l.flush_until(10);

    let p = publisher(&s3);
    let e = p
        .publish(&d.data_dir(), &ds(), &["multi-ep".into(), "live-ep".into()])
        .expect_err("live episode");
    match &e {
        PublishError::EpisodeNotFinished { episode, .. } => assert_eq!(episode, "live-ep"),
        other => panic!("expected EpisodeNotFinished, got {other}"),
    }
    let r = p.publish(&d.data_dir(), &ds(), &[]).expect("publish");
    assert_eq!(
        r.prepared.left_out,
        [("live-ep".to_owned(), "status recording".to_owned())]
    );
    let files: Vec<&str> = r.prepared.files.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(
        files[..3],
        [
            "multi-ep_events.jsonl",
            "multi-ep_index.json",
            "streams/imu/imu_chunk_0000.wshard"
        ]
    );
    assert!(
        files.contains(&"streams/imu/imu_manifest.wshard"),
        "{files:?}"
    );
    assert!(
        files.contains(&"streams/joints/joints_chunk_0002.wshard"),
        "{files:?}"
    );
    assert!(
        files.contains(&"streams/joints/joints_manifest.wshard"),
        "{files:?}"
    );
    for f in &r.prepared.files {
        let local = std::fs::read(d.data_dir().join("multi-ep").join(&f.file)).expect("local");
        assert_eq!(object(&s3, &f.key), local, "{}", f.file);
    }
    // The live episode is left to the daemon's end (killed with the test's daemon).
    drop((l, live_owner));
}
