//! The operator CLI against a test daemon's control socket: `wshard ARGS --control SOCKET`
//! and its `--json` reply, shared by the control tests.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::{bins, Daemon};

/// The daemon's control socket.
#[must_use]
pub fn control_socket(d: &Daemon) -> PathBuf {
    d.root().join("wshardd-control.sock")
}

/// Run `wshard ARGS --control <socket>` (no `WSHARDD_CONFIG` from the environment).
///
/// # Panics
/// When `wshard` cannot be run.
#[must_use]
pub fn wshard(d: &Daemon, args: &[&str]) -> Output {
    Command::new(bins::wshard())
        .args(args)
        .arg("--control")
        .arg(control_socket(d))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("cannot run wshard")
}

/// Its stdout and stderr, for assertion messages.
#[must_use]
pub fn text(o: &Output) -> String {
    crate::check::output_text(o)
}

/// `wshard ARGS --json`, which must succeed: its `result`.
///
/// # Panics
/// When it exits other than 0, prints no JSON, or the reply is not `ok`.
pub fn json_ok(d: &Daemon, args: &[&str]) -> Value {
    let o = wshard(d, args);
    assert_eq!(o.status.code(), Some(0), "wshard {args:?}: {}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("wshard {args:?}: not JSON ({e}): {}", text(&o)));
    assert_eq!(v["ok"], Value::Bool(true), "{v}");
    v["result"].clone()
}

/// `wshard ARGS --json`, which must be refused with exit 1: the reply's `error`.
///
/// # Panics
/// When it exits other than 1, prints no JSON, or the reply is `ok`.
pub fn json_err(d: &Daemon, args: &[&str]) -> Value {
    let o = wshard(d, args);
    assert_eq!(o.status.code(), Some(1), "wshard {args:?}: {}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("wshard {args:?}: not JSON ({e}): {}", text(&o)));
    assert_eq!(v["ok"], Value::Bool(false), "{v}");
    v["error"].clone()
}
