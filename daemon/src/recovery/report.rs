//! What recovery did to one episode, written into its manifest under `recovery`.
//!
//! The report is cumulative: every manifest recovery commits carries the report so far, and
//! a recovery that finds the manifest `recovering` (an earlier run was cut) starts from the
//! report it holds ([`RecoveryReport::resume`]), so the final one adds up over every run.

use serde_json::{json, Value};

use super::plan::Action;

/// Manifest key of the report.
pub(crate) const MANIFEST_KEY: &str = "recovery";

/// A region of a file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discarded {
    pub file: String,
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

impl Discarded {
    fn to_json(&self) -> Value {
        json!({"file": self.file, "offset": self.offset, "len": self.len, "reason": self.reason})
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            file: v.get("file")?.as_str()?.to_owned(),
            offset: v.get("offset")?.as_u64()?,
            len: v.get("len")?.as_u64()?,
            reason: v.get("reason")?.as_str()?.to_owned(),
        })
    }
}

/// The outcome of recovering one episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryReport {
    pub episode_id: String,
    /// The status before recovery began (before its first run, when it was cut and run
    /// again).
    pub previous_status: Option<String>,
    /// Recovery runs this report adds up: 1, plus one for every run that was cut before it
    /// finished and whose report was carried forward.
    pub runs: u64,
    /// Timesteps rebuilt from journals (into new chunks, or into listed chunks that failed
    /// verification).
    pub timesteps_recovered: u64,
    /// Chunks published by recovery (from journals, adopted finalized files, or rebuilt).
    pub chunks_recovered: u64,
    /// Listed chunks that failed verification and were rebuilt from their journal (also
    /// counted in `chunks_recovered`).
    pub chunks_rebuilt: u64,
    pub discarded: Vec<Discarded>,
    /// Files moved into the quarantine directory (never deleted: they may hold data).
    pub quarantined: Vec<String>,
    /// Those of [`RecoveryReport::quarantined`] whose content is whole in the episode
    /// again: a listed chunk that failed verification and was rebuilt from its journal.
    /// Kept for inspection; no data was lost with them.
    pub quarantined_rebuilt: Vec<String>,
    /// Files removed because their content exists elsewhere (a trimmed journal, a partial
    /// re-derived from its journal, a temporary manifest).
    pub removed: Vec<String>,
    /// Every change of this run, in order: done (`Apply`) or planned (`DryRun`). Not
    /// written into the manifest.
    pub actions: Vec<Action>,
}

impl Default for RecoveryReport {
    fn default() -> Self {
        Self {
            episode_id: String::new(),
            previous_status: None,
            runs: 1,
            timesteps_recovered: 0,
            chunks_recovered: 0,
            chunks_rebuilt: 0,
            discarded: Vec::new(),
            quarantined: Vec::new(),
            quarantined_rebuilt: Vec::new(),
            removed: Vec::new(),
            actions: Vec::new(),
        }
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

impl RecoveryReport {
    /// A fresh report for `episode_id`, whose manifest had `previous_status`.
    #[must_use]
    pub(crate) fn new(episode_id: &str, previous_status: Option<String>) -> Self {
        Self {
            episode_id: episode_id.to_owned(),
            previous_status,
            ..Self::default()
        }
    }

    /// Go on from the report an earlier, cut run committed (`earlier`, as written into the
    /// manifest): its counts and lists are kept, and this run adds to them. `None` when
    /// `earlier` is not such a report.
    #[must_use]
    pub(crate) fn resume(episode_id: &str, earlier: &Value) -> Option<Self> {
        let n = |k: &str| earlier.get(k).and_then(Value::as_u64);
        let previous_status = match earlier.get("previous_status")? {
            Value::Null => None,
            v => Some(v.as_str()?.to_owned()),
        };
        Some(Self {
            episode_id: episode_id.to_owned(),
            previous_status,
            runs: n("runs").unwrap_or(1).saturating_add(1),
            timesteps_recovered: n("timesteps_recovered")?,
            chunks_recovered: n("chunks_recovered")?,
            chunks_rebuilt: n("chunks_rebuilt").unwrap_or(0),
            discarded: earlier
                .get("discarded")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Discarded::from_json).collect())
                .unwrap_or_default(),
            quarantined: strings(earlier.get("quarantined")),
            quarantined_rebuilt: strings(earlier.get("quarantined_rebuilt")),
            removed: strings(earlier.get("removed")),
            actions: Vec::new(),
        })
    }

    /// Report a region as discarded (once: a region an earlier run already reported is not
    /// counted again).
    pub(crate) fn discard(&mut self, d: Discarded) {
        push_unique(&mut self.discarded, d);
    }

    /// Note a file moved into quarantine (once).
    pub(crate) fn note_quarantined(&mut self, path: String) {
        push_unique(&mut self.quarantined, path);
    }

