//! Splitting an episode into chunk files under a manifest, and joining them back.

use std::path::{Path, PathBuf};

use super::model::{chunk_file_name, manifest_file_name, ChunkRef, Manifest};
use crate::episode::{ChunkInfo, Episode, EpisodeWriteOptions};
use crate::error::{FormatError, Result};

fn slice_steps(data: &[u8], step: usize, start: usize, end: usize) -> Vec<u8> {
    data[start * step..end * step].to_vec()
}

/// Split `ep` into episodes of at most `chunk_size_t` steps (`ceil(T / chunk)` of them, as
/// the reference writers do), each carrying its chunk index, total and inclusive global
/// `timestep_range`. Aux blocks are split by steps only when their length is a multiple of
/// T; otherwise they stay whole in chunk 0.
///
/// # Errors
/// [`FormatError::BadEpisode`] for an invalid episode or a chunk size of 0.
pub fn split_episode(ep: &Episode, chunk_size_t: u64) -> Result<Vec<Episode>> {
    ep.validate()?;
    if chunk_size_t == 0 {
        return Err(FormatError::BadEpisode {
            message: "chunk size must be at least one timestep".into(),
        });
    }
    let t = usize::try_from(ep.length).map_err(|_| FormatError::BadEpisode {
        message: "T too large".into(),
    })?;
    let chunk = usize::try_from(chunk_size_t).unwrap_or(usize::MAX);
    let total = t.div_ceil(chunk);
    let mut out = Vec::with_capacity(total);
    for k in 0..total {
        let (s, e) = (k * chunk, ((k + 1) * chunk).min(t));
        let mut c = Episode::new(ep.id.clone(), ep.env_id.clone(), ep.timebase);
        c.length = (e - s) as u64;
        c.chunk = Some(ChunkInfo {
            chunk_index: k as u64,
            total_chunks: Some(total as u64),
        });
        c.timestep_range = Some([s as u64, e as u64 - 1]);
        c.metadata.clone_from(&ep.metadata);
        c.wshard_extra.clone_from(&ep.wshard_extra);
        c.reward_codec = ep.reward_codec;
        c.done_codec = ep.done_codec;
        c.reward = ep.reward[s..e].to_vec();
        c.done = ep.done[s..e].to_vec();
        c.timestamps_ns = ep.timestamps_ns.as_ref().map(|ts| ts[s..e].to_vec());
        for ch in &ep.channels {
            let step = usize::try_from(ch.step_bytes()?).unwrap_or(usize::MAX);
            let mut part = ch.clone();
            part.data = slice_steps(&ch.data, step, s, e);
            c.channels.push(part);
        }
        for a in &ep.aux {
            if t > 0 && a.data.len() % t == 0 {
                let mut part = a.clone();
                part.data = slice_steps(&a.data, a.data.len() / t, s, e);
                c.aux.push(part);
            } else if k == 0 {
                c.aux.push(a.clone());
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// Write `ep` as chunk files plus a manifest in `dir` (not synced) and return the manifest.
///
/// # Errors
/// Those of [`split_episode`], write and I/O errors.
pub fn write_episode_chunked(
    ep: &Episode,
    dir: &Path,
    chunk_size_t: u64,
    opts: &EpisodeWriteOptions,
) -> Result<Manifest> {
    let mut manifest = Manifest::new(ep.id.clone(), ep.env_id.clone());
    for c in split_episode(ep, chunk_size_t)? {
        let info = c.chunk.unwrap_or(ChunkInfo {
            chunk_index: 0,
            total_chunks: None,
        });
        let path = dir.join(chunk_file_name(&ep.id, info.chunk_index));
        c.write_file(&path, opts)?;
        let start = c.timestep_range.map_or(0, |r| r[0]);
        manifest.push_chunk(ChunkRef::for_file(
            &path,
            info.chunk_index,
            start,
            c.length,
        )?);
    }
    manifest.status = Some("complete".into());
    let path = dir.join(manifest_file_name(&ep.id));
    std::fs::write(&path, manifest.to_bytes()?)
        .map_err(|e| FormatError::io_at("write", &path, e))?;
    Ok(manifest)
}

/// Read a chunked episode back as one episode: checks continuity, every chunk's SHA-256,
/// and that each chunk's own metadata agrees with its manifest entry.
///
/// # Errors
/// Continuity and hash errors, block errors, [`FormatError::BadManifest`] on disagreement.
pub fn read_episode_chunked(manifest_path: &Path) -> Result<Episode> {
    let manifest = Manifest::read_file(manifest_path)?;
    manifest.validate_continuity()?;
    let dir = manifest_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if let Some(bad) = manifest
        .check_chunk_files(&dir)
        .into_iter()
        .find_map(|c| c.error)
    {
        return Err(FormatError::BadManifest { message: bad });
    }
    let mut chunks = manifest.chunks.clone();
    chunks.sort_by_key(|c| c.chunk_index);
    let mut joined: Option<Episode> = None;
    for c in &chunks {
        let part = Episode::read_file(dir.join(&c.uri))?;
        if part.length != c.length_t {
            return Err(FormatError::BadManifest {
                message: format!(
                    "chunk {} `{}` holds {} steps, manifest says {}",
                    c.chunk_index, c.uri, part.length, c.length_t
                ),
            });
        }
        match &mut joined {
            None => {
                let mut first = part;
                first.chunk = None;
                first.timestep_range = None;
                joined = Some(first);
            }
            Some(ep) => append(ep, part, c)?,
        }
    }
    joined.ok_or_else(|| FormatError::BadManifest {
        message: "manifest lists no chunks".into(),
    })
}

fn append(ep: &mut Episode, part: Episode, c: &ChunkRef) -> Result<()> {
    let mismatch = |what: &str| FormatError::BadManifest {
        message: format!(
            "chunk {} `{}`: {what} differs from chunk 0",
            c.chunk_index, c.uri
        ),
    };
    if part.channels.len() != ep.channels.len() {
        return Err(mismatch("channel list"));
    }
    for (dst, src) in ep.channels.iter_mut().zip(part.channels) {
        if dst.id != src.id
            || dst.dtype != src.dtype
            || dst.shape != src.shape
            || dst.lane != src.lane
        {
            return Err(mismatch(&format!("channel `{}`", src.id)));
        }
        dst.data.extend_from_slice(&src.data);
    }
    ep.length += part.length;
    ep.reward.extend(part.reward);
    ep.done.extend(part.done);
    match (&mut ep.timestamps_ns, part.timestamps_ns) {
        (Some(a), Some(b)) => a.extend(b),
        (None, None) => {}
        _ => return Err(mismatch("time/timestamps_ns presence")),
    }
    for a in part.aux {
        match ep.aux.iter_mut().find(|x| x.name == a.name) {
            Some(x) => x.data.extend_from_slice(&a.data),
            None => ep.aux.push(a),
        }
    }
    Ok(())
}
