//! The one rule that decides whether recovery may remove a journal segment, or must keep
//! it in quarantine: **a journal is removed only when everything intact in it is proven to
//! be in a listed chunk.** Concretely, [`journal_fate`] removes a segment only when
//!
//! 1. every record in it decodes (no problem above the framing),
//! 2. every complete record is covered: its timesteps were replayed into a chunk that is
//!    listed (or about to be, in the same step), and
//! 3. no fragment that verifies lies past the first damage ([`JournalScan::first_damage`]):
//!    whatever could not be read is a torn tail, not damage with intact bytes after it.
//!
//! Anything else is quarantined, byte for byte. The damaged bytes themselves cannot be
//! proven anywhere, but they are the tail of an append the crash cut (the file ends in
//! them), which is what every crash leaves; damage followed by intact bytes is not.
//!
//! [`JournalScan::first_damage`]: crate::journal::scan::JournalScan::first_damage

use crate::journal::segment::SegmentContents;

use super::replay::Stopped;

/// How much of a segment is in listed chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Coverage {
    /// Nothing is proven: its header is unreadable, it does not continue the episode, or
    /// its listed chunk is bad and it cannot rebuild it. The reason says which.
    Nothing(String),
    /// Every complete record that ends at or before this offset is covered; none after it.
    UpTo(u64),
}

/// What happens to a journal segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JournalFate {
    /// Everything intact in it is in a listed chunk: removed.
    Remove,
    /// It may hold data found nowhere else: moved to quarantine, for this reason.
    Quarantine(String),
}

impl JournalFate {
    /// True for [`JournalFate::Remove`].
    #[cfg(test)]
    #[must_use]
    pub(crate) fn removes(&self) -> bool {
        *self == Self::Remove
    }
}

/// Decide a segment's fate (the rule is in the module documentation).
#[must_use]
pub(crate) fn journal_fate(seg: &SegmentContents, coverage: &Coverage) -> JournalFate {
    let covered_end = match coverage {
        Coverage::Nothing(why) => return JournalFate::Quarantine(why.clone()),
        Coverage::UpTo(end) => *end,
    };
    if let Some((offset, why)) = seg.problems.first() {
        return JournalFate::Quarantine(format!(
            "the intact record at offset {offset} could not be used: {why}"
        ));
    }
    if let Some(r) = seg.scan.records.iter().find(|r| r.end > covered_end) {
        return JournalFate::Quarantine(format!(
            "the intact record at offset {} ({} bytes) is in no chunk",
            r.offset,
            r.end - r.offset
        ));
    }
    if let (true, Some(d)) = (seg.scan.intact_after_damage(), seg.scan.first_damage) {
        return JournalFate::Quarantine(format!(
            "intact bytes up to offset {} follow the damage at offset {d}",
            seg.scan.intact_end
        ));
    }
    JournalFate::Remove
}

/// The coverage of a segment replayed into a chunk: every record, or, when replay
/// stopped, the records before the first one it did not use in full (a STEPS record whose
/// timesteps were not all replayed, or a GAP record at or after the stop).
#[must_use]
pub(crate) fn replayed(seg: &SegmentContents, stopped: Option<&Stopped>) -> Coverage {
    let Some(st) = stopped else {
        return Coverage::UpTo(u64::MAX);
    };
    let spans = seg.spans.iter().enumerate().filter_map(|(i, s)| {
        let steps_end = seg
            .spans
            .get(i + 1)
            .map_or(seg.steps.len(), |next| next.steps_at);
        (steps_end > st.at).then_some(s.offset)
    });
    let gaps = seg
        .gaps
        .iter()
        .filter(|g| g.steps_at >= st.at)
        .map(|g| g.offset);
    Coverage::UpTo(spans.chain(gaps).min().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::journal::scan::{JournalRecord, JournalScan};
    use crate::journal::segment::{GapMark, StepsSpan};

    fn record(offset: u64, end: u64) -> JournalRecord {
        JournalRecord {
            offset,
            end,
            data: vec![2],
        }
    }

    fn seg(records: &[(u64, u64)]) -> SegmentContents {
        let records: Vec<JournalRecord> = records.iter().map(|&(o, e)| record(o, e)).collect();
        let end = records.last().map_or(0, |r| r.end);
        SegmentContents {
            scan: JournalScan {
                records,
                valid_end: end,
                intact_end: end,
                len: end,
                ..JournalScan::default()
            },
            ..SegmentContents::default()
        }
    }

    #[test]
    fn fate_removes_only_what_is_covered() {
        let all = Coverage::UpTo(u64::MAX);
        let clean = seg(&[(0, 100), (100, 200)]);
        assert_eq!(journal_fate(&clean, &all), JournalFate::Remove);
        // A torn tail: damage with nothing intact after it.
        let mut torn = seg(&[(0, 100), (100, 200)]);
        torn.scan.first_damage = Some(200);
        torn.scan.len = 260;
        assert!(journal_fate(&torn, &all).removes());
        // Intact bytes after the damage (a record, or a continuation without its start).
        let mut hole = seg(&[(0, 100), (300, 400)]);
        hole.scan.first_damage = Some(100);
        let JournalFate::Quarantine(why) = journal_fate(&hole, &all) else {
            panic!("removed");
        };
        assert!(why.contains("follow the damage at offset 100"), "{why}");
        let mut orphan = seg(&[(0, 100)]);
        orphan.scan.first_damage = Some(100);
        orphan.scan.intact_end = 500;
        assert!(!journal_fate(&orphan, &all).removes());
        // A record not replayed into the chunk.
        let JournalFate::Quarantine(why) = journal_fate(&clean, &Coverage::UpTo(100)) else {
            panic!("removed");
        };
        assert!(
            why.contains("offset 100 (100 bytes) is in no chunk"),
            "{why}"
        );
        // A record that does not decode.
        let mut bad = clean;
        bad.problems.push((100, "unknown record kind 9".into()));
        assert!(!journal_fate(&bad, &all).removes());
        assert_eq!(
            journal_fate(&seg(&[]), &Coverage::Nothing("no header".into())),
            JournalFate::Quarantine("no header".into())
        );
    }

    #[test]
    fn fate_coverage_of_a_stopped_replay() {
        let mut s = seg(&[(0, 50), (50, 100), (100, 120), (120, 200)]);
        // Record 1: steps 0..40, GAP record 2 before record 3: steps 40..80.
        s.steps = vec![0; 80];
        s.spans = vec![
            StepsSpan {
                offset: 50,
                end: 100,
                steps_at: 0,
            },
            StepsSpan {
                offset: 120,
                end: 200,
                steps_at: 40,
            },
        ];
        s.gaps = vec![GapMark {
            offset: 100,
            steps_at: 40,
            range: [5, 9],
        }];
        let stop = |at| Stopped {
            at,
            reason: String::new(),
        };
        assert_eq!(replayed(&s, None), Coverage::UpTo(u64::MAX));
        assert_eq!(replayed(&s, Some(&stop(40))), Coverage::UpTo(100));
        assert_eq!(replayed(&s, Some(&stop(60))), Coverage::UpTo(120));
        assert_eq!(replayed(&s, Some(&stop(20))), Coverage::UpTo(50));
    }
}
