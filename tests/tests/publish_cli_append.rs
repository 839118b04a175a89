//! `publish_cli_append_*`: `wshard publish --append [--robot R]` (the real binary) against
//! a real s3s-fs: two robots' data directories appended to one dataset, a re-run that
//! sends and writes nothing, the merged catalog queried with `wshard query` (DuckDB).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use wshard_e2e::bins;
use wshard_e2e::bins::output_text as text;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};

fn wshard(args: &[&str], s3: &S3Server) -> Output {
    let mut cmd = Command::new(bins::wshard());
    cmd.args(args).args([
        "--endpoint",
        s3.endpoint(),
        "--bucket",
        BUCKET,
        "--allow-http",
    ]);
    for v in [
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "WSHARD_S3_ENDPOINT",
        "WSHARD_S3_BUCKET",
        "WSHARD_S3_PREFIX",
        "WSHARD_PYTHON",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    cmd.output().expect("run wshard")
}

fn robot_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    copy_tree(&datadir_v01(), dir.path());
    for n in names {
        copy_tree(&datadir_v01().join("legacy-complete"), &dir.path().join(n));
    }
    dir
}

fn append(s3: &S3Server, dir: &Path, robot: &str) -> (Output, Value) {
    let dir = dir.to_string_lossy().into_owned();
    let out = wshard(
        &[
            "publish",
            "--append",
            "--robot",
            robot,
            "--dataset",
            "fleet/pick",
            "--data-dir",
            &dir,
            "--json",
        ],
        s3,
    );
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

#[test]
fn publish_cli_append_two_robots_then_query_the_merged_catalog() {
    let s3 = S3Server::start();
    let (d1, d2) = (robot_dir(&["ep-b"]), robot_dir(&[]));
    let (out, r1) = append(&s3, d1.path(), "r1");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        r1["added"],
        serde_json::json!(["r1/ep-b", "r1/legacy-complete"])
    );
    assert_eq!(r1["latest"]["change"], "created");
    assert!(r1["bytes_sent"].as_u64() > Some(0), "{r1}");
    // The unfinished episodes are left out, as for a plain publish.
    assert_eq!(r1["left_out"].as_array().map(Vec::len), Some(2), "{r1}");
    let (out, r2) = append(&s3, d2.path(), "r2");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r2["added"], serde_json::json!(["r2/legacy-complete"]));
    assert_eq!(r2["latest"]["change"], "moved");
    assert_eq!(r2["latest"]["previous"], r1["version_hash"]);
    // The same blobs as r1's: nothing sent.
    assert_eq!(r2["bytes_sent"], 0, "{r2}");
    // r1 again: nothing sent, nothing appended, latest untouched.
    let (out, again) = append(&s3, d1.path(), "r1");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(again["bytes_sent"], 0);
    assert_eq!(again["added"], serde_json::json!([]));
    assert_eq!(again["latest"]["change"], "unchanged");
    assert_eq!(again["version_hash"], r2["version_hash"]);
    // Text form.
    let dir = d1.path().to_string_lossy().into_owned();
    let out = wshard(
        &[
            "publish",
            "--append",
            "--robot",
            "r1",
            "--dataset",
            "fleet/pick",
            "--data-dir",
            &dir,
        ],
        &s3,
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("appended nothing"), "{t}");
    assert!(t.contains("latest  unchanged"), "{t}");
    // DuckDB on the store: one row per episode, robot from --robot.
    let q = wshard(
        &[
            "query",
            "select episode, robot from catalog order by 1",
            "--dataset",
            "fleet/pick",
            "--json",
        ],
        &s3,
    );
    assert_eq!(q.status.code(), Some(0), "{}", text(&q));
    let rows: Vec<Value> = String::from_utf8_lossy(&q.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json row"))
        .collect();
    assert_eq!(
        rows,
        [
            serde_json::json!({"episode": "r1/ep-b", "robot": "r1"}),
            serde_json::json!({"episode": "r1/legacy-complete", "robot": "r1"}),
            serde_json::json!({"episode": "r2/legacy-complete", "robot": "r2"}),
        ]
    );
}

#[test]
fn publish_cli_append_usage_errors() {
    let s3 = S3Server::start();
    let d = robot_dir(&[]);
    let dir = d.path().to_string_lossy().into_owned();
    // --robot only with --append.
    let out = wshard(
        &[
            "publish",
            "--robot",
            "r1",
            "--dataset",
            "fleet/pick",
            "--data-dir",
            &dir,
        ],
        &s3,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--append"), "{}", text(&out));
    // A robot name that cannot be a key prefix: exit 2, named, nothing written.
    let (out, _) = append(&s3, d.path(), "a/b");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("robot"), "{}", text(&out));
    assert!(!s3.object_path("datasets").exists());
    assert!(
        !s3.object_path("blobs").exists(),
        "blobs sent before the check"
    );
}

/// `wshardd --check-config` of a config whose `publish.robot` is `robot`.
fn config_accepts_robot(robot: &str) -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("wshardd.toml");
    let name = serde_json::to_string(robot).expect("toml string");
    std::fs::write(&cfg, format!("[publish]\nrobot = {name}\n")).expect("config");
    Command::new(bins::wshardd())
        .arg("--check-config")
        .arg("--config")
        .arg(&cfg)
        .output()
        .expect("run wshardd")
        .status
        .success()
}

#[test]
fn publish_cli_append_robot_names_follow_the_one_rule_of_the_config() {
    let s3 = S3Server::start();
    let d = robot_dir(&[]);
    let long = "r".repeat(65);
    // Refused by `--robot` exactly when refused as `publish.robot`, before anything is sent.
    for bad in ["arm 01", "bras-é", ".hidden", "a/b", long.as_str()] {
        let (out, _) = append(&s3, d.path(), bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out));
        assert!(text(&out).contains("robot"), "{}", text(&out));
        assert!(
            !config_accepts_robot(bad),
            "publish.robot = {bad:?} accepted"
        );
    }
    assert!(
        !s3.object_path("blobs").exists(),
        "blobs sent before the check"
    );
    let longest = "r".repeat(64);
    for good in ["arm-01.lab_2", longest.as_str()] {
        assert!(
            config_accepts_robot(good),
            "publish.robot = {good:?} refused"
        );
        let (out, v) = append(&s3, d.path(), good);
        assert_eq!(out.status.code(), Some(0), "{good:?}: {}", text(&out));
        assert_eq!(v["robot"], good, "{v}");
    }
}
