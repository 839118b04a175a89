//! The robot's uploader (`[publish]`, docs/PUBLISH.md "The robot's uploader"): a durable
//! queue of finished episodes sent to an S3-compatible store and appended to a dataset.
//! Below `server` and `runtime`: it calls `fsio`, `journal` (the framing and its scan, for
//! the queue log), `wshard_storage::layout` and the publish crate (its blob sender,
//! `Publisher::append`); `runtime::context` holds its [`UploadShared`] for the control
//! socket.
//!
//! One owner, [`Uploader`] (`uploader`), its impl whole; everything else is below it and
//! never calls it:
//! - [`handoff`]: the finisher's hand-off of each finalized episode (the upload thread
//!   wakes on it; the data directory is scanned at startup and by a slow safety rescan).
//! - [`requests`]: what operators ask of the uploader (`wshard upload retry|drop`), taken
//!   by the upload thread at its next step.
//! - [`thread`]: the upload thread (`SCHED_IDLE`: [`priority`]; waits: `pace`), passes of
//!   the [`Uploader`] one after the other.
//! - [`queue`]: the durable queue, [`queue_log`] (framing, sync, compaction) and [`state`]
//!   (the queue replayed) kept in step; [`record`]: the log's records.
//! - `queue_hooks`: the queue's side of the publish crate's blob sender (journal the
//!   upload id and each part's ETag, pace, show progress).
//! - [`evict`]: retention and the quota, as functions over the data directory.
//! - [`settings`]: what it takes from the config (a leaf). [`error`]: why a pass stopped.
//! - [`view`]: what status, episodes and metrics show.

pub mod error;
pub mod evict;
pub mod handoff;
mod pace;
pub mod priority;
pub mod protected;
pub mod queue;
mod queue_hooks;
pub mod queue_log;
pub mod quota;
pub mod record;
pub mod requests;
pub mod settings;
pub mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_restart;
pub mod thread;
mod uploader;
pub mod view;

pub use error::CycleError;
pub use evict::EVICTING_DIR;
pub use handoff::Handoff;
pub use queue_log::{QueueLog, QueueLogError};
pub use settings::{EvictPolicy, UploaderSettings, UPLOAD_DIR};
pub use thread::{spawn, UploadHandle};
pub use uploader::Uploader;
pub use view::{UploadShared, UploaderState};
