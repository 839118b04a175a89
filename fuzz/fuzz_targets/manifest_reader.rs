//! Manifests from arbitrary bytes, three ways:
//!
//! 1. the bytes as a whole manifest shard (`ShardReader::from_bytes`, then `Manifest::read`);
//! 2. the bytes as the JSON document (`serde_json` then `Manifest::from_json`);
//! 3. the bytes as the `meta/manifest` block of a freshly written, CRC-correct manifest
//!    shard, so mutations of the JSON reach `Manifest::read` instead of failing the CRC.
//!
//! None may panic. Every manifest that parses goes through `validate_continuity` and must
//! survive `to_json` -> `from_json` unchanged, and `to_bytes` -> `Manifest::read` with the
//! same JSON text (Go-style rendering: integral floats are written without `.0`, so the
//! values may change number kind, never their text).

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use wshard::entry::content_type;
use wshard::episode::go_json::to_compact;
use wshard::manifest::{Manifest, MANIFEST_BLOCK};
use wshard::read::{ReadLimits, ShardReader};
use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};

fn round_trip(m: &Manifest) {
    let _ = m.validate_continuity();
    let v = m.to_json();
    let back = Manifest::from_json(&v).expect("to_json output must parse");
    assert_eq!(&back, m, "to_json -> from_json changed the manifest");
    assert_eq!(back.to_json(), v, "to_json is not stable");

    let bytes = m.to_bytes().expect("a parsed manifest must write");
    let r = ShardReader::from_bytes(bytes).expect("a written manifest shard must open");
    let again = Manifest::read(&r).expect("a written manifest must read back");
    assert_eq!(
        to_compact(&again.to_json()),
        to_compact(&v),
        "write -> read changed the manifest"
    );
    assert_eq!(
        (
            &again.episode_id,
            &again.env_id,
            again.total_timesteps,
            &again.status
        ),
        (&m.episode_id, &m.env_id, m.total_timesteps, &m.status)
    );
    assert_eq!(again.chunks.len(), m.chunks.len());
    for (a, b) in again.chunks.iter().zip(&m.chunks) {
        assert_eq!(
            (
                a.chunk_index,
                &a.uri,
                &a.sha256,
                a.timestep_range,
                a.length_t
            ),
            (
                b.chunk_index,
                &b.uri,
                &b.sha256,
                b.timestep_range,
                b.length_t
            )
        );
    }
    assert_eq!(
        again.validate_continuity().is_ok(),
        m.validate_continuity().is_ok(),
        "continuity verdict changed by a write/read round trip"
    );
}

fn from_shard(bytes: Vec<u8>) {
    let lenient = ReadLimits {
        require_exact_file_size: false,
        ..ReadLimits::default()
    };
    if let Ok(r) = ShardReader::new(bytes.as_slice(), lenient) {
        if let Ok(m) = Manifest::read(&r) {
            round_trip(&m);
        }
    }
    if let Ok(r) = ShardReader::from_bytes(bytes) {
        if let Ok(m) = Manifest::read(&r) {
            round_trip(&m);
        }
    }
}

/// A CRC-correct manifest shard whose `meta/manifest` block is `json`.
fn wrap(json: &[u8]) -> Option<Vec<u8>> {
    let mut w = ShardWriter::new(
        Cursor::new(Vec::new()),
        ShardOptions::manifest(),
        &Reserve::names([MANIFEST_BLOCK]),
    )
    .ok()?;
    w.write_block(MANIFEST_BLOCK, json, BlockOptions::raw(content_type::JSON))
        .ok()?;
    Some(w.finish().ok()?.0.into_inner())
}

fuzz_target!(|data: &[u8]| {
    // 1. A whole shard.
    from_shard(data.to_vec());

    // 2. The JSON document.
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        if let Ok(m) = Manifest::from_json(&v) {
            round_trip(&m);
        }
    }

    // 3. The JSON inside a valid container: must agree with 2.
    if let Some(shard) = wrap(data) {
        let r = ShardReader::from_bytes(shard).expect("a wrapped manifest shard must open");
        let via_shard = Manifest::read(&r);
        let direct = serde_json::from_slice::<Value>(data)
            .ok()
            .and_then(|v| Manifest::from_json(&v).ok());
        match (via_shard, direct) {
            (Ok(a), Some(b)) => {
                assert_eq!(a, b, "Manifest::read and from_json disagree");
                round_trip(&a);
            }
            (Err(_), None) => {}
            (a, b) => panic!(
                "Manifest::read and from_json disagree: {:?} vs {:?}",
                a.map(|_| ()),
                b.map(|_| ())
            ),
        }
    }
});
