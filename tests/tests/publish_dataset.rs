//! `publish_dataset_*`: `wshard dataset list|show|pull` against a real s3s-fs: the datasets
//! with their latest version, a version's episodes and files, a pull that writes the
//! episode directories byte for byte, hash-checks every blob and downloads nothing again.

use std::path::Path;

use serde_json::Value;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::remote::{ds, publisher, text, wshard, wshard_env};
use wshard_e2e::s3::{S3Server, SECRET_KEY, WRONG_SECRET};
use wshard_publish::DatasetId;

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Every file below `dir` whose name says it is a download in progress.
fn partial_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains(".partial") {
                found.push(p);
            }
        }
    }
    found
}

fn pull(s3: &S3Server, cache: &Path, spec: &str, dir: &Path) -> Value {
    let out = wshard(
        s3,
        cache,
        &[
            "dataset",
            "pull",
            spec,
            dir.to_str().expect("utf-8"),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    json_lines(&out).remove(0)
}

#[test]
fn publish_dataset_list_show_pull_and_repull_downloads_nothing() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let r = p
        .publish(&datadir_v01(), &ds(), &["legacy-complete".into()])
        .expect("publish");
    let version = r.prepared.version_hash.clone();
    let other = DatasetId::parse("lab/place").expect("name");
    let second = tempfile::tempdir_in("/tmp").expect("dir");
    copy_tree(
        &datadir_v01().join("legacy-complete"),
        &second.path().join("ep-b"),
    );
    let r2 = p.publish(second.path(), &other, &[]).expect("publish 2");
    let cache = tempfile::tempdir().expect("cache");

    // list: both datasets, each with its latest version.
    let out = wshard(&s3, cache.path(), &["dataset", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows = json_lines(&out);
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["dataset"].as_str().unwrap_or_default().to_owned(),
                r["latest"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("lab/pick".to_owned(), version.clone()),
            ("lab/place".to_owned(), r2.prepared.version_hash.clone())
        ]
    );
    let out = wshard(&s3, cache.path(), &["dataset", "list"]);
    assert!(text(&out).contains("(2 datasets)"), "{}", text(&out));

    // show: episodes, files, sizes, status.
    let out = wshard(
        &s3,
        cache.path(),
        &["dataset", "show", "lab/pick", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = json_lines(&out).remove(0);
    assert_eq!(doc["version"], version.as_str());
    let ep = &doc["episodes"]["legacy-complete"];
    assert_eq!(ep["status"], "complete");
    let local = datadir_v01().join("legacy-complete");
    for (file, f) in ep["files"].as_object().expect("files") {
        let len = std::fs::metadata(local.join(file))
            .expect("local file")
            .len();
        assert_eq!(f["size"], len, "{file}");
    }
    let out = wshard(
        &s3,
        cache.path(),
        &["dataset", "show", &format!("lab/pick@{version}")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("legacy-complete_manifest.wshard"));

    // pull: the episode directory byte for byte.
    let into = tempfile::tempdir_in("/tmp").expect("into");
    let first = pull(&s3, cache.path(), "lab/pick", into.path());
    assert_eq!(first["version"], version.as_str());
    assert_eq!(first["files"], 4);
    assert_eq!(first["written_files"], 4);
    assert!(first["downloaded_bytes"].as_u64().expect("n") > 0);
    for e in std::fs::read_dir(&local).expect("local dir") {
        let e = e.expect("entry");
        let pulled = into.path().join("legacy-complete").join(e.file_name());
        assert_eq!(
            std::fs::read(&pulled).expect("pulled"),
            std::fs::read(e.path()).expect("local"),
            "{}",
            pulled.display()
        );
    }
    // The pulled episode reads as a local one.
    let out = std::process::Command::new(wshard_e2e::bins::wshard())
        .args([
            "verify",
            into.path().join("legacy-complete").to_str().expect("utf-8"),
        ])
        .output()
        .expect("verify");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Re-pull: nothing downloaded, nothing written.
    let again = pull(
        &s3,
        cache.path(),
        &format!("lab/pick@{version}"),
        into.path(),
    );
    assert_eq!(
        (
            again["downloaded_bytes"].as_u64(),
            again["written_files"].as_u64()
        ),
        (Some(0), Some(0))
    );
    // Into an empty directory: written from the cache, still nothing downloaded.
    let fresh = tempfile::tempdir_in("/tmp").expect("fresh");
    let third = pull(&s3, cache.path(), "lab/pick", fresh.path());
    assert_eq!(
        (
            third["downloaded_bytes"].as_u64(),
            third["written_files"].as_u64()
        ),
        (Some(0), Some(4))
    );
}

#[test]
fn publish_dataset_pull_is_hash_checked() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let r = p
        .publish(&datadir_v01(), &ds(), &["legacy-complete".into()])
        .expect("publish");
    // Rot one byte of a stored chunk (same size) on the server.
    let f = r
        .prepared
        .files
        .iter()
        .find(|f| f.file.ends_with("chunk_0001.wshard"))
        .expect("chunk");
    let path = s3.object_path(&f.key);
    let mut bytes = std::fs::read(&path).expect("stored");
    bytes[100] ^= 0x01;
    std::fs::write(&path, &bytes).expect("corrupt");

    let cache = tempfile::tempdir().expect("cache");
    let into = tempfile::tempdir_in("/tmp").expect("into");
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "dataset",
            "pull",
            "lab/pick",
            into.path().to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains(&f.key) && t.contains(&f.sha256), "{t}");
    // Nothing of the bad blob, in the directory or the cache.
    let pulled = into.path().join("legacy-complete").join(&f.file);
    assert!(!pulled.exists(), "{}", pulled.display());
    let cached = wshard_publish::cache::BlobCache::at(cache.path())
        .blob_path(&f.sha256)
        .expect("path");
    assert!(!cached.exists());
    for d in [into.path(), cache.path()] {
        let left = partial_files(d);
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn publish_dataset_errors_are_typed() {
    let s3 = S3Server::start();
    let cache = tempfile::tempdir().expect("cache");
    let out = wshard(&s3, cache.path(), &["dataset", "show", "lab/nothing"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("dataset lab/nothing not found"),
        "{}",
        text(&out)
    );
    let out = wshard(&s3, cache.path(), &["dataset", "show", "Lab/x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = wshard(
        &s3,
        cache.path(),
        &["dataset", "pull", "lab/x@123", "/tmp/nowhere"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("64 lower-case hex"), "{}", text(&out));
    let out = wshard(&s3, cache.path(), &["dataset", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("(0 datasets)"), "{}", text(&out));
    // A wrong secret: rejected (exit 1) by every command, and no output holds a secret.
    let wrong = [("AWS_SECRET_ACCESS_KEY", WRONG_SECRET)];
    for args in [
        &["dataset", "list"][..],
        &["dataset", "show", "lab/pick"],
        &["cat", "s3://fleet/datasets/lab/pick/ep/f.wshard", "x"],
        &["inspect", "s3://fleet/blobs/sha256/00/x"],
    ] {
        let out = wshard_env(&s3, cache.path(), args, &wrong);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {t}");
        assert!(t.contains("rejected the credentials"), "{args:?}: {t}");
        assert!(
            !t.contains(WRONG_SECRET) && !t.contains(SECRET_KEY),
            "{args:?}: {t}"
        );
    }
}
