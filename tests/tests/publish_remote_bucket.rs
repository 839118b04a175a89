//! `publish_remote_bucket_*`: a remote read is for the bucket its URL names, against a real
//! S3-compatible server (s3s-fs): a bucket that does not exist is said to be missing (not
//! a dataset never published, not a missing key), and a blob the local cache holds answers
//! only for a store, bucket and key it was read from (or that the store confirms to hold
//! it), so a mistyped bucket is found out even when the cache has the bytes; offline, a
//! blob is read from the cache only where it came from.

use wshard_e2e::fixtures::datadir_v01;
use wshard_e2e::remote::{ds, publisher, put_blob, shard_of_blocks, text, wshard};
use wshard_e2e::s3::{S3Server, BUCKET};
use wshard_publish::cache::BlobCache;
use wshard_publish::remote::{BlobRef, RemoteShard};
use wshard_publish::PublishError;

/// A bucket the server does not have.
const MISSING: &str = "no-such-bucket";

#[test]
fn publish_remote_bucket_missing_is_named_by_cat_inspect_and_dataset() {
    let s3 = S3Server::start();
    let data = datadir_v01();
    let r = publisher(&s3)
        .publish(&data, &ds(), &["legacy-complete".into()])
        .expect("publish");
    let version = r.prepared.version_hash.clone();
    let cache = tempfile::tempdir().expect("cache dir");
    let file = "legacy-complete/legacy-complete_chunk_0001.wshard";
    let blob = &r.prepared.version.episodes["legacy-complete"].files
        ["legacy-complete_chunk_0001.wshard"]
        .sha256;
    // The pinned version read once from the right bucket: the cache holds its manifest.
    let pinned = format!("datasets/lab/pick@{version}/legacy-complete");
    let out = wshard(
        &s3,
        cache.path(),
        &["inspect", &format!("s3://{BUCKET}/{pinned}")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let reads: Vec<Vec<String>> = vec![
        vec![
            "cat".into(),
            format!("s3://{MISSING}/datasets/lab/pick/{file}"),
            "reward".into(),
            "--format".into(),
            "csv".into(),
        ],
        vec![
            "inspect".into(),
            format!("s3://{MISSING}/datasets/lab/pick/{file}"),
        ],
        vec!["inspect".into(), format!("s3://{MISSING}/{pinned}")],
        vec![
            "inspect".into(),
            format!("s3://{MISSING}/blobs/sha256/{}/{blob}", &blob[..2]),
        ],
    ];
    for args in &reads {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = wshard(&s3, cache.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let said = text(&out);
        assert!(
            said.contains(&format!("bucket {MISSING} does not exist")),
            "{args:?}: {said}"
        );
        assert!(!said.contains("never published"), "{args:?}: {said}");
    }
    for verb in ["show", "pull"] {
        let into = tempfile::tempdir().expect("into");
        let mut args = vec!["dataset", verb, "lab/pick"];
        if verb == "pull" {
            args.push(into.path().to_str().expect("utf-8"));
        }
        args.extend(["--bucket", MISSING]);
        let out = wshard(&s3, cache.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(&format!("bucket {MISSING} does not exist")),
            "{args:?}: {}",
            text(&out)
        );
    }
    // The bucket that exists still says what is missing there.
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "cat",
            &format!("s3://{BUCKET}/datasets/lab/nope/{file}"),
            "reward",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("never published"), "{}", text(&out));
}

#[test]
fn publish_remote_bucket_cached_blob_answers_only_for_where_it_came_from() {
    let mut s3 = S3Server::start();
    let p = publisher(&s3);
    let dir = tempfile::tempdir().expect("cache dir");
    let cache = BlobCache::at(dir.path());
    // A small shard: the first range request fetches it whole, so it is cached.
    let (key, sha) = put_blob(&p, &shard_of_blocks(3, 100));
    let url = format!("s3://{BUCKET}/{key}");
    let out = wshard(&s3, dir.path(), &["cat", &url, "b/0000", "--format", "raw"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(cache.lookup(&sha, None).expect("lookup").is_some());

    // The same blob asked for in a bucket that does not exist, or under a key the bucket
    // does not hold: the cache's bytes do not make the read succeed.
    let wrong = format!("s3://{MISSING}/{key}");
    let out = wshard(
        &s3,
        dir.path(),
        &["cat", &wrong, "b/0000", "--format", "raw"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("bucket {MISSING} does not exist")),
        "{}",
        text(&out)
    );
    let elsewhere = format!("s3://{BUCKET}/elsewhere/{key}");
    let out = wshard(
        &s3,
        dir.path(),
        &["cat", &elsewhere, "b/0000", "--format", "raw"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("elsewhere/"), "{}", text(&out));

    // Where it came from: no request at all (the cache saves them).
    let blob = BlobRef::key(&key);
    let before = p.store().read_stats();
    let shard = RemoteShard::open(p.store(), Some(&cache), &blob).expect("open");
    assert!(shard.from_cache());
    assert_eq!(p.store().read_stats().since(before).requests, 0);

    // Another key of the store holding the same bytes (a copy under a prefix): one HEAD
    // confirms it, then it is read from the cache.
    let copy = format!("copy/{key}");
    p.store()
        .put(
            &copy,
            std::fs::read(cache.lookup(&sha, None).expect("lookup").expect("cached"))
                .expect("read cached")
                .into(),
            wshard_publish::store::PutCondition::Always,
        )
        .expect("put copy");
    let before = p.store().read_stats();
    let shard = RemoteShard::open(p.store(), Some(&cache), &BlobRef::key(&copy)).expect("open");
    assert!(shard.from_cache());
    assert_eq!(p.store().read_stats().since(before).requests, 1);
    let before = p.store().read_stats();
    RemoteShard::open(p.store(), Some(&cache), &BlobRef::key(&copy)).expect("open again");
    assert_eq!(p.store().read_stats().since(before).requests, 0);

    // Offline: where the blob came from, the cache answers; anywhere else the store must.
    s3.stop();
    let out = wshard(&s3, dir.path(), &["cat", &url, "b/0001", "--format", "raw"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(out.stdout.len(), 100);
    let out = wshard(
        &s3,
        dir.path(),
        &[
            "cat",
            &format!("s3://other-bucket/{key}"),
            "b/0000",
            "--format",
            "raw",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("unreachable"), "{}", text(&out));
    match RemoteShard::open(
        p.store(),
        Some(&cache),
        &BlobRef::key(&format!("third/{key}")),
    ) {
        Err(PublishError::EndpointUnreachable { .. }) => {}
        other => panic!("not unreachable: {other:?}"),
    }
}
