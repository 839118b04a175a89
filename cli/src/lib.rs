//! The operator CLI `wshard`: inspect, verify, recover and read what the daemon wrote.
//! It calls the daemon library `wshard_recorder` (`control::protocol` for the requests,
//! `runtime::lock`, `recovery`, `journal`, `episode::layout`, `fsio`) and never the reverse.
//!
//! - [`inspect`]: `wshard inspect FILE`, gathering what a shard holds into an [`inspect::Inspection`].
//! - [`inspect_dir`]: `wshard inspect DIR` on an episode directory: its streams and events.
//! - [`peek`]: `wshard inspect --peek FILE.wal`, the records and corrupt regions of a journal.
//! - [`episode_view`]: the dtype and shape of each block of a WShard episode, from its meta blocks.
//! - [`verify`]: `wshard verify PATH...`, walking files and directories and following manifests.
//! - [`check`]: checking one file (every block's CRC, episode and manifest structure).
//! - [`deep`]: `verify --deep` on an episode: every block's length against its meta.
//! - [`report`]: the result of checking one file and how it is printed.
//! - [`recover`]: `wshard recover DIR`, offline recovery with the daemon's code (dry run by default).
//! - [`cat`]: `wshard cat FILE BLOCK`, one block's bytes as raw, `.npy` or CSV.
//! - [`aligned`]: `wshard cat --aligned DIR`, an episode's channels aligned on one clock.
//! - [`csv`]: a tensor block as CSV rows (the `.npy` header is `wshard_export::npy`).
//! - [`describe`]: display names for roles, header flags and codecs.
//! - [`table`]: a plain-text column table.
//! - [`control`]: `wshard status`, `episodes`, `close`, `metrics` against a running daemon;
//!   [`control_client`] finds its control socket and sends one request,
//!   [`control_connect`] says why connecting failed (no daemon, stale socket, refused user),
//!   [`control_render`] prints the replies as text.
//! - [`bridge`]: `wshard bridge start|stop|abort|annotate|status` against a running ROS
//!   bridge; [`bridge_client`] sends its one-line JSON requests.
//! - [`publish`]: `wshard publish --dataset WS/NAME`, finished episodes to an object store
//!   as a dataset version; [`doctor`]: `wshard doctor`, the store setup checked;
//!   [`store_args`]: their shared store flags and variables; [`query`]: `wshard query
//!   "SQL"`, DuckDB on the catalogs in place on the store.
//! - [`remote`]: `wshard inspect|cat s3://...`, read by range requests and through the blob
//!   cache; [`cache_cmd`]: `wshard cache stats|gc`; [`dataset`]: `wshard dataset
//!   list|show|pull`.
//! - [`import`]: `wshard import ...`: the native converters or the ROS bag importer
//!   (`wshard_ros.bag_import`); [`import_formats`]: `wshard import npz|minari|d4rl`.
//! - [`export`]: `wshard export webdataset|lerobot|mcap`, one file per format over the
//!   `wshard-export` library.
//! - [`closed_pipe`]: stdout for every verb; a reader that closed the pipe ends the
//!   command quietly, as SIGPIPE ends Unix tools.
//! - [`Status`]: the exit status shared by `inspect`, `verify` and `cat` (`recover` has its own).

pub mod aligned;
pub mod annotate;
pub mod bridge;
pub mod bridge_client;
pub mod cache_cmd;
pub mod cat;
pub mod check;
pub mod closed_pipe;
pub mod control;
pub mod control_client;
pub mod control_connect;
pub mod control_render;
pub mod csv;
pub mod dataset;
pub mod deep;
pub mod describe;
pub mod doctor;
pub mod episode_view;
pub mod export;
pub mod import;
pub mod import_formats;
pub mod inspect;
pub mod inspect_dir;
pub mod peek;
pub mod publish;
pub mod publish_append;
pub mod query;
pub mod recover;
pub mod remote;
pub mod report;
pub mod store_args;
pub mod table;
pub mod verify;

/// The outcome of a verb, ordered from best to worst; the process exits with [`Status::code`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Everything checked is good: exit 0.
    #[default]
    Ok,
    /// Some file is corrupt (bad CRC, truncated, inconsistent structure): exit 1.
    Corrupt,
    /// A usage or I/O error (file not found, permission denied, output failed): exit 2.
    /// Wins over [`Status::Corrupt`] when both happen.
    Error,
}

impl Status {
    /// The process exit code: 0, 1 or 2.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Corrupt => 1,
            Self::Error => 2,
        }
    }

    /// The worse of two outcomes.
    #[must_use]
    pub fn worst(self, other: Self) -> Self {
        self.max(other)
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn io_errors_win_over_corruption() {
        assert_eq!(Status::Ok.worst(Status::Corrupt), Status::Corrupt);
        assert_eq!(Status::Corrupt.worst(Status::Error), Status::Error);
        assert_eq!(Status::Error.worst(Status::Ok).code(), 2);
    }
}
