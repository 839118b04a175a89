//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The upstream golden directory: `WSHARD_UPSTREAM_GOLDEN`, else `../shared/golden-upstream`
/// beside the workspace. `None` (skip) outside CI when it is missing; under `CI=true` a
/// missing directory is a failure.
pub fn upstream_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WSHARD_UPSTREAM_GOLDEN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/golden-upstream"),
        PathBuf::from,
    );
    if dir.join("simple_episode.wshard").is_file() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !ci,
        "upstream golden directory {} is missing (set WSHARD_UPSTREAM_GOLDEN)",
        dir.display()
    );
    eprintln!(
        "skipping: upstream golden directory {} not found",
        dir.display()
    );
    None
}

/// `f32(i)` for i in 0..n.
#[allow(clippy::cast_precision_loss)]
pub fn iota_f32(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

/// `f32(i) * f32(k)` in single precision.
#[allow(clippy::cast_precision_loss)]
pub fn scaled_f32(n: usize, k: f32) -> Vec<f32> {
    (0..n).map(|i| i as f32 * k).collect()
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn done_last(t: usize) -> Vec<bool> {
    (0..t).map(|i| i + 1 == t).collect()
}

pub fn as_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
