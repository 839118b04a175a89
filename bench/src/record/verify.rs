//! Untimed checks of what the daemon recorded.
//!
//! Always: the manifest says `complete` with the right number of timesteps, chunks are
//! contiguous, and the directory holds only the chunks and the manifest (no journal left).
//! With `--verify`: every chunk is read back with the wshard library and every byte of
//! every channel and timestamp compared with what was pushed.

use std::path::Path;

use wshard::episode::Episode;
use wshard::manifest::{manifest_file_name, Manifest};
use wshard::read::ShardReader;

use super::drive::Source;
use crate::error::{fail, Result};

/// Check the manifest of `episode` in `dir` against `steps`.
///
/// # Errors
/// What does not match.
pub fn manifest(dir: &Path, episode: &str, steps: u64, files: &[String]) -> Result<Manifest> {
    let m = Manifest::read_file(dir.join(manifest_file_name(episode)))?;
    if m.status.as_deref() != Some("complete") {
        return Err(fail(format!("{episode}: manifest status {:?}", m.status)));
    }
    if m.total_timesteps != steps {
        return Err(fail(format!(
            "{episode}: manifest lists {} timesteps, pushed {steps}",
            m.total_timesteps
        )));
    }
    m.validate_continuity()?;
    let expected = m.chunks.len() + 1;
    if files.len() != expected {
        return Err(fail(format!(
            "{episode}: {} files in the episode directory, expected {} chunks + manifest: {files:?}",
            files.len(),
            m.chunks.len()
        )));
    }
    Ok(m)
}

/// Read every chunk back and compare it with `source`.
///
/// # Errors
/// The first difference.
pub fn contents(dir: &Path, m: &Manifest, source: Source<'_>) -> Result<()> {
    for c in &m.chunks {
        let ep = Episode::read_file(dir.join(&c.uri))?;
        let first = c.timestep_range[0];
        let ts = ep
            .timestamps_ns
            .as_ref()
            .ok_or_else(|| fail(format!("{}: no timestamps", c.uri)))?;
        if ep.length != c.length_t || ts.len() as u64 != c.length_t {
            return Err(fail(format!("{}: length differs from the manifest", c.uri)));
        }
        for j in 0..ep.length {
            let i = first + j;
            let (t, payloads): (i64, Vec<Vec<u8>>) = match source {
                Source::Joints(d) => {
                    let (t, p) = d.step(i);
                    (t, p.iter().map(|s| s.to_vec()).collect())
                }
                Source::Cameras(w) => {
                    let (t, jp, c0, c1) = w.step(i);
                    (t, vec![c0.to_vec(), c1.to_vec(), jp.to_vec()])
                }
            };
            if ts[j as usize] != t {
                return Err(fail(format!("{}: timestamp of step {i} differs", c.uri)));
            }
            for (ch, want) in ep.channels.iter().zip(&payloads) {
                let n = want.len();
                let got = &ch.data[j as usize * n..(j as usize + 1) * n];
                if got != want.as_slice() {
                    return Err(fail(format!(
                        "{}: channel {} of step {i} differs",
                        c.uri, ch.id
                    )));
                }
            }
        }
    }
    Ok(())
}

/// One block name summed over every chunk of an episode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockSizes {
    pub name: String,
    /// How the blocks are stored (`none`, `zstd`, `lz4`, or `mixed`).
    pub stored: String,
    pub disk: u64,
    pub orig: u64,
}

/// Stored and original size of every block, summed over the chunks (from the indexes only).
///
/// # Errors
/// A chunk that cannot be opened.
pub fn block_sizes(dir: &Path, m: &Manifest) -> Result<Vec<BlockSizes>> {
    let mut out: Vec<BlockSizes> = Vec::new();
    for c in &m.chunks {
        let r = ShardReader::open(dir.join(&c.uri))?;
        let idx = r.index();
        for (i, e) in idx.entries().iter().enumerate() {
            let name = idx.name(i).unwrap_or("?").to_owned();
            let stored = idx
                .stored_codec(i)
                .map_or("?", wshard::codec::StoredCodec::name)
                .to_owned();
            match out.iter_mut().find(|b| b.name == name) {
                Some(b) => {
                    b.disk += e.disk_size;
                    b.orig += e.orig_size;
                    if b.stored != stored {
                        b.stored = "mixed".into();
                    }
                }
                None => out.push(BlockSizes {
                    name,
                    stored,
                    disk: e.disk_size,
                    orig: e.orig_size,
                }),
            }
        }
    }
    Ok(out)
}
