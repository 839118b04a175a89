//! `wshard recover` and the daemon's recovery at start on every layout a data directory
//! holds, against the real `wshardd` and `wshard` binaries: a single-stream episode, a
//! multi-stream episode, an imported one, the data directory itself, and directories that
//! never were episodes.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wshard_e2e::multi::{episode_close, event, owner, producer, stream_spec};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{Durability, Outcome};

/// The lock file every writer of a data directory takes (its content is the holder's pid).
const LOCK_FILE: &str = ".wshardd.lock";

fn wshard(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(bins::wshard())
        .args(args)
        .env_remove("WSHARDD_CONFIG")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    wshard_e2e::check::output_text(o)
}

/// `wshard recover DIR [--apply] --json`: the exit code and the JSON document.
fn recover_json(dir: &Path, apply: bool) -> (i32, Value, Output) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["recover".as_ref(), dir.as_os_str()];
    if apply {
        args.push("--apply".as_ref());
    }
    args.push("--json".as_ref());
    let o = wshard(&args);
    let code = o.status.code().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (code, v, o)
}

/// Every entry under `dir` but the lock file: files with their bytes, directories as
/// `None`.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == LOCK_FILE) {
                continue;
            }
            if p.is_dir() {
                stack.push(p.clone());
                out.insert(p, None);
            } else {
                out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// A multi-stream episode `id` recorded to the end: `joints` (class `ack`) and `imu`
/// (class `chunk`), two events, every stream closed, the episode closed.
fn record_multi(d: &Daemon, id: &str) {
    let mut o = owner(&d.socket(), id);
    let joints = stream_spec(id, "joints", &data::channels(), 1000.0, Durability::Ack);
    let imu = stream_spec(id, "imu", &data::small_channels(), 200.0, Durability::Chunk);
    let mut a = producer(&d.socket(), &joints);
    let mut b = producer(&d.socket(), &imu);
    a.timesteps(&data::channels(), 0..20);
    b.timesteps(&data::small_channels(), 0..6);
    assert_eq!(event(&mut o, data::t_ns(3), "instruction", "pick"), 0);
    assert_eq!(event(&mut a, data::t_ns(9), "button", "pressed"), 1);
    a.flush_until(20);
    a.close(Outcome::Completed, 20);
    b.close(Outcome::Completed, 6);
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
    let o = wshard(&[
        "import".as_ref(),
        "npz".as_ref(),
        npz.as_os_str(),
        "--data-dir".as_ref(),
        data_dir.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "wshard import: {}", text(&o));
}

/// A data directory with a single-stream episode `single`, a multi-stream episode
/// `multi` (both recorded by the daemon, which is then stopped) and an imported episode
/// `imp`, all finished.
fn three_layouts() -> Daemon {
    let mut d = Daemon::start(DaemonOptions::default().rotation(8));
    d.record_ok("single", 20);
    record_multi(&d, "multi");
    d.terminate();
    assert!(d.wait_exit(TIMEOUT).success(), "log:\n{}", d.log());
    import_npz(d.root(), &d.data_dir(), "imp");
    d
}

fn actions(v: &Value) -> Vec<Value> {
    v["episodes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["actions"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn inspect_ok(dir: &Path) {
    let o = wshard(&["inspect".as_ref(), dir.as_os_str()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "inspect {}: {}",
        dir.display(),
        text(&o)
    );
}

/// `wshard recover DATA/EP` on a finished single-stream, multi-stream or imported episode
/// finds nothing to do and changes nothing; on a multi-stream episode with a torn events
/// tail, the dry run plans the cut and `--apply` makes only that change. (A multi-stream
/// episode named directly used to be taken for a data directory: `--apply` wrote
/// `EP/streams/streams_manifest.wshard` and `EP/.wshardd.lock`, after which `wshard
/// inspect EP` failed, and the dry run missed the torn tail.)
#[test]
fn recovery_recover_names_each_layout_directly_as_that_episode() {
    let d = three_layouts();
    let dd = d.data_dir();
    for id in ["single", "multi", "imp"] {
        let ep = dd.join(id);
        let before = tree(&dd);
        for apply in [false, true] {
            let (code, v, o) = recover_json(&ep, apply);
            assert_eq!(code, 0, "{id} apply={apply}: {}", text(&o));
            assert_eq!(v["scope"], "episode", "{id}: {v}");
            assert_eq!(v["data_dir"], dd.display().to_string(), "{id}: {v}");
            assert_eq!(v["episodes"][0]["episode_id"], id, "{id}: {v}");
            assert_eq!(v["episodes"][0]["status"], "nothing_to_do", "{id}: {v}");
            assert_eq!(tree(&dd), before, "{id} apply={apply}: files changed");
        }
        assert!(
            !ep.join(LOCK_FILE).exists(),
            "{id}: a lock file in the episode"
        );
        inspect_ok(&ep);
    }
    let (code, v, o) = recover_json(&dd, true);
    assert_eq!(code, 0, "{}", text(&o));
    assert_eq!(v["scope"], "data_dir", "{v}");
    assert_eq!(v["episodes"], serde_json::json!([]), "{v}");

    // A torn last event (never acknowledged) in the multi-stream episode.
    let events = dd.join("multi/multi_events.jsonl");
    let whole = std::fs::read(&events).unwrap();
    let before = tree(&dd);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap()
        .write_all(b"{\"data\":\"tor")
        .unwrap();
    let torn = tree(&dd);
    let ep = dd.join("multi");
    for target in [&ep, &dd] {
        let (code, v, o) = recover_json(target, false);
        assert_eq!(code, 3, "{}: {}", target.display(), text(&o));
        let cut: Vec<Value> = actions(&v)
            .into_iter()
            .filter(|a| a["action"] == "cut_events_tail")
            .collect();
        assert_eq!(cut.len(), 1, "{}: {v}", target.display());
        assert_eq!(cut[0]["path"], events.display().to_string(), "{v}");
        assert_eq!(cut[0]["to_len"], whole.len(), "{v}");
        assert_eq!(tree(&dd), torn, "a dry run changed files");
    }
    let (code, v, o) = recover_json(&ep, true);
    assert_eq!(code, 3, "{}", text(&o));
    assert_eq!(v["scope"], "episode", "{v}");
    assert_eq!(
        tree(&dd),
        before,
        "--apply changed more than the torn tail: {v}"
    );
    inspect_ok(&ep);
    let (code, v, o) = recover_json(&ep, true);
    assert_eq!(code, 0, "{}", text(&o));
    assert_eq!(v["episodes"][0]["status"], "nothing_to_do", "{v}");
}

/// A stream folder, the `streams/` folder of a multi-stream episode and the quarantine
/// directory are parts of something else: `wshard recover` refuses them (exit 2, naming
/// what to recover instead) and changes nothing.
#[test]
fn recovery_recover_refuses_a_stream_folder_and_the_quarantine() {
    let d = three_layouts();
    let dd = d.data_dir();
    let q = dd.join("quarantine/old");
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(
        q.join("journal_0000.wal"),
        b"a journal kept by an earlier recovery",
    )
    .unwrap();
    let before = tree(&dd);
    let multi = dd.join("multi");
    for (target, says) in [
        (dd.join("multi/streams"), multi.display().to_string()),
        (dd.join("multi/streams/joints"), multi.display().to_string()),
        (dd.join("quarantine"), "quarantine".to_owned()),
        (q.clone(), "quarantine".to_owned()),
    ] {
        for apply in [false, true] {
            let (code, _, o) = recover_json(&target, apply);
            assert_eq!(code, 2, "{}: {}", target.display(), text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(&says), "{}: {err}", target.display());
            assert!(o.stdout.is_empty(), "{}: {}", target.display(), text(&o));
            assert_eq!(tree(&dd), before, "{}: files changed", target.display());
        }
    }
}

/// At start, a directory of the data directory that never was an episode (an empty one,
/// one an operator made, a copy of an episode under another name, a name that is no
/// episode id) is left exactly as it is, named in the log and in `wshard status`; a
/// crashed episode beside them is recovered. `wshard recover DATA` says the same.
/// (Before, each became an empty `recovered` episode with a manifest written into it.)
#[test]
fn recovery_at_start_leaves_directories_that_never_were_episodes_alone() {
    let mut d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    d.record_ok("done", 20);
    // An episode cut by SIGKILL with 30 timesteps acknowledged.
    let ch = data::channels();
    let mut client = d.client("wshard-e2e/crashed");
    let mut w = client
        .open_episode(data::open_spec(
            "crashed",
            &ch,
            wshard_client::Durability::Ack,
        ))
        .unwrap();
    data::push_steps(&mut w, &ch, 30).unwrap();
    assert_eq!(w.flush().unwrap(), 30);
    let _ = d.kill9();
    drop(w);
    std::fs::create_dir(dd.join("scratch")).unwrap();
    std::fs::create_dir(dd.join("notes")).unwrap();
    std::fs::write(dd.join("notes/todo.txt"), b"label the cups").unwrap();
    wshard_e2e::fixtures::copy_tree(&dd.join("done"), &dd.join("done.bak"));
    std::fs::create_dir(dd.join("lost+found")).unwrap();
    let strays = ["done.bak", "lost+found", "notes", "scratch"];
    let before: Vec<_> = strays.iter().map(|s| tree(&dd.join(s))).collect();

    d.spawn();
    d.wait_ready();
    let log = d.log();
    for s in strays {
        assert!(
            log.lines()
                .any(|l| l.contains("left alone") && l.contains(&dd.join(s).display().to_string())),
            "{s} not named in the log:\n{log}"
        );
    }
    let o = Command::new(bins::wshard())
        .args(["status", "--json", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    let daemon = &st["result"]["daemon"];
    let recovered: Vec<&str> = daemon["recovery"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["episode"].as_str())
        .collect();
    assert_eq!(recovered, ["crashed"], "{daemon}");
    let left: Vec<&str> = daemon["recovery_left_alone"]
        .as_array()
        .unwrap_or_else(|| panic!("no recovery_left_alone: {daemon}"))
        .iter()
        .filter_map(|r| r["directory"].as_str())
        .collect();
    assert_eq!(left, strays, "{daemon}");
    for r in daemon["recovery_left_alone"].as_array().unwrap() {
        assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }
    let o = Command::new(bins::wshard())
        .args(["status", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&o.stdout);
    for s in strays {
        assert!(human.contains(s), "{s} not in `wshard status`:\n{human}");
    }
    for (s, was) in strays.iter().zip(&before) {
        assert_eq!(&tree(&dd.join(s)), was, "{s} was changed");
    }
    let st = wshard_e2e::check::check_episode(&dd, "crashed", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("recovered", 30));

    d.terminate();
    assert!(d.wait_exit(TIMEOUT).success(), "log:\n{}", d.log());
    let (code, v, o) = recover_json(&dd, false);
    assert_eq!(code, 0, "{}", text(&o));
    assert_eq!(v["episodes"], serde_json::json!([]), "{v}");
    let offline: Vec<&str> = v["left_alone"]
        .as_array()
        .unwrap_or_else(|| panic!("no left_alone: {v}"))
        .iter()
        .filter_map(|r| r["directory"].as_str())
        .collect();
    assert_eq!(offline, strays, "wshard recover and wshardd disagree: {v}");
}

/// The daemon's recovery at start takes the path `wshard recover` takes: an episode cut by
/// SIGKILL whose manifest is then found corrupt beside a stale `EP_manifest.wshard.tmp` (a
/// crash during a manifest commit, then bit rot) is recovered by one start: every
/// acknowledged timestep there, the bad manifest in quarantine, nothing half-done left.
/// (Before, recovery failed at start, leaving the episode `recovering`.)
#[test]
fn recovery_at_start_stale_manifest_tmp_beside_a_corrupt_manifest() {
    let mut d = Daemon::start(DaemonOptions::default().rotation(8));
    let dd = d.data_dir();
    let ch = data::channels();
    let mut client = d.client("wshard-e2e/cut");
    let mut w = client
        .open_episode(data::open_spec("cut", &ch, wshard_client::Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 30).unwrap();
    assert_eq!(w.flush().unwrap(), 30);
    let _ = d.kill9();
    drop(w);
    let manifest = wshard_e2e::check::manifest_path(&dd, "cut");
    let good = std::fs::read(&manifest).unwrap();
    std::fs::write(dd.join("cut/cut_manifest.wshard.tmp"), &good).unwrap();
    let mut bad = good;
    bad[0] ^= 0xFF;
    std::fs::write(&manifest, &bad).unwrap();

    d.spawn();
    d.wait_ready();
    let log = d.log();
    assert!(!log.contains("recovery failed"), "log:\n{log}");
    let st = wshard_e2e::check::check_episode(&dd, "cut", &ch).unwrap();
    assert_eq!(
        (st.status.as_str(), st.timesteps),
        ("recovered", 30),
        "log:\n{log}"
    );
    for suffix in [".partial", ".wal", ".tmp"] {
        let left = wshard_e2e::check::episode_files_ending(&dd, suffix);
        assert!(left.is_empty(), "left after recovery: {left:?}");
    }
    let kept = std::fs::read(dd.join("quarantine/cut/cut_manifest.wshard")).unwrap();
    assert_eq!(kept, bad);
}
