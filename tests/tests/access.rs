//! Access control on the ingest socket, against the real `wshardd`:
//!
//! - `[access] allow_uids` / `allow_gids`: a peer the lists do not name (checked with
//!   `SO_PEERCRED`) gets `ERROR{PERMISSION_DENIED}` naming its uid and the keys, and the
//!   connection is closed; a listed one records; SIGHUP changes the lists for new
//!   connections. The other uid is a helper process (`access_client`) started as
//!   `nobody` (65534): these tests need root and skip with a printed reason otherwise.
//! - `access.socket_group`: the socket file belongs to the group; an unknown group stops
//!   the daemon at start with an error naming it.
//! - A client only ever touches its own episode: another connection can neither OPEN it,
//!   nor append to it, nor close it.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use wshard_client::{ClientError, Durability, Outcome};
use wshard_e2e::check::check_episode;
use wshard_e2e::privileged::{self, require_root, NOBODY};
use wshard_e2e::raw::{timestep_frame, RawConn};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{ErrorCode, Frame};

/// A daemon whose socket anyone may open (mode 0666, directory 0755), with `access` as
/// its `[access]` table.
fn start_open_socket(access: &str) -> Daemon {
    let opts = DaemonOptions {
        socket_mode: "0666".into(),
        extra_toml: format!("[access]\n{access}\n"),
        ..DaemonOptions::default()
    };
    let mut d = Daemon::new(opts);
    std::fs::set_permissions(d.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d.spawn();
    d.wait_ready();
    d
}

/// Run `access_client` as uid/gid `NOBODY`: its one output line and whether it exited 0.
fn client_as_nobody(d: &Daemon, id: &str, n: u64) -> (String, bool) {
    privileged::client_as_nobody(Path::new(env!("CARGO_BIN_EXE_access_client")), d, id, n)
}

#[test]
fn access_unlisted_uid_is_refused_then_allowed_after_sighup() {
    if let Err(why) = require_root("access_unlisted_uid_is_refused_then_allowed_after_sighup") {
        eprintln!("skipping: {why}");
        return;
    }
    let mut d = start_open_socket("allow_uids = [1234]");
    let (out, ok) = client_as_nobody(&d, "denied", 10);
    assert!(!ok, "{out}");
    assert!(out.starts_with("server PERMISSION_DENIED: "), "{out}");
    assert!(out.contains(&format!("uid {NOBODY}")), "{out}");
    assert!(out.contains("access.allow_uids"), "{out}");
    assert!(out.contains("access.allow_gids"), "{out}");
    assert!(
        d.wait_log("refusing a connection", 1, TIMEOUT),
        "{}",
        d.log()
    );
    assert!(!d.data_dir().join("denied").exists(), "nothing recorded");
    // Root (and the daemon's own uid) is always allowed.
    d.record_ok("root-ok", 20);

    // SIGHUP: the new list applies to new connections.
    let mut opts = d.options().clone();
    opts.extra_toml = format!("[access]\nallow_uids = [1234, {NOBODY}]\n");
    d.set_options(opts);
    d.hangup();
    assert!(
        d.wait_log("configuration reloaded", 1, TIMEOUT),
        "{}",
        d.log()
    );
    let (out, ok) = client_as_nobody(&d, "allowed", 50);
    assert!(ok, "{out}; log:\n{}", d.log());
    assert_eq!(out, "ok 50");
    let st = check_episode(&d.data_dir(), "allowed", &data::channels()).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 50));
    assert!(d.is_running());
}

#[test]
fn access_listed_gid_records() {
    if let Err(why) = require_root("access_listed_gid_records") {
        eprintln!("skipping: {why}");
        return;
    }
    let d = start_open_socket(&format!("allow_uids = [1234]\nallow_gids = [{NOBODY}]"));
    let (out, ok) = client_as_nobody(&d, "by-gid", 30);
    assert!(ok, "{out}; log:\n{}", d.log());
    assert_eq!(out, "ok 30");
}

#[test]
fn access_socket_group_is_applied() {
    if let Err(why) = require_root("access_socket_group_is_applied") {
        eprintln!("skipping: {why}");
        return;
    }
    // By name when the system has one for 65534, else by number.
    let group = ["nogroup", "nobody"]
        .into_iter()
        .find(|g| {
            nix::unistd::Group::from_name(g)
                .ok()
                .flatten()
                .is_some_and(|g| g.gid.as_raw() == NOBODY)
        })
        .map_or_else(|| NOBODY.to_string(), str::to_owned);
    let d = start_open_socket(&format!("socket_group = {group:?}"));
    let meta = std::fs::metadata(d.socket()).unwrap();
    assert_eq!(meta.gid(), NOBODY, "socket_group {group}");
    assert_eq!(meta.mode() & 0o777, 0o666);
    d.record_ok("grouped", 10);
}

#[test]
fn access_unknown_socket_group_stops_the_start() {
    // Needs no privileges: the group is looked up before anything is changed.
    let opts = DaemonOptions {
        extra_toml: "[access]\nsocket_group = \"no-such-group-wshard-e2e\"\n".into(),
        ..DaemonOptions::default()
    };
    let mut d = Daemon::new(opts);
    d.spawn();
    let status = d.wait_exit(TIMEOUT);
    assert!(!status.success(), "{status}");
    assert!(
        d.log()
            .contains("access.socket_group `no-such-group-wshard-e2e`: no such group"),
        "{}",
        d.log()
    );
    assert!(!d.socket().exists(), "the socket is not left behind");
}

#[test]
fn access_client_only_touches_its_own_episode() {
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut owner = d.client("owner");
    let mut w = owner
        .open_episode(data::open_spec("mine", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 40).unwrap();
    w.flush().unwrap();

    // Another client cannot OPEN the same episode...
    let mut other = d.client("intruder");
    match other.open_episode(data::open_spec("mine", &ch, Durability::Ack)) {
        Err(ClientError::Server { code, message }) => {
            assert_eq!(code, ErrorCode::EpisodeExists, "{message}");
        }
        Err(e) => panic!("expected EPISODE_EXISTS, got {e}"),
        Ok(_) => panic!("a second client opened an episode another one records"),
    }
    // ...nor append to or close it: no frame names an episode, and without its own OPEN a
    // connection has none.
    let mut raw = RawConn::hello(&d.socket());
    raw.send(&timestep_frame(40, &ch));
    let m = raw.expect_error(ErrorCode::NotOpen);
    assert!(m.contains("without an open episode"), "{m}");
    raw.send(&Frame::Flush);
    raw.expect_error(ErrorCode::NotOpen);
    raw.send(&Frame::Close {
        outcome: wshard_ingest_proto::Outcome::Aborted,
    });
    raw.expect_error(ErrorCode::NotOpen);
    // Its own episode gets its own timesteps, never the other one's.
    raw.open(&data::open_spec("theirs", &ch, Durability::Ack));
    raw.timesteps(&ch, 0..5);
    raw.flush_until(5);
    raw.close(wshard_ingest_proto::Outcome::Completed, 5);

    data::push_steps(&mut w, &ch, 60).unwrap();
    let summary = w.close(Outcome::Completed).unwrap();
    assert_eq!(summary.timesteps, 100);
    let st = check_episode(&d.data_dir(), "mine", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 100));
    let st = check_episode(&d.data_dir(), "theirs", &ch).unwrap();
    assert_eq!((st.status.as_str(), st.timesteps), ("complete", 5));
}
