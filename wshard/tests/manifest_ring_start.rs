//! A flight recorder's ring: a manifest whose series starts past chunk 0 (`ring_start`),
//! after its oldest chunks were evicted, is continuous; anything else still is not.

use serde_json::Map;
use wshard::manifest::{ChunkRef, Manifest, RING_START_KEY};
use wshard::FormatError;

fn chunk(k: u64, start: u64, len: u64) -> ChunkRef {
    ChunkRef {
        chunk_index: k,
        uri: format!("ep_chunk_{k:04}.wshard"),
        sha256: String::new(),
        timestep_range: [start, start + len - 1],
        length_t: len,
        extra: Map::new(),
    }
}

fn ring() -> Manifest {
    let mut m = Manifest::new("ep", "");
    for k in 0..5 {
        m.push_chunk(chunk(k, k * 8, 8));
    }
    m
}

#[test]
fn flight_manifest_ring_start_after_eviction_is_continuous() {
    let mut m = ring();
    assert_eq!(m.ring_start(), (0, 0));
    let gone = m.evict_front(2);
    assert_eq!(gone.len(), 2);
    assert_eq!(m.ring_start(), (2, 16));
    assert_eq!(m.next_chunk_index(), 5);
    assert_eq!(m.total_timesteps, 40);
    m.validate_continuity()
        .expect("continuous from the ring start");
    // Round trip through the document.
    let again = Manifest::from_json(&m.to_json()).expect("parse");
    assert_eq!(again.ring_start(), (2, 16));
    again
        .validate_continuity()
        .expect("continuous after a round trip");
}

#[test]
fn flight_manifest_without_ring_start_must_start_at_chunk_zero() {
    let mut m = ring();
    m.chunks.remove(0);
    m.total_timesteps -= 8;
    assert!(matches!(
        m.validate_continuity(),
        Err(FormatError::ChunkIndexSequence { .. })
    ));
    // A ring start that does not match the first chunk is refused too.
    let mut m = ring();
    m.evict_front(1);
    m.extra.insert(
        RING_START_KEY.into(),
        serde_json::json!({"chunk_index": 1, "timestep": 9}),
    );
    assert!(m.validate_continuity().is_err());
}
