//! Seq gaps: the sequence numbers a shared-memory producer dropped under a drop policy
//! (docs/PROTOCOL.md, "Backpressure policies").
//!
//! An episode's recorded timesteps keep contiguous global indices (`timestep_range`, the
//! manifest's continuity); their seqs may skip. Every skipped range `[start, end)` is
//! attributed to the chunk holding the timestep right after it (the one whose seq `end`
//! revealed the gap) and stored in that chunk as the block `time/dropped_seq_ranges`:
//! `start u64 | end u64` pairs, little-endian, ascending, non-overlapping, not adjacent.
//! Chunks without gaps have no such block. Seqs start at 0, so the seq of the timestep
//! with global index `t` is `t` plus the number of dropped seqs before it, and a chunk's
//! seqs follow from the chunks before it.

use serde_json::{json, Value};
use wshard::episode::{names, AuxBlock, Episode};
use wshard::manifest::{ChunkRef, Manifest};

/// Name of the block.
pub(crate) const BLOCK: &str = names::DROPPED_SEQ_RANGES;

/// Manifest key, in a chunk's entry (seqs dropped before that chunk's timesteps, when
/// any) and at the top level (all chunks listed).
pub(crate) const MANIFEST_KEY: &str = "dropped_steps";

/// The `dropped_steps` of a chunk's manifest entry (0 when absent).
#[must_use]
pub(crate) fn chunk_dropped(c: &ChunkRef) -> u64 {
    c.extra
        .get(MANIFEST_KEY)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// Note `dropped` in a chunk's manifest entry (nothing when 0).
pub(crate) fn set_chunk_dropped(c: &mut ChunkRef, dropped: u64) {
    if dropped > 0 {
        c.extra.insert(MANIFEST_KEY.into(), json!(dropped));
    }
}

/// Seqs dropped before the timesteps of every chunk the manifest lists.
#[must_use]
pub(crate) fn manifest_dropped(m: &Manifest) -> u64 {
    m.chunks
        .iter()
        .map(chunk_dropped)
        .fold(ring_dropped(m), u64::saturating_add)
}

/// Seqs dropped inside the chunks a flight ring evicted (kept in the manifest's
/// `ring_start`, so that the seq a journal continues at stays right).
#[must_use]
pub(crate) fn ring_dropped(m: &Manifest) -> u64 {
    m.extra
        .get(wshard::manifest::RING_START_KEY)
        .and_then(|v| v.get(MANIFEST_KEY))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The chunks `evicted` left the ring, which had evicted `before` dropped seqs until now:
/// count theirs in `ring_start` (after [`Manifest::evict_front`] rewrote it).
pub(crate) fn note_evicted(m: &mut Manifest, before: u64, evicted: &[ChunkRef]) {
    let total = evicted
        .iter()
        .map(chunk_dropped)
        .fold(before, u64::saturating_add);
    if total > 0 {
        if let Some(Value::Object(o)) = m.extra.get_mut(wshard::manifest::RING_START_KEY) {
            o.insert(MANIFEST_KEY.into(), json!(total));
        }
    }
}

/// Set the manifest's top-level `dropped_steps` to the sum over its chunks, when it is
/// not 0, when the key is there already, or when `always` (an episode with a drop
/// policy says so even when nothing was dropped).
pub(crate) fn update_manifest(m: &mut Manifest, always: bool) {
    let total = manifest_dropped(m);
    if always || total > 0 || m.extra.contains_key(MANIFEST_KEY) {
        m.extra.insert(MANIFEST_KEY.into(), json!(total));
    }
}

/// Bytes of one encoded range.
pub(crate) const RANGE_BYTES: usize = 16;

/// What is wrong with a dropped-seq-range list: a range added out of order, or a block that
/// breaks a rule of the format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GapsError {
    /// A range starts before the end of the one held last.
    #[error("dropped seq range [{start}, {end}) does not follow [{}, {})", last[0], last[1])]
    OutOfOrder {
        start: u64,
        end: u64,
        last: [u64; 2],
    },
    /// The block's length is not a whole number of ranges.
    #[error("{} is {len} bytes, not a multiple of {}", BLOCK, RANGE_BYTES)]
    BadLength { len: usize },
    /// A stored range holds no seq.
    #[error("{}: empty range [{start}, {end})", BLOCK)]
    EmptyRange { start: u64, end: u64 },
    /// A stored range overlaps or touches the one before it.
    #[error("{}: range [{start}, {end}) overlaps or touches the one before", BLOCK)]
    Overlap { start: u64, end: u64 },
}

/// The dropped seq ranges of one chunk, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqGaps {
    ranges: Vec<[u64; 2]>,
    total: u64,
}

