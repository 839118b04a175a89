//! `publish_credentials_*`: credentials from the AWS shared credentials file
//! (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`, profile `AWS_PROFILE` or
//! `default`) when the environment has none, for `wshard publish`, `query` and `doctor`
//! (the real binary) against a real s3s-fs; errors name the file and the profile, and no
//! output holds a secret.

use std::path::Path;
use std::process::{Command, Output};

use wshard_e2e::bins;
use wshard_e2e::bins::output_text as text;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY, WRONG_SECRET};

/// A secret that only the credentials file holds (a line the parser refuses).
const FILE_ONLY_SECRET: &str = "wshard-FileOnly-7c1d9e2b4a";

/// `wshard ARGS` with the store flags, no AWS variable but `env`.
fn wshard(args: &[&str], s3: &S3Server, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bins::wshard());
    cmd.args(args).args([
        "--endpoint",
        s3.endpoint(),
        "--bucket",
        BUCKET,
        "--allow-http",
    ]);
    for v in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "WSHARD_S3_ENDPOINT",
        "WSHARD_S3_BUCKET",
        "WSHARD_S3_PREFIX",
        "WSHARD_PYTHON",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run wshard")
}

fn write_credentials(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(
        path,
        format!(
            "# test profiles\n[default]\naws_access_key_id = {ACCESS_KEY}\n\
             aws_secret_access_key = {WRONG_SECRET}\n\n[lab]\naws_access_key_id={ACCESS_KEY}\n\
             aws_secret_access_key = {SECRET_KEY}\n\n[nosecret]\naws_access_key_id = {ACCESS_KEY}\n"
        ),
    )
    .expect("credentials file");
}

#[test]
fn publish_credentials_from_the_shared_file_and_never_shown() {
    let s3 = S3Server::start();
    let tmp = tempfile::tempdir_in("/tmp").expect("tempdir");
    let data = tmp.path().join("data");
    copy_tree(&datadir_v01().join("legacy-complete"), &data.join("ep-a"));
    let dir = data.to_string_lossy().into_owned();
    let file = tmp.path().join("aws").join("credentials");
    write_credentials(&file);
    let f = file.to_string_lossy().into_owned();
    let home = tmp.path().join("home");
    let h = home.to_string_lossy().into_owned();
    let publish = ["publish", "--dataset", "lab/pick", "--data-dir", &dir];
    let mut outputs = Vec::new();

    // AWS_SHARED_CREDENTIALS_FILE + AWS_PROFILE: publish works, doctor says where from.
    let lab = [
        ("AWS_SHARED_CREDENTIALS_FILE", f.as_str()),
        ("AWS_PROFILE", "lab"),
    ];
    let out = wshard(&publish, &s3, &lab);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    outputs.push(out);
    let out = wshard(&["doctor"], &s3, &lab);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.lines().any(|l| l.starts_with("ok")
            && l.contains("credentials")
            && l.contains(&format!("profile lab of {f}"))),
        "{t}"
    );
    outputs.push(out);
    // query: DuckDB gets the file's credentials too.
    let out = wshard(
        &[
            "query",
            "select episode from catalog",
            "--dataset",
            "lab/pick",
            "--csv",
        ],
        &s3,
        &lab,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "episode\nep-a\n");
    outputs.push(out);

    // ~/.aws/credentials when no file is named; profile default (the wrong secret here):
    // the store rejects it, exit 1.
    std::fs::create_dir_all(home.join(".aws")).expect("home");
    std::fs::copy(&file, home.join(".aws").join("credentials")).expect("copy");
    let out = wshard(&publish, &s3, &[("HOME", h.as_str())]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("rejected the credentials"),
        "{}",
        text(&out)
    );
    outputs.push(out);
    let out = wshard(
        &publish,
        &s3,
        &[("HOME", h.as_str()), ("AWS_PROFILE", "lab")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    outputs.push(out);

    // The environment wins over the file (never mixed).
    let env_first = [
        ("AWS_SHARED_CREDENTIALS_FILE", f.as_str()),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
    ];
    let out = wshard(&publish, &s3, &env_first);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    outputs.push(out);
    let half = [
        ("AWS_SHARED_CREDENTIALS_FILE", f.as_str()),
        ("AWS_PROFILE", "lab"),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
    ];
    let out = wshard(&publish, &s3, &half);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("AWS_SECRET_ACCESS_KEY is not set"),
        "{}",
        text(&out)
    );
    outputs.push(out);

    // A profile the file lacks, a profile without a secret, a line that is not INI:
    // exit 2, the file and the profile named, no value.
    let cases = [
        ("nope", "no [nope] section"),
        ("nosecret", "aws_secret_access_key missing or empty"),
    ];
    for (profile, why) in cases {
        let env = [
            ("AWS_SHARED_CREDENTIALS_FILE", f.as_str()),
            ("AWS_PROFILE", profile),
        ];
        let out = wshard(&publish, &s3, &env);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        assert!(
            t.contains(&f) && t.contains(&format!("profile {profile}")),
            "{t}"
        );
        assert!(t.contains(why), "{t}");
        outputs.push(out);
        let out = wshard(&["doctor"], &s3, &env);
        let t = text(&out);
        assert!(
            t.lines()
                .any(|l| l.starts_with("FAILED") && l.contains("credentials") && l.contains(why)),
            "{t}"
        );
        outputs.push(out);
    }
    let broken = tmp.path().join("broken");
    std::fs::write(
        &broken,
        format!("[default]\naws_access_key_id = {ACCESS_KEY}\n{FILE_ONLY_SECRET}\n"),
    )
    .expect("broken file");
    let b = broken.to_string_lossy().into_owned();
    for args in [
        &publish[..],
        &["doctor"],
        &["query", "select 1 from catalog"],
    ] {
        let out = wshard(args, &s3, &[("AWS_SHARED_CREDENTIALS_FILE", b.as_str())]);
        let t = text(&out);
        assert!(t.contains("line 3") && t.contains(&b), "{t}");
        outputs.push(out);
    }
    // No variable and no file: the old message, exit 2.
    let out = wshard(
        &publish,
        &s3,
        &[("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("AWS_ACCESS_KEY_ID is not set"),
        "{}",
        text(&out)
    );
    outputs.push(out);

    for out in &outputs {
        let t = text(out);
        for secret in [SECRET_KEY, WRONG_SECRET, FILE_ONLY_SECRET] {
            assert!(!t.contains(secret), "a secret in:\n{t}");
        }
    }
}
