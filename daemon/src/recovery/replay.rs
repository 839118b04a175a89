//! Replaying one journal segment's timesteps into a chunk, seq by seq.
//!
//! Seqs must continue the episode: each timestep has the seq after the one before,
//! except right after a GAP record `[start, end)` that starts exactly at the seq expected;
//! the timestep after it must then have seq `end`, and the gap goes into the chunk's
//! `time/dropped_seq_ranges` with it, as in live recording. A GAP record with no timestep
//! after it (its STEPS record was torn off) is not recorded: nothing it announced arrived.

use crate::chunk::ChunkColumns;
use crate::journal::segment::SegmentContents;
use wshard_ingest_proto::{iter_records, RECORD_HEADER_BYTES};

/// Where and why replay stopped before the end of the segment's timesteps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// Byte offset in [`SegmentContents::steps`] of the first timestep not replayed.
    pub(crate) at: usize,
    pub(crate) reason: String,
}

/// Replay the timesteps of `seg` into `columns`, the first expected at seq `next_seq`.
/// Returns one past the last seq replayed (`next_seq` when none was), and where replay
/// stopped if a seq or a GAP record did not continue the episode (the rest is dropped).
#[must_use]
pub(crate) fn replay(
    seg: &SegmentContents,
    step_payload_bytes: usize,
    columns: &mut ChunkColumns,
    next_seq: u64,
) -> (u64, Option<Stopped>) {
    let rec_len = RECORD_HEADER_BYTES + step_payload_bytes;
    let mut end = next_seq;
    let mut expect = next_seq;
    let mut pending: Vec<[u64; 2]> = Vec::new();
    let mut marks = seg.gaps.iter().peekable();
    for (i, s) in iter_records(&seg.steps, step_payload_bytes).enumerate() {
        let at = i * rec_len;
        while let Some(m) = marks.next_if(|m| m.steps_at <= at) {
            let [start, stop] = m.range;
            if start != expect {
                return (
                    end,
                    Some(Stopped {
                        at,
                        reason: format!(
                            "GAP record [{start}, {stop}) where seq {expect} was expected; \
                             the rest of the segment is dropped"
                        ),
                    }),
                );
            }
            pending.push(m.range);
            expect = stop;
        }
        if s.seq != expect {
            return (
                end,
                Some(Stopped {
                    at,
                    reason: format!(
                        "timestep seq {} where {expect} was expected; the rest of the segment \
                         is dropped",
                        s.seq
                    ),
                }),
            );
        }
        for [start, stop] in pending.drain(..) {
            if let Err(e) = columns.gaps.push(start, stop) {
                return (
                    end,
                    Some(Stopped {
                        at,
                        reason: e.to_string(),
                    }),
                );
            }
        }
        columns.push(&s);
        end = s.seq.saturating_add(1);
        expect = end;
    }
    (end, None)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Map;
    use wshard::episode::{DType, Lane, Timebase};

    use super::*;
    use crate::episode::{Durability, EpisodeSchema};
    use crate::journal::segment::GapMark;
    use wshard_ingest_proto::push_step_record;

    fn schema() -> Arc<EpisodeSchema> {
        Arc::new(
            EpisodeSchema::new(
                "e".into(),
                "env".into(),
                Timebase::ticks(10.0),
                Durability::Ack,
                vec![(
                    "x".into(),
                    Lane::Signal,
                    DType::U8,
                    vec![2],
                    wshard::codec::Codec::None,
                    None,
                )],
                Map::new(),
            )
            .expect("schema"),
        )
    }

    /// A segment holding `seqs` (one STEPS record each) and GAP records before the step
    /// at the given index.
    fn segment(seqs: &[u64], gaps: &[(usize, u64, u64)]) -> SegmentContents {
        let mut seg = SegmentContents::default();
        for &s in seqs {
            push_step_record(&mut seg.steps, s, s as i64, 0.0, false, &[&[s as u8, 1]]);
        }
        for &(i, start, end) in gaps {
            seg.gaps.push(GapMark {
                offset: 0,
                steps_at: i * (RECORD_HEADER_BYTES + 2),
                range: [start, end],
            });
        }
        seg
    }

    fn run(seg: &SegmentContents, next_seq: u64) -> (u64, Option<Stopped>, ChunkColumns) {
        let mut c = ChunkColumns::new(schema(), 0, 0);
        let (end, stopped) = replay(seg, 2, &mut c, next_seq);
        (end, stopped, c)
    }

    #[test]
    fn replay_without_gaps() {
        let (end, stopped, c) = run(&segment(&[5, 6, 7], &[]), 5);
        assert_eq!((end, stopped, c.len()), (8, None, 3));
        assert!(c.gaps.is_empty());
        let (end, stopped, c) = run(&segment(&[], &[]), 5);
        assert_eq!((end, stopped, c.len()), (5, None, 0));
    }

    #[test]
    fn replay_accepts_announced_gaps_only() {
        // 0, 1, [2, 5) dropped, 5, 6, [7, 9) + [9, 12) dropped, 12
        let seg = segment(&[0, 1, 5, 6, 12], &[(2, 2, 5), (4, 7, 9), (4, 9, 12)]);
        let (end, stopped, c) = run(&seg, 0);
        assert_eq!((end, stopped), (13, None));
        assert_eq!(c.len(), 5);
        assert_eq!(c.gaps.ranges(), &[[2, 5], [7, 12]]);
        assert_eq!(c.gaps.total(), 8);
        assert_eq!(c.t_ns, vec![0, 1, 5, 6, 12]);

        // A gap at the very start of the segment.
        let (end, stopped, c) = run(&segment(&[10, 11], &[(0, 8, 10)]), 8);
        assert_eq!(
            (end, stopped, c.gaps.ranges()),
            (12, None, &[[8u64, 10]][..])
        );

        // A seq jump without a GAP record: the rest is dropped.
        let (end, stopped, c) = run(&segment(&[0, 1, 3, 4], &[]), 0);
        assert_eq!(end, 2);
        let st = stopped.expect("stopped");
        assert_eq!(st.at, 2 * 23);
        assert!(st.reason.starts_with("timestep seq 3 where 2 was expected"));
        assert_eq!(c.len(), 2);

        // A GAP record that does not start at the seq expected.
        let (end, stopped, c) = run(&segment(&[0, 1, 5], &[(2, 3, 5)]), 0);
        assert_eq!(end, 2);
        assert!(stopped
            .expect("stopped")
            .reason
            .starts_with("GAP record [3, 5) where seq 2 was expected"));
        assert!(c.gaps.is_empty());

        // A GAP record whose end is not the next seq.
        let (end, stopped, _) = run(&segment(&[0, 6], &[(1, 1, 5)]), 0);
        assert_eq!(end, 1);
        assert!(stopped
            .expect("stopped")
            .reason
            .starts_with("timestep seq 6 where 5 was expected"));
    }

    #[test]
    fn replay_ignores_a_trailing_gap() {
        // The GAP record survived, the STEPS record after it did not.
        let (end, stopped, c) = run(&segment(&[0, 1], &[(2, 2, 9)]), 0);
        assert_eq!((end, stopped, c.len()), (2, None, 2));
        assert!(c.gaps.is_empty(), "nothing it announced arrived");
    }
}
