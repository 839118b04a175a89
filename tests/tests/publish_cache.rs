//! `publish_cache_*`: the content-hash blob cache of remote reads against a real s3s-fs:
//! a blob the cache holds is read with no request; a version pinned by hash costs no request
//! once seen; gc keeps to its limit, least recently used out first; a corrupt cache entry is
//! found out on use and fetched again.

use wshard::read::ShardReader;
use wshard_e2e::fixtures::datadir_v01;
use wshard_e2e::remote::{ds, publisher, put_blob, shard_of_blocks, text, wshard};
use wshard_e2e::s3::{S3Server, BUCKET};
use wshard_publish::cache::{BlobCache, Obtained};
use wshard_publish::remote::{resolve, BlobRef, RemoteShard, Resolved};
use wshard_publish::url::RemoteUrl;

#[test]
fn publish_cache_second_read_makes_no_request() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let r = p
        .publish(&datadir_v01(), &ds(), &["legacy-complete".into()])
        .expect("publish");
    let version = r.prepared.version_hash.clone();
    let dir = tempfile::tempdir().expect("cache dir");
    let cache = BlobCache::at(dir.path());

    // A pinned version and a small chunk: the first read fetches (the whole chunk fits the
    // first range request, so it is cached), the second makes no request at all.
    let url = format!(
        "s3://{BUCKET}/datasets/lab/pick@{version}/legacy-complete/legacy-complete_chunk_0002.wshard"
    );
    let parsed = RemoteUrl::parse(&url).expect("url");
    let read = |expect_cached: bool| {
        let Resolved::Blob(blob) = resolve(&p, Some(&cache), &parsed).expect("resolve") else {
            panic!("not a file");
        };
        let shard = RemoteShard::open(p.store(), Some(&cache), &blob).expect("open");
        assert_eq!(shard.from_cache(), expect_cached);
        shard.read_block("reward").expect("block")
    };
    let before = p.store().read_stats();
    let first = read(false);
    assert!(p.store().read_stats().since(before).requests >= 2);
    let before = p.store().read_stats();
    let second = read(true);
    assert_eq!(first, second);
    let stats = p.store().read_stats().since(before);
    assert_eq!((stats.requests, stats.bytes), (0, 0), "{stats:?}");

    // A large blob is never cached by a block read, but once the cache holds it (fetched
    // whole, as a pull does) reading it makes no request.
    let big = shard_of_blocks(1000, 256);
    let (key, sha) = put_blob(&p, &big);
    let blob = BlobRef::key(&key);
    let before = p.store().read_stats();
    let shard = RemoteShard::open(p.store(), Some(&cache), &blob).expect("open");
    assert!(!shard.from_cache());
    shard.read_block("b/0999").expect("block");
    assert_eq!(p.store().read_stats().since(before).requests, 2);
    assert!(cache.lookup(&sha, None).expect("lookup").is_none());
    let (_, how) = cache
        .fetch(p.store(), &key, &sha, Some(big.len() as u64))
        .expect("fetch");
    assert_eq!(how, Obtained::Downloaded(big.len() as u64));
    let (_, how) = cache
        .fetch(p.store(), &key, &sha, Some(big.len() as u64))
        .expect("fetch");
    assert_eq!(how, Obtained::Cached);
    let before = p.store().read_stats();
    let shard = RemoteShard::open(p.store(), Some(&cache), &blob).expect("open");
    assert!(shard.from_cache());
    let local = ShardReader::from_bytes(big).expect("local");
    for name in ["b/0000", "b/0999"] {
        assert_eq!(
            shard.read_block(name).expect("b"),
            local.read_block(name).expect("l")
        );
    }
    assert_eq!(p.store().read_stats().since(before).requests, 0);
}

#[test]
fn publish_cache_gc_respects_the_limit_least_recently_used_first() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let dir = tempfile::tempdir().expect("cache dir");
    let cache = BlobCache::at(dir.path());
    let blobs: Vec<Vec<u8>> = (1..=4).map(|n| shard_of_blocks(n * 10, 1000)).collect();
    let mut keys = Vec::new();
    for b in &blobs {
        let (key, sha) = put_blob(&p, b);
        cache.fetch(p.store(), &key, &sha, None).expect("fetch");
        keys.push((key, sha));
        // Distinct use times, in this order (file times have at least ms resolution).
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Use the oldest again: it becomes the most recent.
    assert!(cache.lookup(&keys[0].1, None).expect("lookup").is_some());
    let total: u64 = blobs.iter().map(|b| b.len() as u64).sum();
    let stats = cache.stats().expect("stats");
    assert_eq!((stats.blobs, stats.bytes), (4, total));

    // Keep room for the two most recently used (blob 0 and blob 3) only.
    let limit = (blobs[0].len() + blobs[3].len()) as u64;
    let out = wshard(
        &s3,
        dir.path(),
        &["cache", "gc", "--limit", &limit.to_string(), "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["removed_blobs"], 2, "{doc}");
    assert!(doc["kept_bytes"].as_u64().expect("kept") <= limit);
    for (i, (_, sha)) in keys.iter().enumerate() {
        let present = cache.blob_path(sha).expect("path").exists();
        assert_eq!(present, i == 0 || i == 3, "blob {i}");
    }
    let out = wshard(&s3, dir.path(), &["cache", "stats", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["blobs"], 2, "{doc}");
    assert_eq!(doc["bytes"], limit, "{doc}");
    // A limit of 0 empties it.
    let out = wshard(&s3, dir.path(), &["cache", "gc", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(cache.stats().expect("stats").blobs, 0);
}

#[test]
fn publish_cache_corrupt_entry_is_detected_and_refetched() {
    let s3 = S3Server::start();
    let p = publisher(&s3);
    let dir = tempfile::tempdir().expect("cache dir");
    let cache = BlobCache::at(dir.path());
    let bytes = shard_of_blocks(200, 512);
    let (key, sha) = put_blob(&p, &bytes);
    let (path, _) = cache.fetch(p.store(), &key, &sha, None).expect("fetch");
    // Rot one byte of the cached copy (same size).
    let mut cached = std::fs::read(&path).expect("cached");
    let last = cached.len() - 1;
    cached[last] ^= 0xff;
    std::fs::write(&path, &cached).expect("corrupt");

    // A read finds it out and goes to the store instead; the block is right.
    let blob = BlobRef::key(&key);
    let shard = RemoteShard::open(p.store(), Some(&cache), &blob).expect("open");
    assert!(!shard.from_cache(), "a corrupt entry was used");
    let local = ShardReader::from_bytes(bytes.clone()).expect("local");
    assert_eq!(
        shard.read_block("b/0199").expect("block"),
        local.read_block("b/0199").expect("local")
    );
    // Fetching again downloads and restores it.
    let before = p.store().read_stats();
    let (path, how) = cache.fetch(p.store(), &key, &sha, None).expect("refetch");
    assert_eq!(how, Obtained::Downloaded(bytes.len() as u64));
    assert_eq!(
        p.store().read_stats().since(before).bytes,
        bytes.len() as u64
    );
    assert_eq!(std::fs::read(path).expect("cached"), bytes);
}
