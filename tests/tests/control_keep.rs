//! `control_keep_*`: `wshard keep EPISODE [--release]` against the real daemon's control
//! socket, on every on-disk layout (single-stream, multi-stream, imported) and on an open
//! episode: the mark (`data_dir/.keep/EP`) is there when the reply comes, `episodes`,
//! `status` and `inspect` show it, it survives a SIGKILL and the recovery after it (which
//! leaves `.keep` alone), `--release` removes it; an unknown episode, a stream or a bad id
//! and a non-admin caller get typed errors and nothing changes. `stop` and `abort` of a
//! finished episode of each layout are `UNKNOWN_EPISODE` with its status on disk.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use wshard_client::Durability;
use wshard_e2e::check::check_episode;
use wshard_e2e::control_cli::{control_socket, json_ok, text, wshard};
use wshard_e2e::multi::{episode_close, owner, producer, stream_spec};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::Durability as WireDurability;

/// `wshard ARGS --json`, which must fail: the reply's `error`. A refusal
/// (`UNKNOWN_EPISODE`, `PERMISSION_DENIED`) exits 1, a bad request 2.
fn json_err(d: &Daemon, args: &[&str]) -> Value {
    let o = wshard(d, args);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("wshard {args:?}: not JSON ({e}): {}", text(&o)));
    let want = if v["error"]["code"] == "BAD_REQUEST" {
        2
    } else {
        1
    };
    assert_eq!(o.status.code(), Some(want), "wshard {args:?}: {}", text(&o));
    v["error"].clone()
}

fn mark(d: &Daemon, id: &str) -> PathBuf {
    d.data_dir().join(".keep").join(id)
}

/// A finished multi-stream episode `id`: two streams, closed by their producers and owner.
fn record_multi(d: &Daemon, id: &str) {
    let mut o = owner(&d.socket(), id);
    let joints = stream_spec(id, "joints", &data::channels(), 1000.0, WireDurability::Ack);
    let imu = stream_spec(
        id,
        "imu",
        &data::small_channels(),
        200.0,
        WireDurability::Chunk,
    );
    let mut a = producer(&d.socket(), &joints);
    let mut b = producer(&d.socket(), &imu);
    a.timesteps(&data::channels(), 0..20);
    b.timesteps(&data::small_channels(), 0..6);
    a.flush_until(20);
    a.close(wshard_ingest_proto::Outcome::Completed, 20);
    b.close(wshard_ingest_proto::Outcome::Completed, 6);
    assert_eq!(episode_close(&mut o), 0);
}

/// An imported episode `id` (DreamerV3 `.npz` written by numpy, `wshard import npz`).
fn import_npz(root: &Path, data_dir: &Path, id: &str) {
    let npz = root.join(format!("{id}.npz"));
    let script = "import sys, numpy as np\n\
                  t = 12\n\
                  first = np.zeros(t, bool); first[0] = True\n\
                  last = np.zeros(t, bool); last[-1] = True\n\
                  np.savez(sys.argv[1], image=np.arange(t * 12, dtype=np.uint8).reshape(t, 2, 2, 3),\n\
                           action=np.ones((t, 2), np.float32), reward=np.arange(t, dtype=np.float32),\n\
                           discount=np.ones(t, np.float32), is_first=first, is_last=last, is_terminal=last)\n";
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&npz)
        .output()
        .unwrap();
    assert!(o.status.success(), "numpy: {}", text(&o));
    let o = Command::new(bins::wshard())
        .arg("import")
        .arg("npz")
        .arg(&npz)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "wshard import: {}", text(&o));
}

/// A running daemon whose data directory holds a single-stream episode `single` (20
/// steps), a multi-stream episode `multi` (both recorded by it) and an imported episode
/// `imp` (imported while it was stopped: an import needs the data directory's lock).
fn three_layouts() -> Daemon {
    let mut d = Daemon::start(DaemonOptions::default().rotation(8));
    d.record_ok("single", 20);
    record_multi(&d, "multi");
    d.terminate();
    assert!(d.wait_exit(TIMEOUT).success(), "log:\n{}", d.log());
    import_npz(d.root(), &d.data_dir(), "imp");
    d.spawn();
    d.wait_ready();
    d
}

