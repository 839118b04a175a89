//! The operator's words on the control socket, against the real daemon: `wshard status` and
//! `wshard episodes` name an episode's bytes alike (`received` payload, `on disk` chunk
//! files) with equal values; the "recovered at startup" table shows what was replayed and
//! the episode's length; a control socket that refuses the user says so (path, owner,
//! group, mode and the config keys that grant access), a stale socket is called stale.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{Durability, Outcome};
use wshard_e2e::privileged::{require_root, NOBODY};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};

fn control_socket(d: &Daemon) -> PathBuf {
    d.root().join("wshardd-control.sock")
}

fn wshard_cmd(d: &Daemon, args: &[&str]) -> Command {
    let mut c = Command::new(bins::wshard());
    c.args(args)
        .arg("--control")
        .arg(control_socket(d))
        .env_remove("WSHARDD_CONFIG");
    c
}

fn text(o: &Output) -> String {
    wshard_e2e::check::output_text(o)
}

/// `wshard ARGS` must exit 0; its stdout.
fn stdout_ok(d: &Daemon, args: &[&str]) -> String {
    let o = wshard_cmd(d, args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "wshard {args:?}: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// `wshard ARGS --json`: the `result` of the daemon's reply.
fn json_ok(d: &Daemon, args: &[&str]) -> Value {
    let out = stdout_ok(d, args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["ok"], Value::Bool(true), "{v}");
    v["result"].clone()
}

fn find<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .and_then(|a| a.iter().find(|e| e["episode"] == id))
        .unwrap_or_else(|| panic!("episode {id} not in {list}"))
}

/// Poll `status` until the open episode `id` has `chunks` finalized chunks.
fn wait_chunks(d: &Daemon, id: &str, chunks: u64) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let r = json_ok(d, &["status", "--json"]);
        if find(&r["episodes"], id)["chunks"] == chunks {
            return;
        }
        assert!(Instant::now() < deadline, "{id}: not {chunks} chunks: {r}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The cell of column `name` in the row of `table` (text holding a header line that starts
/// with `first`) whose first cell is `row_key`. Columns are two spaces apart; `name` is a
/// right-aligned column, so its cells end where its header ends.
fn cell(table: &str, first: &str, row_key: &str, name: &str) -> String {
    let lines: Vec<&str> = table.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no header `{first}` in:\n{table}"));
    let header = lines[h];
    let start = header
        .match_indices(name)
        .map(|(i, _)| i)
        .find(|&i| {
            let before = &header[..i];
            let after = &header[i + name.len()..];
            (before.is_empty() || before.ends_with("  "))
                && (after.is_empty() || after.starts_with("  "))
        })
        .unwrap_or_else(|| panic!("no column `{name}` in {header:?}"));
    let end = start + name.len();
    let row = lines[h + 1..]
        .iter()
        .find(|l| l.split("  ").next() == Some(row_key))
        .unwrap_or_else(|| panic!("no row `{row_key}` in:\n{table}"));
    let upto: String = row.chars().take(end).collect();
    upto.trim_end()
        .rsplit("  ")
        .next()
        .unwrap()
        .trim()
        .to_owned()
}

/// Sum of the sizes of the episode's chunk files.
fn chunk_files_bytes(d: &Daemon, id: &str) -> u64 {
    std::fs::read_dir(d.data_dir().join(id))
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.contains("_chunk_") && n.ends_with(".wshard")
        })
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// `1.5 KiB`, `512 B`: bytes as the CLI prints them (recomputed here, the e2e crate does
/// not link the CLI).
#[allow(clippy::cast_precision_loss)] // display only
fn human(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = "KiB";
    for u in ["MiB", "GiB", "TiB", "PiB"] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

#[test]
fn cli_status_and_episodes_name_received_and_on_disk_alike() {
    let d = Daemon::start(DaemonOptions::default().rotation(50));
    let ch = data::channels();
    let mut client = d.client("e2e/words");
    let mut w = client
        .open_episode(data::open_spec("both-1", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 120).unwrap();
    w.flush().unwrap();
    wait_chunks(&d, "both-1", 2);

    // JSON: the same names and the same values in both verbs.
    let st = json_ok(&d, &["status", "--json"]);
    let s = find(&st["episodes"], "both-1");
    let eps = json_ok(&d, &["episodes", "--json"]);
    let e = find(&eps["episodes"], "both-1");
    let received = s["received_bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("{s}"));
    let on_disk = s["on_disk_bytes"].as_u64().unwrap_or_else(|| panic!("{s}"));
    assert!(received > 0, "{s}");
    assert_eq!(e["received_bytes"], received, "episodes {e} vs status {s}");
    assert_eq!(e["on_disk_bytes"], on_disk, "episodes {e} vs status {s}");
    assert_eq!(on_disk, chunk_files_bytes(&d, "both-1"), "{s}");
    assert!(on_disk > 0, "two chunks are published: {s}");
    assert_eq!(
        (&s["received"], &e["timesteps"]),
        (&Value::from(120), &Value::from(120))
    );

    // Text: both tables have `received` and `on disk` columns, with the same cells.
    let status = stdout_ok(&d, &["status"]);
    let episodes = stdout_ok(&d, &["episodes"]);
    println!("{status}\n{episodes}");
    for (name, value) in [("received", received), ("on disk", on_disk)] {
        let a = cell(&status, "episode ", "both-1", name);
        let b = cell(&episodes, "episode ", "both-1", name);
        assert_eq!(a, human(value), "status `{name}`:\n{status}");
        assert_eq!(b, a, "episodes `{name}`:\n{episodes}\nstatus:\n{status}");
    }
    assert_eq!(
        cell(&status, "episode ", "both-1", "timesteps"),
        "120",
        "{status}"
    );
    assert!(
        !status.contains(" bytes ") && !episodes.contains(" bytes "),
        "no bare `bytes` column:\n{status}\n{episodes}"
    );

    // Finished: on disk is still the chunk files; what was received is not kept.
    w.close(Outcome::Completed).unwrap();
    let eps = json_ok(&d, &["episodes", "--json"]);
    let e = find(&eps["episodes"], "both-1");
    assert_eq!(e["on_disk_bytes"], chunk_files_bytes(&d, "both-1"), "{e}");
    assert_eq!(e["received_bytes"], Value::Null, "{e}");
    let episodes = stdout_ok(&d, &["episodes"]);
    assert_eq!(
        cell(&episodes, "episode ", "both-1", "received"),
        "-",
        "{episodes}"
    );
    assert_eq!(
        cell(&episodes, "episode ", "both-1", "on disk"),
        human(chunk_files_bytes(&d, "both-1")),
        "{episodes}"
    );
}

#[test]
fn cli_recovered_at_startup_shows_replayed_and_episode_timesteps() {
    let mut d = Daemon::new(DaemonOptions::default().rotation(50));
    d.spawn();
    d.wait_ready();
    let ch = data::channels();
    let mut client = d.client("e2e/crashed");
    let mut w = client
        .open_episode(data::open_spec("crashed", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 120).unwrap();
    w.flush().unwrap();
    assert_eq!(w.durable_seq(), 120);
    // Chunks 0 and 1 (100 timesteps) are published; 20 are only in the journal.
    wait_chunks(&d, "crashed", 2);
    d.kill9();
    drop(w);
    drop(client);
    d.spawn();
    d.wait_ready();

    let st = json_ok(&d, &["status", "--json"]);
    let r = find(&st["daemon"]["recovery"], "crashed");
    assert_eq!(r["timesteps_recovered"], 20, "{r}");
    assert_eq!(r["total_timesteps"], 120, "{r}");
    let eps = json_ok(&d, &["episodes", "--json"]);
    assert_eq!(find(&eps["episodes"], "crashed")["timesteps"], 120);

    let status = stdout_ok(&d, &["status"]);
    println!("{status}");
    assert!(status.contains("recovered at startup:"), "{status}");
    assert_eq!(
        cell(&status, "episode ", "crashed", "timesteps replayed"),
        "20",
        "{status}"
    );
    assert_eq!(
        cell(&status, "episode ", "crashed", "timesteps in episode"),
        "120",
        "{status}"
    );
}

#[test]
fn cli_stale_or_missing_control_socket_says_which() {
    let d = Daemon::new(DaemonOptions::default());
    // No file at all.
    let o = wshard_cmd(&d, &["status"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no socket file"), "{err}");
    assert!(err.contains("is wshardd running"), "{err}");
    assert!(
        err.contains(&control_socket(&d).display().to_string()),
        "{err}"
    );

    // A socket file nobody listens on (left by a daemon that was killed).
    drop(UnixListener::bind(control_socket(&d)).unwrap());
    let o = wshard_cmd(&d, &["status"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nothing listens on it"), "{err}");
    assert!(err.contains("stale"), "{err}");
}

fn group_name(gid: u32) -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name)
}

fn as_nobody(d: &Daemon, args: &[&str]) -> Output {
    wshard_cmd(d, args)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("cannot run wshard as nobody")
}

#[test]
fn cli_control_socket_refusing_the_user_names_group_mode_and_allowlists() {
    if let Err(why) =
        require_root("cli_control_socket_refusing_the_user_names_group_mode_and_allowlists")
    {
        eprintln!("skipping: {why}");
        return;
    }
    // control.mode 0660 (the default), owned by root's group: uid 65534 may not write it.
    let d = Daemon::start(DaemonOptions::default());
    std::fs::set_permissions(d.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = control_socket(&d).display().to_string();
    let group = group_name(0);
    for verb in ["status", "close"] {
        let args: &[&str] = if verb == "close" {
            &["close", "x"]
        } else {
            &["status"]
        };
        let o = as_nobody(&d, args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("is wshardd running"), "{err}");
        assert!(
            err.contains(&format!("the control socket {sock} refused uid {NOBODY}")),
            "{err}"
        );
        assert!(err.contains(&format!("group `{group}` (gid 0)")), "{err}");
        assert!(err.contains("mode 0660"), "{err}");
        assert!(err.contains("access.socket_group"), "{err}");
        assert!(err.contains("control.mode"), "{err}");
        let allowlist = if verb == "close" {
            "control.admin_uids"
        } else {
            "access.allow_uids"
        };
        assert!(err.contains(allowlist), "{verb}: {err}");
    }

    // A directory on the way that the user may not search.
    std::fs::set_permissions(d.root(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let o = as_nobody(&d, &["status"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("refused uid {NOBODY}")), "{err}");
    assert!(
        err.contains(&format!("directory {}, ", d.root().display())) && err.contains("mode 0700"),
        "{err}"
    );
    assert!(err.contains("search"), "{err}");
}

#[test]
fn cli_admin_refusal_names_the_admin_allowlist() {
    if let Err(why) = require_root("cli_admin_refusal_names_the_admin_allowlist") {
        eprintln!("skipping: {why}");
        return;
    }
    let opts = DaemonOptions {
        extra_toml: "[control]\nmode = \"0666\"\n".into(),
        ..DaemonOptions::default()
    };
    let d = Daemon::start(opts);
    std::fs::set_permissions(d.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = as_nobody(&d, &["close", "anything"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("PERMISSION_DENIED"), "{err}");
    assert!(err.contains(&format!("uid {NOBODY}")), "{err}");
    assert!(
        err.contains("control.admin_uids") && err.contains("control.admin_gids"),
        "{err}"
    );
}
