//! The tables for running wshardd as a service: the operator's control socket, who may
//! connect, and the disk watermarks.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::{GIB, MIB};

/// `[control]`: the operator's control socket (`wshard status`, `wshard episodes`,
/// `wshard close`, Prometheus metrics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlConfig {
    /// Control socket path. Default `wshardd-control.sock`. Relative: like `data_dir`.
    pub path: PathBuf,
    /// Permission bits of the control socket file, an octal string. Default `"0660"`.
    #[serde(with = "crate::octal")]
    pub mode: u32,
    /// Uids allowed the mutating verbs (`close`, `stop`, `abort`, `keep`, `annotate`)
    /// besides root and the daemon's own uid.
    /// Default `[]`.
    pub admin_uids: Vec<u32>,
    /// Gids allowed the mutating verbs besides the daemon's own gid. Default `[]`.
    pub admin_gids: Vec<u32>,
    /// `host:port` of a TCP listener serving the Prometheus text exposition at `/metrics`;
    /// must be a loopback address. Default `""` (off).
    pub metrics_listen: String,
}

impl Default for ControlConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("wshardd-control.sock"),
            mode: 0o660,
            admin_uids: Vec::new(),
            admin_gids: Vec::new(),
            metrics_listen: String::new(),
        }
    }
}

/// `[access]`: who may use the ingest socket.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessConfig {
    /// Group that owns the ingest and control socket files: a group name or a numeric gid.
    /// Default `""` (the daemon's group).
    pub socket_group: String,
    /// Uids allowed on the ingest socket (checked with `SO_PEERCRED`) besides root and the
    /// daemon's own uid. When both lists are empty, anyone the socket's file mode lets in
    /// may connect. Default `[]`.
    pub allow_uids: Vec<u32>,
    /// Gids allowed on the ingest socket (the peer's primary gid). Default `[]`.
    pub allow_gids: Vec<u32>,
}

/// `[disk]`: free-space watermarks of the data directory's filesystem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiskConfig {
    /// Below this many free bytes new episodes are refused (`DISK_LOW`) and a warning is
    /// logged. Default 1 GiB.
    pub low_watermark_free_bytes: u64,
    /// Below this many free bytes every open episode is finalized `interrupted` (reason
    /// `disk`). Less than the low watermark. Default 256 MiB.
    pub high_watermark_free_bytes: u64,
    /// How often free space is measured, in milliseconds. 10..=10000, default 200.
    pub check_interval_ms: u64,
    /// Preallocate chunk files (`fallocate`) where the filesystem supports it. Default `true`.
    pub preallocate: bool,
}

impl Default for DiskConfig {
    fn default() -> Self {
        Self {
            low_watermark_free_bytes: GIB,
            high_watermark_free_bytes: 256 * MIB,
            check_interval_ms: 200,
            preallocate: true,
        }
    }
}

impl DiskConfig {
    /// `check_interval_ms` as a [`Duration`].
    #[must_use]
    pub fn check_interval(&self) -> Duration {
        Duration::from_millis(self.check_interval_ms)
    }
}
