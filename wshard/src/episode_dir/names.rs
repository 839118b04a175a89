//! File and folder names inside an episode directory, and the stream-name check (its rule is
//! [`super::name_rule`]'s).
//!
//! ```text
//! {EP}/
//!   {EP}_index.json                multi-stream episodes only
//!   {EP}_events.jsonl              producer events (any episode)
//!   {EP}_annotations.json          operator annotations (any episode)
//!   streams/{STREAM}/              one folder per stream (multi-stream episodes only)
//! ```

use std::path::{Path, PathBuf};

use super::name_rule::{check_name, NameRuleError};

/// Folder of a multi-stream episode that holds one folder per stream.
pub const STREAMS_DIR: &str = "streams";
/// Longest stream name, in bytes.
pub const MAX_STREAM_NAME_BYTES: usize = 64;
/// The name a reader gives the one stream of a single-stream episode.
pub const SINGLE_STREAM_NAME: &str = "main";

/// What ends the name of a multi-stream episode's index file.
pub const INDEX_FILE_SUFFIX: &str = "_index.json";

/// `{EP}_index.json`.
#[must_use]
pub fn index_file_name(episode_id: &str) -> String {
    format!("{episode_id}{INDEX_FILE_SUFFIX}")
}

/// `{EP}_events.jsonl`.
#[must_use]
pub fn events_file_name(episode_id: &str) -> String {
    format!("{episode_id}_events.jsonl")
}

/// `{EP}_annotations.json`.
#[must_use]
pub fn annotations_file_name(episode_id: &str) -> String {
    format!("{episode_id}_annotations.json")
}

/// `episode_dir/streams/STREAM` (the name must be valid).
#[must_use]
pub fn stream_dir(episode_dir: &Path, stream: &str) -> PathBuf {
    episode_dir.join(STREAMS_DIR).join(stream)
}

/// What is wrong with a stream name; every message names the stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamNameError {
    /// Empty or longer than [`MAX_STREAM_NAME_BYTES`].
    #[error("stream name {name:?} must be 1..={max} bytes, is {len}")]
    Length {
        name: String,
        max: usize,
        len: usize,
    },
    /// Starts with `.` (hidden files, `.` and `..`).
    #[error("stream name {name:?} must not start with `.`")]
    LeadingDot { name: String },
    /// Holds a character outside `[A-Za-z0-9._-]`.
    #[error("stream name {name:?} contains {found:?}: only A-Z a-z 0-9 . _ - are allowed")]
    BadChar { name: String, found: char },
}

/// Check a stream name: 1..=[`MAX_STREAM_NAME_BYTES`] bytes of `[A-Za-z0-9._-]`, not
/// starting with `.` (the rule of episode ids, [`check_name`]).
///
/// # Errors
/// A [`StreamNameError`] naming the stream and what is wrong with it.
pub fn validate_stream_name(name: &str) -> Result<(), StreamNameError> {
    let name_owned = || name.to_owned();
    check_name(name, MAX_STREAM_NAME_BYTES).map_err(|e| match e {
        NameRuleError::Length { len, max } => StreamNameError::Length {
            name: name_owned(),
            max,
            len,
        },
        NameRuleError::LeadingDot => StreamNameError::LeadingDot { name: name_owned() },
        NameRuleError::BadChar(found) => StreamNameError::BadChar {
            name: name_owned(),
            found,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_episode_files() {
        assert_eq!(index_file_name("ep1"), "ep1_index.json");
        assert_eq!(events_file_name("ep1"), "ep1_events.jsonl");
        assert_eq!(annotations_file_name("ep1"), "ep1_annotations.json");
        assert_eq!(
            stream_dir(Path::new("/d/ep1"), "joints"),
            Path::new("/d/ep1/streams/joints")
        );
    }

    #[test]
    fn names_stream_names_are_validated() {
        let long = "x".repeat(MAX_STREAM_NAME_BYTES + 1);
        for bad in [
            "",
            ".hidden",
            "..",
            "a/b",
            "a\0b",
            "é",
            "a b",
            long.as_str(),
        ] {
            let err = validate_stream_name(bad).err();
            assert!(err.is_some(), "{bad:?}");
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains("stream name"), "{text}");
        }
        let max = "x".repeat(MAX_STREAM_NAME_BYTES);
        for good in ["joints", "cam.left", "imu-0", "A_1", "main", max.as_str()] {
            assert_eq!(validate_stream_name(good), Ok(()), "{good:?}");
        }
    }
}
