//! What recovery did to one episode, written into its manifest under `recovery`.

use serde_json::{json, Value};

use super::plan::Action;

/// A region of a file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discarded {
    pub file: String,
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// The outcome of recovering one episode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub episode_id: String,
    pub previous_status: Option<String>,
    /// Timesteps rebuilt from journals.
    pub timesteps_recovered: u64,
    /// Chunks published by recovery (from journals, or adopted finalized files).
    pub chunks_recovered: u64,
    pub discarded: Vec<Discarded>,
    /// Files moved into the quarantine directory (never deleted: they may hold data).
    pub quarantined: Vec<String>,
    /// Files removed because their content exists elsewhere (a trimmed journal, a partial
    /// re-derived from its journal, a temporary manifest).
    pub removed: Vec<String>,
    /// Every change, in order: done (`Apply`) or planned (`DryRun`). Not written into the
    /// manifest.
    pub actions: Vec<Action>,
}

impl RecoveryReport {
    /// Bytes discarded in total.
    #[must_use]
    pub fn bytes_discarded(&self) -> u64 {
        self.discarded.iter().map(|d| d.len).sum()
    }

    /// True when something may have been lost (corrupt regions or quarantined files).
    #[must_use]
    pub fn lost_data(&self) -> bool {
        !self.discarded.is_empty() || !self.quarantined.is_empty()
    }

    /// The JSON written into the manifest (without [`RecoveryReport::actions`]).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "previous_status": self.previous_status,
            "timesteps_recovered": self.timesteps_recovered,
            "chunks_recovered": self.chunks_recovered,
            "bytes_discarded": self.bytes_discarded(),
            "discarded": self.discarded.iter().map(|d| json!({"file": d.file, "offset": d.offset, "len": d.len, "reason": d.reason})).collect::<Vec<_>>(),
            "quarantined": self.quarantined,
            "removed": self.removed,
        })
    }

    /// One log line.
    #[must_use]
    pub fn summary(&self) -> String {
        format!(
            "episode {}: was {}, recovered {} timesteps in {} chunks, discarded {} bytes in {} regions, quarantined {} files",
            self.episode_id,
            self.previous_status.as_deref().unwrap_or("without manifest"),
            self.timesteps_recovered,
            self.chunks_recovered,
            self.bytes_discarded(),
            self.discarded.len(),
            self.quarantined.len()
        )
    }
}
