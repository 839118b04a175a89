//! `publish_remote_*`: remote-first reads against a real S3-compatible server (s3s-fs):
//! a published episode (single-stream golden, multi-stream recorded by the real wshardd)
//! read block by block through range requests equals the local files; one block of a
//! 1,000-block shard costs at most 2 requests and the block + 64 KiB; a corrupt remote
//! block is a typed CRC error naming the key and the block; the CLI's inspect and cat.

use std::path::Path;

use wshard::read::{ShardReader, DEFAULT_PREFETCH_BYTES};
use wshard_e2e::fixtures::datadir_v01;
use wshard_e2e::remote::{
    assert_same_blocks, ds, multistream_episode, publisher, put_blob, shard_of_blocks, text, wshard,
};
use wshard_e2e::s3::{S3Server, BUCKET};
use wshard_publish::remote::{resolve, RemoteShard, Resolved};
use wshard_publish::url::RemoteUrl;
use wshard_publish::PublishError;

/// Every file of every episode of the latest version of `lab/pick`, opened from its dataset
/// URL (no cache), equals the local file block by block.
fn check_episode_files(s3: &S3Server, data_dir: &Path, episode: &str) {
    let p = publisher(s3);
    let (_, m) = p.latest_version(&ds()).expect("latest");
    let files = &m.episodes[episode].files;
    assert!(!files.is_empty());
    let mut shards = 0;
    for file in files.keys() {
        if !file.ends_with(".wshard") {
            continue; // index, events: JSON, not shards
        }
        let url = format!("s3://{BUCKET}/datasets/lab/pick/{episode}/{file}");
        let parsed = RemoteUrl::parse(&url).expect("url");
        let Resolved::Blob(blob) = resolve(&p, None, &parsed).expect("resolve") else {
            panic!("{url} is not a file");
        };
        let remote = RemoteShard::open(p.store(), None, &blob).expect("open");
        assert!(!remote.from_cache());
        assert_same_blocks(&remote, &data_dir.join(episode).join(file));
        shards += 1;
    }
    assert!(shards >= 2, "{shards} shards in {episode}");
}

#[test]
fn publish_remote_single_stream_episode_read_block_by_block_equals_local() {
    let s3 = S3Server::start();
    let data = datadir_v01();
    publisher(&s3)
        .publish(&data, &ds(), &["legacy-complete".into()])
        .expect("publish");
    check_episode_files(&s3, &data, "legacy-complete");
}

#[test]
fn publish_remote_multistream_episode_read_block_by_block_equals_local() {
    let s3 = S3Server::start();
    let d = multistream_episode();
    publisher(&s3)
        .publish(&d.data_dir(), &ds(), &["multi-ep".into()])
        .expect("publish");
    check_episode_files(&s3, &d.data_dir(), "multi-ep");
}

#[test]
fn publish_remote_one_block_of_a_1000_block_shard_costs_two_requests() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let block_len = 4096;
    let bytes = shard_of_blocks(1000, block_len);
    let (key, _) = put_blob(&p, &bytes);
    let local = ShardReader::from_bytes(bytes.clone()).expect("local");

    let before = p.store().read_stats();
    let remote = RemoteShard::open(p.store(), None, &wshard_publish::remote::BlobRef::key(&key))
        .expect("open");
    let opened = p.store().read_stats().since(before);
    assert_eq!(opened.requests, 1, "header + index in one request");
    let got = remote.read_block("b/0500").expect("block");
    assert_eq!(got, local.read_block("b/0500").expect("local block"));
    let read = p.store().read_stats().since(before);
    assert_eq!(read.requests, 2, "{read:?}");
    assert!(
        read.bytes <= block_len as u64 + DEFAULT_PREFETCH_BYTES,
        "{} bytes fetched for a {block_len}-byte block",
        read.bytes
    );
    assert!(read.bytes < bytes.len() as u64 / 10, "no full download");

    // An index longer than the first request: one more request for it, never more.
    let big = shard_of_blocks(3000, 16);
    let (big_key, _) = put_blob(&p, &big);
    let before = p.store().read_stats();
    let remote = RemoteShard::open(
        p.store(),
        None,
        &wshard_publish::remote::BlobRef::key(&big_key),
    )
    .expect("open");
    remote.read_block("b/2999").expect("last block");
    let read = p.store().read_stats().since(before);
    let data_start = ShardReader::from_bytes(big.clone())
        .expect("local")
        .header()
        .data_section_offset;
    assert!(
        data_start > DEFAULT_PREFETCH_BYTES,
        "the index must not fit"
    );
    assert_eq!(read.requests, 3, "{read:?}");
    assert_eq!(read.bytes, data_start + 16, "{read:?}");
}