    /// Note a file moved into quarantine whose content recovery rebuilt (once).
    pub(crate) fn note_quarantined_rebuilt(&mut self, path: String) {
        push_unique(&mut self.quarantined_rebuilt, path);
    }

    /// Note a removed file (once).
    pub(crate) fn note_removed(&mut self, name: String) {
        push_unique(&mut self.removed, name);
    }

    /// Bytes discarded in total.
    #[must_use]
    pub fn bytes_discarded(&self) -> u64 {
        self.discarded.iter().map(|d| d.len).sum()
    }

    /// True when something may have been lost: corrupt regions, or quarantined files that
    /// may hold data found nowhere else (not a chunk rebuilt whole from its journal).
    #[must_use]
    pub fn lost_data(&self) -> bool {
        !self.discarded.is_empty()
            || self
                .quarantined
                .iter()
                .any(|q| !self.quarantined_rebuilt.contains(q))
    }

    /// The JSON written into the manifest (without [`RecoveryReport::actions`]).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "previous_status": self.previous_status,
            "runs": self.runs,
            "timesteps_recovered": self.timesteps_recovered,
            "chunks_recovered": self.chunks_recovered,
            "chunks_rebuilt": self.chunks_rebuilt,
            "bytes_discarded": self.bytes_discarded(),
            "discarded": self.discarded.iter().map(Discarded::to_json).collect::<Vec<_>>(),
            "quarantined": self.quarantined,
            "quarantined_rebuilt": self.quarantined_rebuilt,
            "removed": self.removed,
        })
    }

    /// One log line.
    #[must_use]
    pub fn summary(&self) -> String {
        let mut s = format!(
            "episode {}: was {}, recovered {} timesteps in {} chunks",
            self.episode_id,
            self.previous_status
                .as_deref()
                .unwrap_or("without manifest"),
            self.timesteps_recovered,
            self.chunks_recovered,
        );
        if self.chunks_rebuilt > 0 {
            s.push_str(&format!(
                " ({} rebuilt from the journal)",
                self.chunks_rebuilt
            ));
        }
        s.push_str(&format!(
            ", discarded {} bytes in {} regions, quarantined {} files",
            self.bytes_discarded(),
            self.discarded.len(),
            self.quarantined.len()
        ));
        if self.runs > 1 {
            s.push_str(&format!(
                " (over {} runs: earlier ones were cut)",
                self.runs
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn recovery_report_resumes_from_its_json() {
        let mut r = RecoveryReport::new("ep", Some("recording".into()));
        r.timesteps_recovered = 2500;
        r.chunks_recovered = 3;
        r.chunks_rebuilt = 1;
        r.discard(Discarded {
            file: "journal_0001.wal".into(),
            offset: 7,
            len: 90,
            reason: "torn".into(),
        });
        r.note_quarantined("/d/quarantine/ep/journal_0001.wal".into());
        r.note_quarantined("/d/quarantine/ep/ep_chunk_0000.wshard".into());
        r.note_quarantined_rebuilt("/d/quarantine/ep/ep_chunk_0000.wshard".into());
        r.note_removed("journal_0000.wal".into());
        let mut again = RecoveryReport::resume("ep", &r.to_json()).unwrap();
        assert_eq!(again.runs, 2);
        let RecoveryReport { runs, .. } = again.clone();
        assert_eq!(
            again,
            RecoveryReport {
                runs,
                actions: Vec::new(),
                ..r.clone()
            }
        );
        // What the earlier run reported is not counted twice.
        again.discard(r.discarded[0].clone());
        again.note_quarantined(r.quarantined[0].clone());
        again.note_removed(r.removed[0].clone());
        assert_eq!(again.bytes_discarded(), 90);
        assert_eq!((again.quarantined.len(), again.removed.len()), (2, 1));
        assert_eq!(again.quarantined_rebuilt.len(), 1);
        assert!(
            again.summary().contains("over 2 runs"),
            "{}",
            again.summary()
        );
        assert_eq!(RecoveryReport::resume("ep", &json!({})), None);
        let none = RecoveryReport::resume(
            "ep",
            &json!({"previous_status": null, "timesteps_recovered": 1, "chunks_recovered": 1}),
        )
        .unwrap();
        assert_eq!((none.previous_status, none.runs), (None, 2));

        // A chunk rebuilt whole from its journal is kept in quarantine, but nothing is lost.
        let mut rebuilt = RecoveryReport::new("ep", Some("recording".into()));
        rebuilt.note_quarantined("/d/quarantine/ep/ep_chunk_0000.wshard".into());
        rebuilt.note_quarantined_rebuilt("/d/quarantine/ep/ep_chunk_0000.wshard".into());
        assert!(!rebuilt.lost_data());
        rebuilt.note_quarantined("/d/quarantine/ep/ep_chunk_0001.wshard.partial".into());
        assert!(rebuilt.lost_data());
    }
}
