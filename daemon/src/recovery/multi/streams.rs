//! A stream's index entry rebuilt from its files after its recovery: counts and status
//! from its manifest (the truth for its chunks), first and last timestamp from its first
//! and last chunk, and for a folder the index did not list, its clock and channels from its
//! first chunk.

use std::path::Path;

use wshard::episode::{names, Episode, Timebase};
use wshard::episode_dir::index::{
    ChannelEntry, EpisodeStatus, StreamEntry, TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS,
};
use wshard::manifest::Manifest;
use wshard::read::ShardReader;

use wshard_storage::fsio::Fs;
use wshard_storage::layout::{EpisodeLayout, STREAMS_DIR};

/// Nanoseconds per second, for a nominal rate from a nominal period.
const NS_PER_S: f64 = 1e9;

/// The manifest of `layout`, when it can be read.
fn manifest(fs: &dyn Fs, layout: &EpisodeLayout) -> Option<Manifest> {
    let bytes = fs.read(&layout.manifest()).ok()?;
    Manifest::read(&ShardReader::from_bytes(bytes).ok()?).ok()
}

/// The `time/timestamps_ns` of chunk file `uri` of `layout`, first and last.
fn chunk_times(fs: &dyn Fs, layout: &EpisodeLayout, uri: &str) -> Option<(i64, i64)> {
    let bytes = fs.read(&layout.dir.join(uri)).ok()?;
    let block = ShardReader::from_bytes(bytes)
        .ok()?
        .read_block(names::TIMESTAMPS_NS)
        .ok()?;
    let at = |i: usize| {
        block
            .get(i..i + 8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_le_bytes)
    };
    let last = block.len().checked_sub(8)?;
    Some((at(0)?, at(last)?))
}

/// The status a stream's manifest says, as the index spells it (a manifest that is not
/// final after recovery, or unreadable, counts as `recovered`).
fn status_of(m: Option<&Manifest>) -> EpisodeStatus {
    m.and_then(|m| m.status.as_deref())
        .and_then(EpisodeStatus::parse)
        .filter(|s| *s != EpisodeStatus::Recording)
        .unwrap_or(EpisodeStatus::Recovered)
}

/// Bring `entry` in line with the stream's files in `layout` (after its recovery): status,
/// steps, chunks, first and last timestamp. Returns whether anything changed.
pub(super) fn refresh(fs: &dyn Fs, layout: &EpisodeLayout, entry: &mut StreamEntry) -> bool {
    let m = manifest(fs, layout);
    let before = entry.clone();
    entry.status = status_of(m.as_ref());
    entry.steps = m.as_ref().map_or(0, |m| m.total_timesteps);
    entry.chunks = m.as_ref().map_or(0, |m| m.chunks.len() as u64);
    let first = m
        .as_ref()
        .and_then(|m| m.chunks.first())
        .and_then(|c| chunk_times(fs, layout, &c.uri));
    let last = m
        .as_ref()
        .and_then(|m| m.chunks.last())
        .and_then(|c| chunk_times(fs, layout, &c.uri));
    entry.first_t_ns = first.map(|t| t.0);
    entry.last_t_ns = last.map(|t| t.1);
    *entry != before
}

/// The index entry of a stream folder the index did not list: clock and channels from its
/// first chunk (none without one), then [`refresh`]ed.
pub(super) fn adopted(fs: &dyn Fs, layout: &EpisodeLayout) -> StreamEntry {
    let name = layout.id().to_owned();
    let first = manifest(fs, layout)
        .and_then(|m| m.chunks.first().map(|c| layout.dir.join(&c.uri)))
        .and_then(|p| fs.read(&p).ok())
        .and_then(|b| Episode::from_bytes(b).ok());
    let (timebase, tick_hz) = match first.as_ref().map(|e| e.timebase) {
        Some(Timebase::TimestampsNs { dt_ns }) if dt_ns > 0 => {
            (TIMEBASE_TIMESTAMPS, NS_PER_S / dt_ns as f64)
        }
        Some(Timebase::TimestampsNs { .. }) => (TIMEBASE_TIMESTAMPS, 0.0),
        Some(Timebase::Ticks { tick_hz }) => (TIMEBASE_TICKS, tick_hz),
        None => (TIMEBASE_TICKS, 0.0),
    };
    let channels = first
        .as_ref()
        .map(|e| {
            e.channels
                .iter()
                .map(|c| ChannelEntry {
                    name: c.id.clone(),
                    lane: c.lane.prefix().to_owned(),
                    dtype: c.dtype.code().to_owned(),
                    shape: c.shape.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut entry = StreamEntry {
        manifest: Path::new(STREAMS_DIR)
            .join(&name)
            .join(wshard::manifest::manifest_file_name(&name))
            .display()
            .to_string(),
        name,
        timebase: timebase.to_owned(),
        tick_hz,
        channels,
        producer: String::new(),
        status: EpisodeStatus::Recovered,
        steps: 0,
        chunks: 0,
        first_t_ns: None,
        last_t_ns: None,
    };
    refresh(fs, layout, &mut entry);
    entry
}
