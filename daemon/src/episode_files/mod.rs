//! The episode-level files of an episode directory, beside its chunks and manifest: the
//! index of a multi-stream episode, the events log and the operator's annotations (the
//! models are the format crate's `wshard::episode_dir`). Every durable step goes through
//! [`crate::fsio::Fs`].
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
pub use index::{commit_index, index_path, read_index, IndexReadError};

/// True for `name` being the temporary file of an episode-level file of episode `id` (the
/// index, the annotations): written by an atomic replace, it is not a manifest's
/// temporary file.
#[must_use]
pub fn is_episode_file_tmp(name: &str, id: &str) -> bool {
    use wshard::episode_dir::names::{annotations_file_name, index_file_name};
    [index_file_name(id), annotations_file_name(id)]
        .iter()
        .any(|f| name.strip_suffix(".tmp") == Some(f.as_str()))
}
