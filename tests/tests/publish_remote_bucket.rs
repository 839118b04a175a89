//! `publish_remote_bucket_*`: a remote read is for the bucket its URL names, against a real
//! S3-compatible server (s3s-fs): a bucket that does not exist is said to be missing (not
//! a dataset never published, not a missing key).

use wshard_e2e::fixtures::datadir_v01;
use wshard_e2e::remote::{ds, publisher, text, wshard};
use wshard_e2e::s3::{S3Server, BUCKET};

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
    let blob = &r.prepared.manifest.episodes["legacy-complete"].files
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