#[test]
fn publish_remote_corrupt_block_is_a_crc_error_naming_key_and_block() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let bytes = shard_of_blocks(1000, 512);
    let (key, _) = put_blob(&p, &bytes);
    let local = ShardReader::from_bytes(bytes.clone()).expect("local");
    let (_, e) = local.entry("b/0700").expect("entry");
    // Flip one byte of block b/0700 in the server's own file.
    let path = s3.object_path(&key);
    let mut stored = std::fs::read(&path).expect("stored object");
    let at = usize::try_from(e.data_offset).expect("offset") + 7;
    stored[at] ^= 0x55;
    std::fs::write(&path, &stored).expect("corrupt");

    let remote = RemoteShard::open(p.store(), None, &wshard_publish::remote::BlobRef::key(&key))
        .expect("open: the index is intact");
    let err = remote.read_block("b/0700").expect_err("crc");
    match &err {
        PublishError::RemoteRead {
            key: k,
            source: wshard::FormatError::BlockCrc { name, .. },
        } => {
            assert_eq!(k, &key);
            assert_eq!(name, "b/0700");
        }
        other => panic!("not a remote CRC error: {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&key) && msg.contains("b/0700"), "{msg}");
    // The neighbours read fine.
    assert_eq!(
        remote.read_block("b/0699").expect("699"),
        local.read_block("b/0699").expect("local 699")
    );

    // The CLI: exit 1 (corrupt), naming the URL and the block.
    let cache = tempfile::tempdir().expect("cache dir");
    let url = format!("s3://{BUCKET}/{key}");
    let out = wshard(
        &s3,
        cache.path(),
        &["cat", &url, "b/0700", "-o", "/dev/null"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains(&url) && t.contains("b/0700"), "{t}");
}

#[test]
fn publish_remote_cli_inspect_and_cat_read_the_block_asked_for() {
    let s3 = S3Server::start();
    let data = datadir_v01();
    publisher(&s3)
        .publish(&data, &ds(), &["legacy-complete".into()])
        .expect("publish");
    let cache = tempfile::tempdir().expect("cache dir");
    let file = "legacy-complete_chunk_0001.wshard";
    let url = format!("s3://{BUCKET}/datasets/lab/pick/legacy-complete/{file}");
    let local = data.join("legacy-complete").join(file);

    let out = wshard(
        &s3,
        cache.path(),
        &["cat", &url, "signal/q", "--format", "csv"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let here = std::process::Command::new(wshard_e2e::bins::wshard())
        .args([
            "cat",
            local.to_str().expect("utf-8"),
            "signal/q",
            "--format",
            "csv",
        ])
        .output()
        .expect("local cat");
    assert_eq!(out.stdout, here.stdout);

    let out = wshard(&s3, cache.path(), &["inspect", &url, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["header"]["entry_count"], 9, "{doc}");

    // The episode itself: its files.
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "inspect",
            &format!("s3://{BUCKET}/datasets/lab/pick/legacy-complete"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(file));

    // What the version does not hold: a typed error listing what it holds, exit 2.
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "cat",
            &format!("s3://{BUCKET}/datasets/lab/pick/legacy-complete/nope.wshard"),
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("nope.wshard") && text(&out).contains(file),
        "{}",
        text(&out)
    );
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "inspect",
            &format!("s3://{BUCKET}/datasets/lab/pick/no-ep/x"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-ep/x") && text(&out).contains("legacy-complete"));
}

#[test]
fn publish_remote_prefix_and_robot_episode_keys_resolve() {
    use wshard::digest::sha256_hex;
    use wshard_publish::store::PutCondition;
    use wshard_publish::version::latest_bytes;
    use wshard_publish::{Credentials, Publisher, Store, StoreConfig, TransferOptions};

    let s3 = S3Server::start();
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: s3.endpoint().to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: "pfx/sub".into(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let creds = Credentials::new(wshard_e2e::s3::ACCESS_KEY, wshard_e2e::s3::SECRET_KEY);
    let p = Publisher::new(Store::new(cfg, &creds, TransferOptions::default()).expect("store"));
    let data = datadir_v01();
    let r = p
        .publish(&data, &ds(), &["legacy-complete".into()])
        .expect("publish");
    // The same episode under a `robot/episode` key, as the robots' uploader appends them.
    let mut m = r.prepared.version.clone();
    let entry = m.episodes.remove("legacy-complete").expect("episode");
    m.episodes.insert("robot-7/legacy-complete".into(), entry);
    let bytes = m.canonical_bytes().expect("canonical");
    let version = sha256_hex(&bytes);
    let put = |key: String, b: Vec<u8>| {
        p.store()
            .put(&key, b.into(), PutCondition::Always)
            .expect("put");
    };
    put(p.keys().version(&ds(), &version), bytes);
    put(
        p.keys().latest(&ds()),
        latest_bytes("lab/pick", &version).expect("latest"),
    );

    let cache = tempfile::tempdir().expect("cache dir");
    let file = "legacy-complete_chunk_0000.wshard";
    let url = format!("s3://{BUCKET}/pfx/sub/datasets/lab/pick/robot-7/legacy-complete/{file}");
    let out = wshard(
        &s3,
        cache.path(),
        &["cat", &url, "reward", "--format", "csv"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let local = data.join("legacy-complete").join(file);
    let here = std::process::Command::new(wshard_e2e::bins::wshard())
        .args([
            "cat",
            local.to_str().expect("utf-8"),
            "reward",
            "--format",
            "csv",
        ])
        .output()
        .expect("local cat");
    assert_eq!(out.stdout, here.stdout);
    // Pinned, and the episode itself.
    let pinned =
        format!("s3://{BUCKET}/pfx/sub/datasets/lab/pick@{version}/robot-7/legacy-complete");
    let out = wshard(&s3, cache.path(), &["inspect", &pinned, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["episode"], "robot-7/legacy-complete");
    assert_eq!(doc["files"].as_object().map(serde_json::Map::len), Some(4));
    // Pulled under DIR/robot-7/legacy-complete.
    let into = tempfile::tempdir_in("/tmp").expect("into");
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "dataset",
            "pull",
            "lab/pick",
            into.path().to_str().expect("utf-8"),
            "--prefix",
            "pfx/sub",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        std::fs::read(into.path().join("robot-7/legacy-complete").join(file)).expect("pulled"),
        std::fs::read(&local).expect("local")
    );
}

#[test]
fn publish_remote_object_that_is_not_the_blob_it_names_is_a_mismatch() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let cache_dir = tempfile::tempdir().expect("cache dir");
    let cache = wshard_publish::cache::BlobCache::at(cache_dir.path());
    // Two small shards (each fetched whole by the first range request): b's bytes stored
    // under a's blob key. The blocks are intact (their CRCs hold): only the hash tells.
    let a = shard_of_blocks(3, 100);
    let b = shard_of_blocks(4, 100);
    let (key_a, sha_a) = put_blob(&p, &a);
    p.store()
        .put(
            &key_a,
            b.clone().into(),
            wshard_publish::store::PutCondition::Always,
        )
        .expect("overwrite");
    let blob = wshard_publish::remote::BlobRef::key(&key_a);
    match RemoteShard::open(p.store(), Some(&cache), &blob) {
        Err(PublishError::BlobMismatch { key, expected, .. }) => {
            assert_eq!(key, key_a);
            assert!(expected.contains(&sha_a), "{expected}");
        }
        Err(other) => panic!("not a mismatch: {other:?}"),
        Ok(_) => panic!("{key_a} holding other bytes was read as the blob"),
    }
    assert_eq!(cache.stats().expect("stats").blobs, 0, "nothing cached");
    let url = format!("s3://{BUCKET}/{key_a}");
    let out = wshard(&s3, cache_dir.path(), &["inspect", &url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&sha_a), "{}", text(&out));

    // A large shard (read by range) whose size is not the one a manifest gives.
    let big = shard_of_blocks(1000, 512);
    let (key, sha) = put_blob(&p, &big);
    let wrong = wshard_publish::remote::BlobRef {
        key: key.clone(),
        sha256: Some(sha),
        size: Some(big.len() as u64 + 1),
    };
    assert!(matches!(
        RemoteShard::open(p.store(), None, &wrong),
        Err(PublishError::BlobMismatch { .. })
    ));
}

#[test]
fn publish_remote_cli_reads_with_a_cache_that_cannot_be_written() {
    let s3 = S3Server::start();
    let data = datadir_v01();
    publisher(&s3)
        .publish(&data, &ds(), &["legacy-complete".into()])
        .expect("publish");
    // The cache directory lies under a regular file: it can never be created (not even by
    // root). The cache only saves requests: the reads still answer.
    let dir = tempfile::tempdir().expect("dir");
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").expect("file");
    let cache = blocker.join("cache");
    let file = "legacy-complete_chunk_0001.wshard";
    let url = format!("s3://{BUCKET}/datasets/lab/pick/legacy-complete/{file}");
    let out = wshard(&s3, &cache, &["cat", &url, "signal/q", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let local = data.join("legacy-complete").join(file);
    let here = std::process::Command::new(wshard_e2e::bins::wshard())
        .args([
            "cat",
            local.to_str().expect("utf-8"),
            "signal/q",
            "--format",
            "csv",
        ])
        .output()
        .expect("local cat");
    assert_eq!(out.stdout, here.stdout);
    let out = wshard(&s3, &cache, &["inspect", &url, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn publish_remote_cli_inspect_checks_the_meta_blocks() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let local = datadir_v01()
        .join("legacy-complete")
        .join("legacy-complete_chunk_0001.wshard");
    let good = std::fs::read(&local).expect("chunk");
    // Under a key that is no blob key: read by range every time, never from the cache.
    let put = |key: &str, bytes: Vec<u8>| {
        p.store()
            .put(
                key,
                bytes.into(),
                wshard_publish::store::PutCondition::Always,
            )
            .expect("put");
    };
    put("loose/good.wshard", good.clone());
    let reader = ShardReader::open(&local).expect("local");
    let (_, episode) = reader.entry("meta/episode").expect("meta/episode");
    let mut bad = good;
    let at = usize::try_from(episode.data_offset).expect("offset");
    bad[at] ^= 0xff;
    put("loose/bad.wshard", bad);

    let cache = tempfile::tempdir().expect("cache dir");
    let rows = |out: &std::process::Output| -> Vec<serde_json::Value> {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        doc["blocks"].as_array().expect("blocks").clone()
    };
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "inspect",
            &format!("s3://{BUCKET}/loose/good.wshard"),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let blocks = rows(&out);
    let mut metas = 0;
    for b in &blocks {
        let name = b["name"].as_str().expect("name");
        if name.starts_with("meta/") {
            metas += 1;
            assert_eq!(b["crc_ok"], true, "{b}");
        } else {
            assert_eq!(b["crc_ok"], serde_json::Value::Null, "{b}");
        }
    }
    assert!(metas >= 3, "{blocks:?}");
    let out = wshard(
        &s3,
        cache.path(),
        &["inspect", &format!("s3://{BUCKET}/loose/good.wshard")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    let meta_line = said
        .lines()
        .find(|l| l.contains("meta/channels"))
        .expect("meta/channels row");
    assert!(meta_line.trim_end().ends_with("ok"), "{said}");

    // A meta block that does not match its CRC is found out remotely: exit 1, its row BAD.
    let out = wshard(
        &s3,
        cache.path(),
        &[
            "inspect",
            &format!("s3://{BUCKET}/loose/bad.wshard"),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let blocks = rows(&out);
    let row = blocks
        .iter()
        .find(|b| b["name"] == "meta/episode")
        .expect("meta/episode row");
    assert_eq!(row["crc_ok"], false, "{row}");
}
