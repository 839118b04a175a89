//! The robot's uploader (`[publish]`, docs/PUBLISH.md "The robot's uploader"): a durable
//! queue of finished episodes sent to an S3-compatible store and appended to a dataset.
//! A leaf below `server`: it calls `fsio`, `journal::format` and `episode::layout`, and
//! the publish crate; `runtime::context` holds its [`UploadShared`] for the control socket.
//!
//! - [`record`]: the queue log's records. [`queue_log`]: the log (framing, sync,
//!   compaction). [`state`]: the queue replayed.
//! - [`settings`]: what it takes from the config.
//! - `uploader`: the thread (scan, enqueue, upload, verify, append); `blob`: one blob
//!   (HEAD-skip, put, resumable multipart); `pace`: bandwidth and backoff.
//! - `evict`: retention and quota. [`priority`]: the thread under `SCHED_IDLE`.
//! - [`view`]: what status, episodes and metrics show.

mod blob;
pub mod evict;
mod pace;
pub mod priority;
pub mod queue_log;
pub mod record;
pub mod settings;
pub mod state;
#[cfg(test)]
mod tests;
mod uploader;
pub mod view;

pub use evict::{EvictPolicy, EVICTING_DIR};
pub use queue_log::{QueueLog, QueueLogError, UPLOAD_DIR};
pub use settings::UploaderSettings;
pub use uploader::{spawn, CycleError, UploadHandle, Uploader};
pub use view::{UploadShared, UploaderState};
