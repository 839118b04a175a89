//! `publish_azure_*`: the publish core, the multipart primitives, the error mapping and
//! `wshard publish` / `wshard doctor` with `--provider azure` against a real Azure Blob
//! Storage emulator (Azurite 3.35.0 on loopback, with an account key), on the committed data
//! directory golden/datadir-v0.1.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Barrier, Mutex, PoisonError};

use bytes::Bytes;
use tempfile::TempDir;
use wshard_e2e::azurite::{Azurite, ACCOUNT, ACCOUNT_KEY, CONTAINER, WRONG_KEY};
use wshard_e2e::bins;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::files_containing;
use wshard_publish::config::MIN_PART_SIZE;
use wshard_publish::doctor::{self, CheckStatus};
use wshard_publish::publish::{BlobAction, LatestChange};
use wshard_publish::store::AZURE_UPLOAD_ID;
use wshard_publish::{
    Credentials, DatasetId, Provider, PublishError, Publisher, Store, StoreConfig, TransferOptions,
};

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

fn config(az: &Azurite, container: &str) -> StoreConfig {
    StoreConfig {
        provider: Provider::Azure,
        endpoint: az.endpoint(),
        bucket: container.to_owned(),
        prefix: String::new(),
        region: String::new(),
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

fn store_with(az: &Azurite, key: &str, opts: TransferOptions) -> Store {
    // The account comes from the endpoint (http://127.0.0.1:PORT/ACCOUNT).
    Store::new(config(az, CONTAINER), &Credentials::azure(None, key), opts).expect("store")
}

fn publisher(az: &Azurite) -> Publisher {
    Publisher::new(store_with(az, ACCOUNT_KEY, quick()))
}

fn ds() -> DatasetId {
    DatasetId::parse("lab/pick").expect("dataset")
}

fn assert_key_free(text: &str) {
    for k in [ACCOUNT_KEY, WRONG_KEY] {
        assert!(!text.contains(k), "account key in {text}");
    }
}

#[test]
fn publish_azure_uploads_every_blob_and_republish_sends_nothing() {
    let az = Azurite::start();
    let data = data_dir(&[], true);
    // Every file goes up as a block list (the multipart path).
    let opts = TransferOptions {
        multipart_threshold: 1,
        part_size: MIN_PART_SIZE,
        ..quick()
    };
    let p = Publisher::new(store_with(&az, ACCOUNT_KEY, opts));
    let r = p.publish(data.path(), &ds(), &[]).expect("publish");
    let v = r.prepared.version_hash.clone();
    assert_eq!(r.prepared.files.len(), 4, "{:?}", r.prepared.files);
    assert!(r
        .prepared
        .files
        .iter()
        .any(|f| f.action == BlobAction::Uploaded { multipart: true }));
    for f in &r.prepared.files {
        assert!(matches!(f.action, BlobAction::Uploaded { .. }), "{f:?}");
        let (h, size) = p.store().hash_remote(&f.key).expect("stored blob");
        assert_eq!((h.as_str(), size), (f.sha256.as_str(), f.size), "{}", f.key);
    }
    assert!(r.bytes_sent() > 0);
    assert_eq!(r.latest, LatestChange::Created);
    let manifest = p
        .store()
        .get(&format!("datasets/lab/pick/versions/{v}.json"))
        .expect("get")
        .expect("manifest stored");
    assert_eq!(wshard_publish::hash::sha256_hex(&manifest.bytes), v);
    assert_eq!(
        p.read_latest(&ds()).expect("latest").as_deref(),
        Some(v.as_str())
    );

    let again = p.publish(data.path(), &ds(), &[]).expect("republish");
    assert_eq!(again.bytes_sent(), 0);
    assert!(again
        .prepared
        .files
        .iter()
        .all(|f| f.action == BlobAction::AlreadyStored));
    assert_eq!(again.prepared.version_hash, v);
    assert_eq!(again.latest, LatestChange::Unchanged);
}

/// Both publishers read the same latest.json, then both try to move it (the two
/// conditional puts one after the other, as in publish.rs): one wins, the other gets
/// LatestConflict. Round 1 is create-only (If-None-Match: *), round 2 If-Match.
fn race(az: &Azurite, a: &Path, b: &Path) -> (String, PublishError) {
    let barrier = Arc::new(Barrier::new(2));
    let serial = Arc::new(Mutex::new(()));
    let handles: Vec<_> = [a.to_path_buf(), b.to_path_buf()]
        .into_iter()
        .map(|dir| {
            let p = publisher(az);
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
    let (mut won, mut lost) = (Vec::new(), Vec::new());
    for h in handles {
        match h.join().expect("thread") {
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
fn publish_azure_race_on_latest_exactly_one_wins() {
    let az = Azurite::start();
    let p = publisher(&az);
    let dirs: Vec<TempDir> = ["ep-1", "ep-2", "ep-3", "ep-4"]
        .iter()
        .map(|n| data_dir(&[n], false))
        .collect();
    for round in [0, 2] {
        let (winner, err) = race(&az, dirs[round].path(), dirs[round + 1].path());
        match &err {
            PublishError::LatestConflict {
                dataset, current, ..
            } => {
                assert_eq!(dataset, "lab/pick");
                assert_eq!(current, &winner);
            }
            other => panic!("expected LatestConflict, got {other}"),
        }
        assert_eq!(
            p.read_latest(&ds()).expect("latest").as_deref(),
            Some(winner.as_str())
        );
    }
}

/// 2.5 parts of 5 MiB of non-repeating bytes.
fn payload() -> Vec<u8> {
    let len = MIN_PART_SIZE * 2 + MIN_PART_SIZE / 2;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn part(data: &[u8], idx: usize) -> Bytes {
    let end = ((idx + 1) * MIN_PART_SIZE).min(data.len());
    Bytes::copy_from_slice(&data[idx * MIN_PART_SIZE..end])
}

#[test]
fn publish_azure_multipart_resumes_through_the_primitives() {
    let az = Azurite::start();
    let key = "blobs/sha256/ab/multipart-test";
    let data = payload();
    // The first "process": starts, sends parts 0 and 1, keeps the id and part ids.
    let (upload_id, mut tags) = {
        let first = store_with(&az, ACCOUNT_KEY, quick());
        let id = first.create_multipart(key).expect("create");
        let tags: Vec<String> = (0..2)
            .map(|i| first.put_part(key, &id, i, part(&data, i)).expect("part"))
            .collect();
        (id, tags)
    };
    assert_eq!(upload_id, AZURE_UPLOAD_ID);
    assert!(tags.iter().all(|t| !t.is_empty()), "{tags:?}");
    // A new client resumes: only the missing part, then the block list.
    let second = store_with(&az, ACCOUNT_KEY, quick());
    assert_eq!(second.head_size(key).expect("head"), None);
    tags.push(
        second
            .put_part(key, &upload_id, 2, part(&data, 2))
            .expect("last part"),
    );
    second
        .complete_multipart(key, &upload_id, &tags)
        .expect("complete");
    let (h, size) = second.hash_remote(key).expect("hash");
    assert_eq!(
        (h, size),
        (wshard_publish::hash::sha256_hex(&data), data.len() as u64)
    );
    // A block the store does not have (expired after 7 days, dropped by another commit):
    // the upload is gone, start a new one.
    let other = "blobs/sha256/cd/multipart-gone";
    let t0 = second
        .put_part(other, &upload_id, 0, part(&data, 0))
        .expect("part");
    let bogus = "0123456789abcdef0123456789abcdef".to_owned();
    let e = second
        .complete_multipart(other, &upload_id, &[t0, bogus])
        .expect_err("unknown block");
    assert!(matches!(e, PublishError::UploadGone { .. }), "{e}");
    assert!(!e.is_transient());
    // Abort is a no-op on Azure (uncommitted blocks expire): never an error.
    second.abort_multipart(other, &upload_id).expect("abort");
}

/// The store restarted mid-upload (stopped gracefully: see `Azurite::restart`): the
/// uncommitted blocks sent before are kept, the upload completes from a new client with the
/// saved part ids (only the missing part sent), and the blob verifies.
#[test]
fn publish_azure_multipart_resumes_after_a_restart_of_the_server() {
    let mut az = Azurite::start();
    let key = "blobs/sha256/ef/multipart-restart";
    let data = payload();
    let first = store_with(&az, ACCOUNT_KEY, quick());
    let id = first.create_multipart(key).expect("create");
    let mut tags: Vec<String> = (0..2)
        .map(|i| first.put_part(key, &id, i, part(&data, i)).expect("part"))
        .collect();
    drop(first);
    az.restart();
    let second = store_with(&az, ACCOUNT_KEY, quick());
    tags.push(
        second
            .put_part(key, &id, 2, part(&data, 2))
            .expect("last part"),
    );
    second
        .complete_multipart(key, &id, &tags)
        .expect("complete after the restart");
    let (h, size) = second.hash_remote(key).expect("hash");
    assert_eq!(
        (h, size),
        (wshard_publish::hash::sha256_hex(&data), data.len() as u64)
    );
}

#[test]
fn publish_azure_wrong_key_missing_container_and_down_server_are_typed() {
    let mut az = Azurite::start();
    let data = data_dir(&["ep"], false);
    let wrong = Publisher::new(store_with(&az, WRONG_KEY, quick()));
    let e = wrong
        .publish(data.path(), &ds(), &[])
        .expect_err("wrong key");
    assert!(
        matches!(e, PublishError::CredentialsRejected { .. }),
        "{e:?}"
    );
    assert_key_free(&format!("{e} {e:?} {wrong:?}"));
    let creds = format!("{:?}", Credentials::azure(Some(ACCOUNT), ACCOUNT_KEY));
    assert_key_free(&creds);
    // Nothing was written.
    assert_eq!(
        publisher(&az).read_latest(&ds()).expect("read latest"),
        None
    );

    let missing = Store::new(
        config(&az, "no-such-container"),
        &Credentials::azure(None, ACCOUNT_KEY),
        quick(),
    )
    .expect("store");
    let e = missing.check_bucket("").expect_err("no container");
    assert!(matches!(e, PublishError::BucketNotFound { .. }), "{e:?}");

    // Credentials of another provider are refused before any request.
    let e = Store::new(
        config(&az, CONTAINER),
        &Credentials::new("id", "secret"),
        quick(),
    )
    .expect_err("s3 credentials for azure");
    assert!(matches!(e, PublishError::InvalidConfig { .. }), "{e}");

    let p = publisher(&az);
    az.stop();
    let e = p.read_latest(&ds()).expect_err("server down");
    assert!(
        matches!(e, PublishError::EndpointUnreachable { .. }),
        "{e:?}"
    );
    assert!(e.is_transient());
}

#[test]
fn publish_azure_doctor_and_cli_with_az_bucket_url() {
    let az = Azurite::start();
    let cfg = config(&az, CONTAINER);
    let checks = doctor::run(&cfg, Ok(Credentials::azure(None, ACCOUNT_KEY)), &quick());
    for c in &checks {
        assert_eq!(c.status, CheckStatus::Ok, "{c:?}");
    }
    assert_eq!(checks.len(), 7, "{checks:?}");

    // The real binary: the provider from the az:// bucket URL, the key from the environment.
    let data = data_dir(&[], true);
    let run = |args: &[&str], key: Option<&str>| -> Output {
        let mut cmd = Command::new(bins::wshard());
        cmd.args(args).args([
            "--endpoint",
            &az.endpoint(),
            "--bucket",
            &format!("az://{CONTAINER}"),
            "--allow-http",
        ]);
        for v in [
            "AZURE_STORAGE_ACCOUNT_NAME",
            "AZURE_STORAGE_ACCOUNT_KEY",
            "AZURE_STORAGE_SAS_TOKEN",
            "WSHARD_STORE_PROVIDER",
            "WSHARD_S3_ENDPOINT",
            "WSHARD_S3_BUCKET",
        ] {
            cmd.env_remove(v);
        }
        if let Some(k) = key {
            cmd.env("AZURE_STORAGE_ACCOUNT_KEY", k);
        }
        cmd.output().expect("run wshard")
    };
    let text = |o: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let mut all = String::new();
    let out = run(&["doctor"], Some(ACCOUNT_KEY));
    all += &text(&out);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("provider azure"), "{}", text(&out));

    let dir = data.path().to_string_lossy().into_owned();
    let out = run(
        &["publish", "--dataset", "lab/pick", "--data-dir", &dir],
        Some(ACCOUNT_KEY),
    );
    all += &text(&out);
    assert!(out.status.success(), "{}", text(&out));
    let p = publisher(&az);
    assert!(p.read_latest(&ds()).expect("latest").is_some());

    let out = run(&["doctor"], Some(WRONG_KEY));
    all += &text(&out);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("AZURE_STORAGE_ACCOUNT_KEY"),
        "{}",
        text(&out)
    );
    let out = run(&["doctor"], None);
    all += &text(&out);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("AZURE_STORAGE_ACCOUNT_KEY is not set"),
        "{}",
        text(&out)
    );
    // A bucket URL of another provider than --provider: refused.
    let out = run(&["doctor", "--provider", "gcs"], Some(ACCOUNT_KEY));
    all += &text(&out);
    assert!(!out.status.success());
    assert!(text(&out).contains("az://"), "{}", text(&out));
    assert_key_free(&all);
    // Neither the emulator's files nor the data directory hold the key (base64 or raw).
    for needle in [
        ACCOUNT_KEY.as_bytes(),
        b"wshard-Azure-Secret-3c1d9e7f".as_slice(),
    ] {
        assert!(files_containing(data.path(), needle).is_empty());
        assert!(files_containing(&az.store_root(), needle).is_empty());
    }
}

#[test]
fn publish_azure_access_denied_names_the_operation_and_what_it_was_on() {
    // A real 403 with valid credentials: an account SAS allowed to read only. The publish's
    // first step lists the whole container (no prefix): the message says so, not `to  in`.
    let az = Azurite::start();
    let data = data_dir(&[], true);
    let out = Command::new(bins::wshard())
        .args(["publish", "--dataset", "lab/pick", "--data-dir"])
        .arg(data.path())
        .args([
            "--endpoint",
            &az.endpoint(),
            "--bucket",
            &format!("az://{CONTAINER}"),
            "--allow-http",
        ])
        .env_remove("AZURE_STORAGE_ACCOUNT_KEY")
        .env_remove("AZURE_STORAGE_ACCOUNT_NAME")
        .env(
            "AZURE_STORAGE_SAS_TOKEN",
            wshard_e2e::azurite::account_sas("r"),
        )
        .output()
        .expect("run wshard");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "access denied: list at the top level of the bucket (no prefix) in bucket {CONTAINER}"
        )),
        "{said}"
    );
    assert!(!said.contains("access denied to  in"), "{said}");
    assert_key_free(&said);
}