impl SeqGaps {
    /// No gaps.
    #[must_use]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The gap between the seq expected next and the seq that arrived, if any:
    /// `[expected, got)` when `got > expected`.
    #[must_use]
    pub(crate) fn between(expected: u64, got: u64) -> Option<[u64; 2]> {
        (got > expected).then_some([expected, got])
    }

    /// Add the range `[start, end)` (ignored when empty). It must lie after every range
    /// already held; a range that starts where the last one ends is merged into it.
    ///
    /// # Errors
    /// [`GapsError::OutOfOrder`] when the range goes backwards or overlaps.
    pub(crate) fn push(&mut self, start: u64, end: u64) -> Result<(), GapsError> {
        if end <= start {
            return Ok(());
        }
        match self.ranges.last_mut() {
            Some(last) if start < last[1] => {
                return Err(GapsError::OutOfOrder {
                    start,
                    end,
                    last: *last,
                })
            }
            Some(last) if start == last[1] => last[1] = end,
            _ => self.ranges.push([start, end]),
        }
        self.total = self.total.saturating_add(end - start);
        Ok(())
    }

    /// The ranges, `[start, end)` each.
    #[must_use]
    pub fn ranges(&self) -> &[[u64; 2]] {
        &self.ranges
    }

    /// Seqs dropped in all ranges.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// True when no seq was dropped.
    #[must_use]
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The block's bytes.
    #[must_use]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ranges.len() * RANGE_BYTES);
        for [start, end] in &self.ranges {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&end.to_le_bytes());
        }
        out
    }

    /// Parse the block's bytes, checking every rule of the format.
    ///
    /// # Errors
    /// A [`GapsError`] naming the problem.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, GapsError> {
        if bytes.len() % RANGE_BYTES != 0 {
            return Err(GapsError::BadLength { len: bytes.len() });
        }
        let mut out = Self::new();
        for pair in bytes.chunks_exact(RANGE_BYTES) {
            let mut a = [0u8; 8];
            let mut b = [0u8; 8];
            a.copy_from_slice(&pair[..8]);
            b.copy_from_slice(&pair[8..]);
            let (start, end) = (u64::from_le_bytes(a), u64::from_le_bytes(b));
            if end <= start {
                return Err(GapsError::EmptyRange { start, end });
            }
            if out.ranges.last().is_some_and(|l| start <= l[1]) {
                return Err(GapsError::Overlap { start, end });
            }
            out.push(start, end)?;
        }
        Ok(out)
    }

    /// The block for a chunk, `None` when there is no gap (the block is then omitted).
    #[must_use]
    pub(crate) fn to_block(&self) -> Option<AuxBlock> {
        (!self.is_empty()).then(|| AuxBlock::new(BLOCK, self.encode()))
    }

    /// The gaps stored in a chunk read back (none when it has no block).
    ///
    /// # Errors
    /// As `SeqGaps::decode`.
    pub fn of_episode(ep: &Episode) -> Result<Self, GapsError> {
        ep.aux_block(BLOCK)
            .map_or_else(|| Ok(Self::new()), |b| Self::decode(&b.data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flight_ring_keeps_the_seqs_dropped_in_evicted_chunks() {
        let mut m = Manifest::new("ep", "");
        for (k, d) in [(0u64, 2u64), (1, 0), (2, 3)] {
            let mut c = ChunkRef {
                chunk_index: k,
                uri: format!("ep_chunk_{k:04}.wshard"),
                sha256: String::new(),
                timestep_range: [k * 4, k * 4 + 3],
                length_t: 4,
                extra: serde_json::Map::new(),
            };
            set_chunk_dropped(&mut c, d);
            m.push_chunk(c);
        }
        assert_eq!(manifest_dropped(&m), 5);
        let before = ring_dropped(&m);
        let gone = m.evict_front(1);
        note_evicted(&mut m, before, &gone);
        assert_eq!((ring_dropped(&m), manifest_dropped(&m)), (2, 5));
        let before = ring_dropped(&m);
        let gone = m.evict_front(1);
        note_evicted(&mut m, before, &gone);
        assert_eq!((ring_dropped(&m), manifest_dropped(&m)), (2, 5));
        m.validate_continuity().expect("continuous");
    }

    #[test]
    fn gaps_push_merge_and_reject() {
        let mut g = SeqGaps::new();
        assert!(g.is_empty());
        g.push(3, 5).expect("first");
        g.push(7, 7).expect("empty range ignored");
        g.push(5, 6).expect("adjacent: merged");
        g.push(10, 12).expect("later");
        assert_eq!(g.ranges(), &[[3, 6], [10, 12]]);
        assert_eq!(g.total(), 5);
        let e = g.push(11, 20).expect_err("overlap");
        assert!(
            e.to_string().contains("[11, 20) does not follow [10, 12)"),
            "{e}"
        );
        assert!(g.push(0, 1).is_err());
        assert_eq!(g.total(), 5, "refused ranges do not count");
    }

    #[test]
    fn gaps_between() {
        assert_eq!(SeqGaps::between(5, 5), None);
        assert_eq!(SeqGaps::between(5, 4), None);
        assert_eq!(SeqGaps::between(5, 9), Some([5, 9]));
        assert_eq!(SeqGaps::between(0, u64::MAX), Some([0, u64::MAX]));
    }

    #[test]
    fn gaps_block_round_trip_and_rules() {
        let mut g = SeqGaps::new();
        g.push(1, 2).expect("push");
        g.push(100, u64::MAX).expect("push");
        let bytes = g.encode();
        assert_eq!(bytes.len(), 32);
        assert_eq!(
            &bytes[..16],
            &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(SeqGaps::decode(&bytes).expect("decode"), g);
        assert_eq!(g.total(), 1 + (u64::MAX - 100));
        let block = g.to_block().expect("block");
        assert_eq!(block.name, "time/dropped_seq_ranges");
        assert_eq!(SeqGaps::new().to_block(), None);
        assert_eq!(SeqGaps::decode(&[]).expect("empty"), SeqGaps::new());

        let pair = |a: u64, b: u64| [a.to_le_bytes(), b.to_le_bytes()].concat();
        let cases: [(Vec<u8>, &str); 4] = [
            (vec![0; 15], "not a multiple of 16"),
            (pair(4, 4), "empty range [4, 4)"),
            ([pair(1, 5), pair(5, 6)].concat(), "overlaps or touches"),
            ([pair(1, 5), pair(2, 3)].concat(), "overlaps or touches"),
        ];
        for (bytes, want) in cases {
            let e = SeqGaps::decode(&bytes).expect_err(want);
            assert!(
                e.to_string().contains(want),
                "{e:?} should contain {want:?}"
            );
        }
    }

    #[test]
    fn gaps_manifest_keys() {
        let chunk = |k: u64| ChunkRef {
            chunk_index: k,
            uri: format!("c{k}"),
            sha256: String::new(),
            timestep_range: [k * 10, k * 10 + 9],
            length_t: 10,
            extra: serde_json::Map::new(),
        };
        let mut m = Manifest::new("e", "env");
        update_manifest(&mut m, false);
        assert!(!m.extra.contains_key(MANIFEST_KEY), "nothing to say");
        update_manifest(&mut m, true);
        assert_eq!(m.extra[MANIFEST_KEY], json!(0));
        let mut c = chunk(0);
        set_chunk_dropped(&mut c, 0);
        assert!(c.extra.is_empty());
        set_chunk_dropped(&mut c, 4);
        assert_eq!(chunk_dropped(&c), 4);
        m.push_chunk(c);
        let mut c = chunk(1);
        set_chunk_dropped(&mut c, 3);
        m.push_chunk(c);
        m.push_chunk(chunk(2));
        assert_eq!(manifest_dropped(&m), 7);
        update_manifest(&mut m, false);
        assert_eq!(m.extra[MANIFEST_KEY], json!(7));
        let mut plain = Manifest::new("e", "env");
        plain.push_chunk(chunk(0));
        update_manifest(&mut plain, false);
        assert!(
            plain.extra.is_empty(),
            "block episodes keep their manifests as before"
        );
    }

    #[test]
    fn gaps_of_episode() {
        let mut ep = Episode::new("e", "env", wshard::episode::Timebase::ticks(10.0));
        assert!(SeqGaps::of_episode(&ep).expect("none").is_empty());
        let mut g = SeqGaps::new();
        g.push(2, 4).expect("push");
        ep.aux.extend(g.to_block());
        assert_eq!(SeqGaps::of_episode(&ep).expect("some"), g);
        ep.aux[0].data.pop();
        assert!(SeqGaps::of_episode(&ep).is_err());
    }
}
