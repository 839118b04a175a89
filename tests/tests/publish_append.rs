//! `publish_append_*`: `Publisher::append` against a real s3s-fs 0.14.1: robots adding
//! their episodes (blobs already sent) to one dataset at the same time, the merged catalog
//! read back, a re-append, a missing blob, a replaced episode.

use std::path::Path;
use std::sync::{Arc, Barrier};

use bytes::Bytes;
use tempfile::TempDir;
use wshard::episode_dir::annotations::{Annotation, Annotations};
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::EpisodeDir;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use wshard_publish::catalog::{read_rows, CatalogRow};
use wshard_publish::episodes::{select, LocalEpisode};
use wshard_publish::publish::LatestChange;
use wshard_publish::{
    AppendPlan, Credentials, DatasetId, PublishError, Publisher, Store, StoreConfig,
    TransferOptions,
};

fn publisher(s3: &S3Server) -> Publisher {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: s3.endpoint().to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let opts = TransferOptions {
        max_retries: 1,
        ..TransferOptions::default()
    };
    Publisher::new(Store::new(cfg, &Credentials::new(ACCESS_KEY, SECRET_KEY), opts).expect("store"))
}

fn ds() -> DatasetId {
    DatasetId::parse("fleet/pick").expect("dataset")
}

/// A robot's data directory: the golden complete episode under each name.
fn robot_dir(names: &[&str]) -> TempDir {
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    for n in names {
        copy_tree(&datadir_v01().join("legacy-complete"), &dir.path().join(n));
    }
    dir
}

fn annotate(dir: &Path, labels: &[&str]) {
    let ep = EpisodeDir::open(dir).expect("episode");
    let mut a = Annotations::new(ep.episode_id());
    for (n, label) in labels.iter().enumerate() {
        a.annotations.push(Annotation {
            seq: n as u64,
            t_ns: 0,
            label: (*label).to_owned(),
            data: EventData::Text(String::new()),
            author: "e2e".into(),
            created_unix_ns: 1,
        });
    }
    let name = wshard::episode_dir::names::annotations_file_name(ep.episode_id());
    std::fs::write(dir.join(name), a.to_json_bytes()).expect("annotations");
}

fn local(dir: &Path) -> Vec<LocalEpisode> {
    select(dir, &[]).expect("episodes").episodes
}

/// The latest version's episode keys and catalog rows.
fn latest(p: &Publisher) -> (Vec<String>, Vec<CatalogRow>) {
    let (_, m) = p.latest_version(&ds()).expect("latest");
    let c = m.catalog.as_ref().expect("catalog");
    let bytes = p
        .store()
        .get(&p.keys().blob(&c.sha256))
        .expect("get")
        .expect("catalog blob");
    let rows = read_rows(bytes.bytes).expect("catalog rows");
    (m.episodes.keys().cloned().collect(), rows)
}

fn row_keys(rows: &[CatalogRow]) -> Vec<(String, Option<String>)> {
    rows.iter()
        .map(|r| (r.episode.clone(), r.robot.clone()))
        .collect()
}

