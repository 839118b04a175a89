//! What the data directory says about one episode, as both `status` and `episodes` report
//! it: the size of its published chunk files (`on_disk_bytes`) and its length
//! (`total_timesteps`), from its manifest. One place, so both verbs give the same values.

use std::path::Path;

use wshard::manifest::Manifest;

use wshard_storage::layout::EpisodeLayout;

/// Bytes of the chunk files `m` lists that exist in `layout`'s directory.
#[must_use]
pub fn chunk_files_bytes(layout: &EpisodeLayout, m: &Manifest) -> u64 {
    m.chunks
        .iter()
        .filter_map(|c| std::fs::metadata(layout.dir.join(&c.uri)).ok())
        .map(|md| md.len())
        .sum()
}

/// The layout of `key`: an episode id, or `EP/STREAM` for a stream of a multi-stream
/// episode (the registry's key of an open stream).
#[must_use]
pub fn layout_of(data_dir: &Path, key: &str) -> EpisodeLayout {
    match key.split_once('/') {
        Some((episode, stream)) => EpisodeLayout::stream(data_dir, episode, stream),
        None => EpisodeLayout::new(data_dir, key),
    }
}

/// The manifest of episode (or stream, `EP/STREAM`) `id` under `data_dir`, when it can be
/// read.
#[must_use]
pub fn manifest(data_dir: &Path, id: &str) -> Option<(EpisodeLayout, Manifest)> {
    let layout = layout_of(data_dir, id);
    let m = Manifest::read_file(layout.manifest()).ok()?;
    Some((layout, m))
}

/// Bytes of the chunk files episode `id` has published so far (0 before its first chunk,
/// when it has no manifest yet).
#[must_use]
pub fn on_disk_bytes(data_dir: &Path, id: &str) -> u64 {
    manifest(data_dir, id).map_or(0, |(layout, m)| chunk_files_bytes(&layout, &m))
}

/// The length of episode `id` as its manifest says (`total_timesteps`), `None` when the
/// manifest cannot be read.
#[must_use]
pub fn total_timesteps(data_dir: &Path, id: &str) -> Option<u64> {
    manifest(data_dir, id).map(|(_, m)| m.total_timesteps)
}