fn listed(d: &Daemon, id: &str) -> Value {
    let r = json_ok(d, &["episodes", "--json"]);
    r["episodes"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {r}"))
}

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn control_keep_every_layout_marks_shows_survives_a_kill_and_releases() {
    let mut d = three_layouts();
    let ch = data::channels();
    let mut client = d.client("e2e/keep-open");
    let mut w = client
        .open_episode(data::open_spec("open-one", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 10).unwrap();
    w.flush().unwrap();
    let all = ["single", "multi", "imp", "open-one"];
    let before: Vec<_> = ["single", "multi", "imp"]
        .iter()
        .map(|id| files(&d.data_dir().join(id)))
        .collect();

    for id in all {
        assert_eq!(listed(&d, id)["kept"], false, "{id}");
        let r = json_ok(&d, &["keep", id, "--json"]);
        assert_eq!(
            (&r["episode"], &r["kept"], &r["changed"]),
            (&Value::from(id), &Value::Bool(true), &Value::Bool(true)),
            "{r}"
        );
        let m = mark(&d, id);
        assert!(m.is_file(), "{}", m.display());
        assert_eq!(std::fs::metadata(&m).unwrap().len(), 0);
        assert_eq!(listed(&d, id)["kept"], true, "{id}");
    }
    // Again: nothing changes, and the text says so.
    let o = wshard(&d, &["keep", "single"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("was kept already"),
        "{}",
        text(&o)
    );
    // status: the list of kept episodes and the open episode's flag.
    let s = json_ok(&d, &["status", "--json"]);
    let kept: Vec<&str> = s["daemon"]["kept_episodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kept, ["imp", "multi", "open-one", "single"], "{s}");
    let open = &s["episodes"][0];
    assert_eq!(
        (&open["episode"], &open["kept"]),
        (&Value::from("open-one"), &Value::Bool(true))
    );
    let o = wshard(&d, &["status"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("kept            imp, multi, open-one, single"),
        "{}",
        text(&o)
    );
    // episodes: the kept column, `yes` on each kept row.
    let o = wshard(&d, &["episodes"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.lines().next().is_some_and(|h| h.contains("kept")),
        "{out}"
    );
    for id in all {
        let row = out.lines().find(|l| l.starts_with(id)).unwrap_or("");
        assert!(row.contains("yes"), "{id}: {out}");
    }
    // inspect of the directories, text and JSON.
    for id in ["single", "multi", "imp"] {
        let dir = d.data_dir().join(id);
        let o = Command::new(bins::wshard())
            .arg("inspect")
            .arg(&dir)
            .arg("--json")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["kept"], true, "{id}: {v}");
        let o = Command::new(bins::wshard())
            .arg("inspect")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("kept "),
            "{}",
            text(&o)
        );
    }
    // The episodes themselves are untouched by the marks.
    for (id, was) in ["single", "multi", "imp"].iter().zip(&before) {
        assert_eq!(&files(&d.data_dir().join(id)), was, "{id}");
    }

    // SIGKILL with the open episode recording: the marks survive, recovery leaves `.keep`
    // alone (not an episode, not reported as a stranger).
    d.restart();
    drop(w);
    drop(client);
    let s = json_ok(&d, &["status", "--json"]);
    assert_eq!(
        s["daemon"]["kept_episodes"].as_array().map(Vec::len),
        Some(4),
        "{s}"
    );
    let left = s["daemon"]["recovery_left_alone"].to_string();
    assert!(!left.contains(".keep"), "{left}");
    for id in all {
        assert!(mark(&d, id).is_file(), "{id}");
        assert_eq!(listed(&d, id)["kept"], true, "{id}");
    }
    assert!(!d.data_dir().join("quarantine").join(".keep").exists());

    for id in all {
        let r = json_ok(&d, &["keep", id, "--release", "--json"]);
        assert_eq!(
            (&r["kept"], &r["changed"]),
            (&Value::Bool(false), &Value::Bool(true)),
            "{r}"
        );
        assert!(!mark(&d, id).exists(), "{id}");
        assert_eq!(listed(&d, id)["kept"], false, "{id}");
    }
    let r = json_ok(&d, &["keep", "single", "--release", "--json"]);
    assert_eq!(r["changed"], false, "{r}");
    // Nothing kept: no kept column.
    let o = wshard(&d, &["episodes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("kept"),
        "{}",
        text(&o)
    );
    let st = check_episode(&d.data_dir(), "single", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 20));
}

#[test]
fn control_keep_stop_and_abort_of_finished_episodes_of_every_layout() {
    let d = three_layouts();
    for id in ["single", "multi", "imp"] {
        for verb in ["stop", "abort"] {
            let e = json_err(&d, &[verb, id, "--json"]);
            assert_eq!(e["code"], "UNKNOWN_EPISODE", "{verb} {id}: {e}");
            assert_eq!(e["on_disk_status"], "complete", "{verb} {id}: {e}");
        }
        json_ok(&d, &["keep", id, "--json"]);
        json_ok(&d, &["keep", id, "--release", "--json"]);
    }
}

#[test]
fn control_keep_unknown_episode_stream_or_bad_id_is_refused() {
    let d = Daemon::start(DaemonOptions::default());
    let e = json_err(&d, &["keep", "no-such-episode", "--json"]);
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert_eq!(e["episode"], "no-such-episode", "{e}");
    let e = json_err(&d, &["keep", "no-such-episode", "--release", "--json"]);
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    for bad in ["ep/stream", ".upload", "..", "quarantine"] {
        let e = json_err(&d, &["keep", bad, "--json"]);
        assert_eq!(e["code"], "BAD_REQUEST", "{bad}: {e}");
        assert_eq!(e["episode"], bad, "{e}");
    }
    let e = json_err(&d, &["keep", "ep/stream", "--json"]);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("not one of its streams"),
        "{e}"
    );
    // A directory that holds no episode is none.
    std::fs::create_dir(d.data_dir().join("scratch")).unwrap();
    let e = json_err(&d, &["keep", "scratch", "--json"]);
    assert_eq!(e["code"], "UNKNOWN_EPISODE", "{e}");
    assert!(!d.data_dir().join(".keep").join("scratch").exists());
    // Text output: the code and the episode on stderr, exit 1.
    let o = wshard(&d, &["keep", "nope"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("UNKNOWN_EPISODE") && err.contains("nope"),
        "{err}"
    );
    // A mark whose episode is gone may still be released.
    d.record_ok("gone", 3);
    json_ok(&d, &["keep", "gone", "--json"]);
    std::fs::remove_dir_all(d.data_dir().join("gone")).unwrap();
    let r = json_ok(&d, &["keep", "gone", "--release", "--json"]);
    assert_eq!(r["changed"], true, "{r}");
    assert!(!d.data_dir().join(".keep").join("gone").exists());
}

#[test]
fn control_keep_refused_for_non_admin_peer() {
    if let Err(why) =
        wshard_e2e::privileged::require_root("control_keep_refused_for_non_admin_peer")
    {
        println!("skipped: {why}");
        return;
    }
    let opts = DaemonOptions {
        extra_toml: "[control]\nmode = \"0666\"\n".into(),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    std::fs::set_permissions(
        d.root(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    d.record_ok("guarded", 5);
    json_ok(&d, &["keep", "guarded", "--json"]);
    let as_nobody = |args: &[&str]| {
        Command::new(bins::wshard())
            .args(args)
            .arg("--control")
            .arg(control_socket(&d))
            .uid(65534)
            .gid(65534)
            .output()
            .expect("cannot run wshard as uid 65534")
    };
    for args in [
        &["keep", "guarded", "--release", "--json"][..],
        &["keep", "guarded", "--json"][..],
    ] {
        let o = as_nobody(args);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["error"]["code"], "PERMISSION_DENIED", "{v}");
        assert_eq!(v["error"]["uid"], 65534, "{v}");
        assert_eq!(v["verb"], "keep", "{v}");
    }
    // Nothing changed: still kept.
    assert!(mark(&d, "guarded").is_file());
    assert_eq!(listed(&d, "guarded")["kept"], true);
    assert!(
        d.wait_log("control: permission denied", 2, TIMEOUT),
        "{}",
        d.log()
    );
}
