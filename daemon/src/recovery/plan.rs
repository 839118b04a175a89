//! Dry runs: [`RecoveryMode`] says whether recovery changes files, and every step that
//! would change one is recorded as an [`Action`] either way, so `wshard recover` can show
//! what it would do (or what it did) with exactly the daemon's decisions.

use std::path::PathBuf;

use serde_json::{json, Value};

/// Whether recovery changes anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Remove, quarantine, publish and commit: what the daemon does at start.
    #[default]
    Apply,
    /// Decide everything exactly as [`RecoveryMode::Apply`] would, but only record each
    /// change as an [`Action`]: no file is created, written, moved or removed.
    DryRun,
}

impl RecoveryMode {
    /// True when files are changed.
    #[must_use]
    pub(crate) fn applies(self) -> bool {
        self == Self::Apply
    }
}

/// One change recovery made (or, in a dry run, would make), in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A file whose content exists elsewhere is removed.
    Remove { path: PathBuf },
    /// A file that may hold data is moved into the quarantine directory, with why it
    /// could not be removed.
    Quarantine {
        from: PathBuf,
        to: PathBuf,
        reason: String,
    },
    /// A finalized chunk file the manifest did not list is verified and listed.
    AdoptChunk { chunk_index: u64, path: PathBuf },
    /// A journal segment's timesteps become a published chunk file.
    PublishChunk {
        chunk_index: u64,
        journal: PathBuf,
        chunk: PathBuf,
        first_timestep: u64,
        timesteps: u64,
    },
    /// A listed chunk failed verification and is published again from its journal
    /// segment, which holds exactly its timesteps (the bad file is quarantined first).
    RebuildChunk {
        chunk_index: u64,
        journal: PathBuf,
        chunk: PathBuf,
        timesteps: u64,
        reason: String,
    },
    /// The manifest is replaced atomically with this status.
    CommitManifest { path: PathBuf, status: String },
    /// A multi-stream episode's index is replaced atomically with this status.
    CommitIndex { path: PathBuf, status: String },
    /// A multi-stream episode's events file is cut after its last complete line (a torn
    /// line was never acknowledged).
    CutEventsTail {
        path: PathBuf,
        from_len: u64,
        to_len: u64,
    },
    /// A stream folder the index did not list is listed (never deleted).
    AdoptStream { stream: String, path: PathBuf },
    /// A stream the index listed `recording` has no folder: it never recorded anything
    /// (the folder is created before a stream is acknowledged) and leaves the index.
    ForgetStream { stream: String, reason: String },
}

impl Action {
    /// One line for people, e.g. `remove ep/journal_0000.wal`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Remove { path } => format!("remove {}", path.display()),
            Self::Quarantine { from, to, reason } => {
                format!(
                    "quarantine {} -> {} ({reason})",
                    from.display(),
                    to.display()
                )
            }
            Self::AdoptChunk { chunk_index, path } => {
                format!("adopt chunk {chunk_index} {}", path.display())
            }
            Self::PublishChunk {
                chunk_index,
                journal,
                chunk,
                first_timestep,
                timesteps,
            } => format!(
                "publish chunk {chunk_index} ({timesteps} timesteps from {first_timestep}) from {} as {}",
                journal.display(),
                chunk.display()
            ),
            Self::RebuildChunk {
                chunk_index,
                journal,
                chunk,
                timesteps,
                reason,
            } => format!(
                "rebuild chunk {chunk_index} ({timesteps} timesteps) from {} as {}: {reason}",
                journal.display(),
                chunk.display()
            ),
            Self::CommitManifest { path, status } => {
                format!("commit manifest {} (status {status})", path.display())
            }
            Self::CommitIndex { path, status } => {
                format!("commit index {} (status {status})", path.display())
            }
            Self::CutEventsTail {
                path,
                from_len,
                to_len,
            } => format!(
                "cut the torn tail of {} ({from_len} -> {to_len} bytes)",
                path.display()
            ),
            Self::AdoptStream { stream, path } => {
                format!("adopt stream `{stream}` {}", path.display())
            }
            Self::ForgetStream { stream, reason } => {
                format!("forget stream `{stream}`: {reason}")
            }
        }
    }

    /// A JSON object with an `action` key (`remove`, `quarantine`, `adopt_chunk`,
    /// `publish_chunk`, `rebuild_chunk`, `commit_manifest`, `commit_index`,
    /// `cut_events_tail`, `adopt_stream`, `forget_stream`) and the paths, numbers and
    /// reasons above.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let p = |p: &PathBuf| p.display().to_string();
        match self {
            Self::Remove { path } => json!({"action": "remove", "path": p(path)}),
            Self::Quarantine { from, to, reason } => {
                json!({"action": "quarantine", "from": p(from), "to": p(to), "reason": reason})
            }
            Self::AdoptChunk { chunk_index, path } => {
                json!({"action": "adopt_chunk", "chunk_index": chunk_index, "path": p(path)})
            }
            Self::PublishChunk {
                chunk_index,
                journal,
                chunk,
                first_timestep,
                timesteps,
            } => json!({
                "action": "publish_chunk",
                "chunk_index": chunk_index,
                "journal": p(journal),
                "chunk": p(chunk),
                "first_timestep": first_timestep,
                "timesteps": timesteps,
            }),
            Self::RebuildChunk {
                chunk_index,
                journal,
                chunk,
                timesteps,
                reason,
            } => json!({
                "action": "rebuild_chunk",
                "chunk_index": chunk_index,
                "journal": p(journal),
                "chunk": p(chunk),
                "timesteps": timesteps,
                "reason": reason,
            }),
            Self::CommitManifest { path, status } => {
                json!({"action": "commit_manifest", "path": p(path), "status": status})
            }
            Self::CommitIndex { path, status } => {
                json!({"action": "commit_index", "path": p(path), "status": status})
            }
            Self::CutEventsTail {
                path,
                from_len,
                to_len,
            } => json!({
                "action": "cut_events_tail",
                "path": p(path),
                "from_len": from_len,
                "to_len": to_len,
            }),
            Self::AdoptStream { stream, path } => {
                json!({"action": "adopt_stream", "stream": stream, "path": p(path)})
            }
            Self::ForgetStream { stream, reason } => {
                json!({"action": "forget_stream", "stream": stream, "reason": reason})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_actions_describe_themselves() {
        let a = Action::Quarantine {
            from: "d/ep/x.partial".into(),
            to: "d/quarantine/ep/x.partial".into(),
            reason: "no journal to re-derive it from".into(),
        };
        assert_eq!(
            a.describe(),
            "quarantine d/ep/x.partial -> d/quarantine/ep/x.partial (no journal to re-derive it from)"
        );
        assert_eq!(a.to_json()["action"], "quarantine");
        assert!(!RecoveryMode::DryRun.applies());
        assert!(RecoveryMode::default().applies());
    }
}