fn versions_stored(s3: &S3Server) -> usize {
    std::fs::read_dir(s3.object_path("datasets/fleet/pick/versions"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn publish_append_two_robots_at_once_both_land_in_latest() {
    let s3 = S3Server::start();
    // A version published the old way first: its episode and catalog row must survive.
    let base = robot_dir(&["legacy-complete"]);
    publisher(&s3)
        .publish(base.path(), &ds(), &[])
        .expect("publish");
    let dirs = [robot_dir(&["ep-a", "ep-b"]), robot_dir(&["ep-a"])];
    annotate(&dirs[1].path().join("ep-a"), &["dropped"]);
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = ["r1", "r2"]
        .into_iter()
        .zip(dirs.iter().map(|d| d.path().to_path_buf()))
        .map(|(robot, dir)| {
            let barrier = Arc::clone(&barrier);
            let endpoint = s3.endpoint().to_owned();
            std::thread::spawn(move || {
                let cfg = StoreConfig {
                    provider: wshard_publish::Provider::S3,
                    endpoint,
                    bucket: BUCKET.to_owned(),
                    prefix: String::new(),
                    region: "us-east-1".into(),
                    allow_http: true,
                };
                let store = Store::new(
                    cfg,
                    &Credentials::new(ACCESS_KEY, SECRET_KEY),
                    TransferOptions::default(),
                )
                .expect("store");
                let p = Publisher::new(store);
                let eps = local(&dir);
                p.send_blobs(&eps).expect("blobs");
                barrier.wait();
                p.append(&ds(), Some(robot), &eps, 10).expect("append")
            })
        })
        .collect();
    let reports: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();
    assert_eq!(reports[0].added, ["r1/ep-a", "r1/ep-b"]);
    assert_eq!(reports[1].added, ["r2/ep-a"]);
    for r in &reports {
        assert!(matches!(r.latest, LatestChange::Moved { .. }), "{r:?}");
    }
    let p = publisher(&s3);
    let (keys, rows) = latest(&p);
    assert_eq!(keys, ["legacy-complete", "r1/ep-a", "r1/ep-b", "r2/ep-a"]);
    // One row per (single-stream) episode, ordered by key; robot from the append.
    assert_eq!(
        row_keys(&rows),
        [
            ("legacy-complete".into(), None),
            ("r1/ep-a".into(), Some("r1".into())),
            ("r1/ep-b".into(), Some("r1".into())),
            ("r2/ep-a".into(), Some("r2".into())),
        ]
    );
    let labels: Vec<_> = rows.iter().map(|r| r.labels.clone()).collect();
    assert_eq!(labels[3], ["dropped"]);
    assert!(rows.iter().all(|r| r.dataset == "fleet/pick"));
    // Latest is one of the two robots' versions: the later one.
    let (latest_hash, _) = p.latest_version(&ds()).expect("latest");
    assert!(
        reports.iter().any(|r| r.version_hash == latest_hash),
        "{reports:?} vs {latest_hash}"
    );
}

#[test]
fn publish_append_on_a_stale_latest_conflicts_then_merges_both() {
    let s3 = S3Server::start();
    let (d1, d2) = (robot_dir(&["ep-a"]), robot_dir(&["ep-a"]));
    annotate(&d2.path().join("ep-a"), &["r2"]);
    let (p1, p2) = (publisher(&s3), publisher(&s3));
    let (e1, e2) = (local(d1.path()), local(d2.path()));
    p1.send_blobs(&e1).expect("blobs r1");
    p2.send_blobs(&e2).expect("blobs r2");
    // r2 reads latest (absent) and builds its version; r1 appends in between.
    let stale = p2.observe_latest(&ds()).expect("observe");
    let plan = p2
        .prepare_append(&ds(), Some("r2"), &e2, &stale)
        .expect("prepare");
    let r1 = p1.append(&ds(), Some("r1"), &e1, 1).expect("append r1");
    assert_eq!(r1.latest, LatestChange::Created);
    let AppendPlan::New(prepared) = plan else {
        panic!("nothing new?")
    };
    let e = p2.commit_over(*prepared, stale).expect_err("stale");
    assert!(matches!(e, PublishError::LatestConflict { .. }), "{e:?}");
    assert!(e.is_transient());
    assert_eq!(latest(&p1).0, ["r1/ep-a"], "the loser moved nothing");
    // Again, on the new latest: merged.
    let r2 = p2.append(&ds(), Some("r2"), &e2, 3).expect("append r2");
    assert_eq!(
        r2.latest,
        LatestChange::Moved {
            previous: r1.version_hash.clone()
        }
    );
    assert_eq!(r2.attempts, 1);
    assert_eq!(latest(&p1).0, ["r1/ep-a", "r2/ep-a"]);
}

#[test]
fn publish_append_again_is_a_no_op() {
    let s3 = S3Server::start();
    let d = robot_dir(&["ep-a", "ep-b"]);
    let p = publisher(&s3);
    let eps = local(d.path());
    p.send_blobs(&eps).expect("blobs");
    let first = p.append(&ds(), Some("r1"), &eps, 3).expect("append");
    assert_eq!(first.latest, LatestChange::Created);
    let latest_before =
        std::fs::read(s3.object_path("datasets/fleet/pick/latest.json")).expect("latest");
    let stored = versions_stored(&s3);
    // The same episodes again, whole or in part: nothing to do.
    for again in [&eps[..], &eps[1..]] {
        let r = p.append(&ds(), Some("r1"), again, 3).expect("re-append");
        assert_eq!(r.latest, LatestChange::Unchanged);
        assert_eq!(r.version_hash, first.version_hash);
        assert!(r.added.is_empty());
        assert_eq!(r.attempts, 1);
    }
    assert_eq!(versions_stored(&s3), stored, "a version written");
    assert_eq!(
        std::fs::read(s3.object_path("datasets/fleet/pick/latest.json")).expect("latest"),
        latest_before
    );
}

#[test]
fn publish_append_refuses_an_episode_whose_blob_is_missing_before_writing() {
    let s3 = S3Server::start();
    let d = robot_dir(&["ep-a"]);
    let p = publisher(&s3);
    let eps = local(d.path());
    p.send_blobs(&eps).expect("blobs");
    // One blob gone from the store (say, a lifecycle rule or a failed upload).
    let victim = &eps[0].files[1];
    std::fs::remove_file(s3.object_path(&p.keys().blob(&victim.sha256))).expect("remove blob");
    let e = p
        .append(&ds(), Some("r1"), &eps, 3)
        .expect_err("missing blob");
    match &e {
        PublishError::BlobNotStored {
            episode, file, key, ..
        } => {
            assert_eq!(episode, "r1/ep-a");
            assert_eq!(file, &victim.rel);
            assert_eq!(key, &p.keys().blob(&victim.sha256));
        }
        other => panic!("expected BlobNotStored, got {other:?}"),
    }
    assert!(!e.is_transient());
    assert!(e.to_string().contains(&victim.rel), "{e}");
    assert!(
        !s3.object_path("datasets").exists(),
        "something of the append was written"
    );
    // A wrong-sized object under the name is refused too.
    std::fs::write(s3.object_path(&p.keys().blob(&victim.sha256)), b"short").expect("write");
    let e = p
        .append(&ds(), Some("r1"), &eps, 3)
        .expect_err("short blob");
    assert!(matches!(e, PublishError::BlobNotStored { .. }), "{e:?}");
    assert!(!s3.object_path("datasets").exists());
}

#[test]
fn publish_append_same_episode_twice_is_refused_and_a_name_given_twice_is_one_episode() {
    let s3 = S3Server::start();
    let d = robot_dir(&["ep-a"]);
    let p = publisher(&s3);
    // The same episode named twice to `select` (a name typed twice): once.
    let named = select(d.path(), &["ep-a".into(), "ep-a".into()])
        .expect("select")
        .episodes;
    assert_eq!(named.len(), 1);
    p.send_blobs(&named).expect("blobs");
    // Twice in one append: refused before anything is written, naming the key (its
    // catalog rows would be in twice).
    let twice = [named[0].clone(), named[0].clone()];
    let e = p
        .append(&ds(), Some("r1"), &twice, 3)
        .expect_err("same episode twice");
    assert!(
        matches!(&e, PublishError::InvalidConfig { field: "episodes", reason } if reason.contains("r1/ep-a")),
        "{e:?}"
    );
    assert!(!s3.object_path("datasets").exists());
    // Once: one row per stream.
    p.append(&ds(), Some("r1"), &named, 3).expect("append");
    let (keys, rows) = latest(&p);
    assert_eq!(keys, ["r1/ep-a"]);
    assert_eq!(rows.len(), 1, "{:?}", row_keys(&rows));
}

#[test]
fn publish_append_replaced_episode_drops_its_old_catalog_row() {
    let s3 = S3Server::start();
    let d = robot_dir(&["ep-a", "ep-b"]);
    let p = publisher(&s3);
    let eps = local(d.path());
    p.send_blobs(&eps).expect("blobs");
    let v1 = p.append(&ds(), Some("r1"), &eps, 3).expect("append");
    // ep-a gets annotated after its first upload: its files change, it is appended again.
    annotate(&d.path().join("ep-a"), &["success"]);
    let again = select(d.path(), &["ep-a".to_owned()])
        .expect("ep-a")
        .episodes;
    p.send_blobs(&again).expect("blobs again");
    let v2 = p.append(&ds(), Some("r1"), &again, 3).expect("re-append");
    assert_eq!(
        v2.latest,
        LatestChange::Moved {
            previous: v1.version_hash.clone()
        }
    );
    assert_eq!(v2.added, ["r1/ep-a"]);
    let (keys, rows) = latest(&p);
    assert_eq!(keys, ["r1/ep-a", "r1/ep-b"]);
    assert_eq!(
        row_keys(&rows),
        [
            ("r1/ep-a".into(), Some("r1".into())),
            ("r1/ep-b".into(), Some("r1".into())),
        ]
    );
    assert_eq!(rows[0].labels, ["success"]);
    assert!(rows[1].labels.is_empty());
    let (_, m) = p.latest_version(&ds()).expect("latest");
    assert!(
        m.episodes["r1/ep-a"]
            .files
            .keys()
            .any(|f| f.ends_with("_annotations.json")),
        "{:?}",
        m.episodes["r1/ep-a"]
    );
    // A catalog that is not Parquet is a typed error naming its key.
    assert!(read_rows(Bytes::from_static(b"PAR1 nope")).is_err());
}
