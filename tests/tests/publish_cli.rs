//! `publish_cli_*`: `wshard publish` and `wshard doctor` (the real binary) against a real
//! s3s-fs; no output of any run, and no file the runs leave, holds the secret.

use std::process::{Command, Output};

use serde_json::Value;
use wshard_e2e::bins;
use wshard_e2e::bins::output_text as text;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{files_containing, S3Server, ACCESS_KEY, BUCKET, SECRET_KEY, WRONG_SECRET};

/// Every output of the runs, to grep for the secrets at the end.
#[derive(Default)]
struct Runs {
    outputs: Vec<(String, Output)>,
}

impl Runs {
    /// `wshard ARGS` with the store flags, credentials `secret` (none: unset).
    fn run(&mut self, args: &[&str], s3: &S3Server, bucket: &str, secret: Option<&str>) -> Output {
        let mut cmd = Command::new(bins::wshard());
        cmd.args(args).args([
            "--endpoint",
            s3.endpoint(),
            "--bucket",
            bucket,
            "--allow-http",
        ]);
        for v in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "WSHARD_S3_ENDPOINT",
            "WSHARD_S3_BUCKET",
            "WSHARD_S3_PREFIX",
        ] {
            cmd.env_remove(v);
        }
        if let Some(secret) = secret {
            cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
                .env("AWS_SECRET_ACCESS_KEY", secret);
        } else {
            // No shared credentials file either (whatever the machine's ~/.aws holds).
            cmd.env(
                "AWS_SHARED_CREDENTIALS_FILE",
                "/nonexistent/wshard-test/credentials",
            );
        }
        let out = cmd.output().expect("run wshard");
        self.outputs.push((args.join(" "), out.clone()));
        out
    }
}

#[test]
fn publish_cli_publish_and_doctor_never_show_the_secret() {
    let s3 = S3Server::start();
    let data = tempfile::tempdir_in("/tmp").expect("tempdir");
    copy_tree(&datadir_v01(), data.path());
    let dir = data.path().to_str().expect("utf-8 path");
    let mut runs = Runs::default();

    // doctor: every check ok on a good setup.
    let out = runs.run(&["doctor"], &s3, BUCKET, Some(SECRET_KEY));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    for check in [
        "config",
        "credentials",
        "endpoint",
        "bucket",
        "write",
        "create-only",
        "compare-and-swap",
    ] {
        assert!(
            t.lines().any(|l| l.starts_with("ok") && l.contains(check)),
            "no ok line for {check}:\n{t}"
        );
    }
    assert!(!t.contains("FAILED"), "{t}");

    // publish, then again: same version, nothing sent.
    let publish = [
        "publish",
        "--dataset",
        "lab/pick",
        "--data-dir",
        dir,
        "--json",
    ];
    let first = runs.run(&publish, &s3, BUCKET, Some(SECRET_KEY));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let first: Value = serde_json::from_slice(&first.stdout).expect("json");
    let second = runs.run(&publish, &s3, BUCKET, Some(SECRET_KEY));
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    let second: Value = serde_json::from_slice(&second.stdout).expect("json");
    assert!(first["bytes_sent"].as_u64() > Some(0), "{first}");
    assert_eq!(second["bytes_sent"], 0, "{second}");
    assert_eq!(first["version_hash"], second["version_hash"]);
    assert_eq!(first["latest"]["change"], "created");
    assert_eq!(second["latest"]["change"], "unchanged");
    // The text form names what was skipped and the version.
    let out = runs.run(&publish[..5], &s3, BUCKET, Some(SECRET_KEY));
    let t = text(&out);
    let hash = first["version_hash"].as_str().unwrap_or_default();
    assert!(
        t.contains("skipped (already stored)") && t.contains(hash),
        "{t}"
    );
    assert!(
        t.contains("left out") && t.contains("legacy-recording: status recording"),
        "{t}"
    );

    // A recording episode named: refused, named, exit 1.
    let mut rec = publish[..5].to_vec();
    rec.push("legacy-recording");
    let out = runs.run(&rec, &s3, BUCKET, Some(SECRET_KEY));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("episode legacy-recording is recording"),
        "{}",
        text(&out)
    );

    // Wrong secret: publish exits 1 with the credentials error; doctor says FAILED + hint.
    let out = runs.run(&publish[..5], &s3, BUCKET, Some(WRONG_SECRET));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("rejected the credentials"),
        "{}",
        text(&out)
    );
    let out = runs.run(&["doctor"], &s3, BUCKET, Some(WRONG_SECRET));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("FAILED") && l.contains("bucket")),
        "{t}"
    );
    assert!(
        t.contains("hint: the access key id or secret key is wrong"),
        "{t}"
    );

    // Missing bucket: FAILED with the hint to create it.
    let out = runs.run(&["doctor"], &s3, "no-such-bucket", Some(SECRET_KEY));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("hint: create the bucket"), "{t}");
    let out = runs.run(&publish[..5], &s3, "no-such-bucket", Some(SECRET_KEY));
    assert!(
        text(&out).contains("bucket no-such-bucket does not exist"),
        "{}",
        text(&out)
    );

    // No credentials: usage error (2) naming the variable; doctor FAILED credentials.
    let out = runs.run(&publish[..5], &s3, BUCKET, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("AWS_ACCESS_KEY_ID is not set"),
        "{}",
        text(&out)
    );
    let out = runs.run(&["doctor", "--json"], &s3, BUCKET, None);
    let checks: Value = serde_json::from_slice(&out.stdout).expect("doctor json");
    assert_eq!(checks[1]["check"], "credentials");
    assert_eq!(checks[1]["status"], "FAILED");

    // The secrets: in no output, in no file of the data directory or the store.
    for (args, out) in &runs.outputs {
        let t = text(out);
        for secret in [SECRET_KEY, WRONG_SECRET] {
            assert!(
                !t.contains(secret),
                "`wshard {args}` printed the secret:\n{t}"
            );
        }
    }
    for root in [data.path(), s3.store_root().as_path()] {
        for secret in [SECRET_KEY, WRONG_SECRET] {
            let found = files_containing(root, secret.as_bytes());
            assert!(found.is_empty(), "the secret is in {found:?}");
        }
    }
}
