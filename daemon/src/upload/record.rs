//! The records of the upload queue's log (`.upload/queue.log`): JSON bodies, one per
//! journal record (CRC32C framing of `journal::format`). Each is synced before the step it
//! records is relied on (docs/DURABILITY.md, "The upload queue").

use serde::{Deserialize, Serialize};

/// One file of an enqueued episode: its path relative to the episode directory, SHA-256
/// (hex) and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedFile {
    pub rel: String,
    pub sha256: String,
    pub size: u64,
}

/// One record of the queue log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Record {
    /// A finished episode entered the queue with these files (hashed then).
    Enqueue {
        episode: String,
        /// `complete`, `interrupted` or `recovered`.
        status: String,
        files: Vec<QueuedFile>,
    },
    /// A multipart upload of blob `sha256` was created at `key`: its id, to resume it.
    /// A later `mpu` for the same blob replaces it (the store lost the first).
    Mpu {
        sha256: String,
        key: String,
        upload_id: String,
        part_size: u64,
    },
    /// Part `idx` (0-based) of the blob's current multipart upload is stored: never sent
    /// again.
    Part {
        sha256: String,
        idx: usize,
        e_tag: String,
    },
    /// An attempt at the blob's multipart upload `upload_id` failed on a part or the
    /// completion with the store answering (a 5xx, an error reply, the upload lost again):
    /// `failures` such attempts in a row now. A stored part resets the count.
    MpuFailed {
        sha256: String,
        upload_id: String,
        failures: u32,
    },
    /// The blob's multipart upload `upload_id` is given up (it failed
    /// `publish.multipart_restart_after` times in a row): the next attempt starts a new
    /// upload, from part 0.
    MpuRestart { sha256: String, upload_id: String },
    /// The blob is on the store and verified (size and streamed SHA-256).
    Blob { sha256: String },
    /// Every blob of the episode is verified on the store.
    Uploaded { episode: String },
    /// The episode is in dataset `dataset` at version `version` (its `latest.json` moved).
    Published {
        episode: String,
        dataset: String,
        version: String,
    },
    /// An operator dropped the episode from the queue (`wshard upload drop`): it is never
    /// sent, published or evicted by the uploader; its files stay where they are.
    Dropped { episode: String },
    /// Eviction started: the directory is being moved to `.upload/evicting/<episode>`.
    Evicting { episode: String },
    /// The local copy is gone (the episode is remote only).
    Evicted { episode: String },
}

impl Record {
    /// The JSON body.
    ///
    /// # Errors
    /// Never for these types; kept typed for the caller.
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// Parse a body.
    ///
    /// # Errors
    /// Not a record this daemon writes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}
