//! The episode-level files of an episode directory, beside its chunks and manifest: the
//! index of a multi-stream episode, the events log and the operator's annotations (the
//! models are the format crate's `wshard::episode_dir`). Every durable step goes through
//! [`wshard_storage::fsio::Fs`].
//! It may call `episode`, `fsio` and `error` only.
//!
//! - [`index`]: `{EP}_index.json`, replaced atomically like the manifest.
//! - [`events`]: `{EP}_events.jsonl`, appended and fdatasync'ed before the acknowledgement;
//!   a torn tail is cut at recovery.
//! - [`annotations`]: `{EP}_annotations.json`, replaced atomically with one more entry.

pub mod annotations;
pub mod events;
pub mod index;

pub use annotations::{annotate, read_annotations, AnnotateError, NewAnnotation};
pub use events::{cut_torn_tail, EventError, EventsLog, NewEvent, NewEventData};
pub use index::{commit_index, index_path, is_flight_window, read_index, IndexReadError};
