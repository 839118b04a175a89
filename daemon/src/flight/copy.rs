//! Copying one flight stream's window out of its ring: the source chunks (read from the
//! committed source manifest) whose steps fall in `[start_ns, end_ns]` are written as the
//! window stream's chunks through the daemon's chunk file path (`.partial`, fsync, rename,
//! directory fsync); the window stream's manifest lists them and is committed once, when
//! the window is final.
//!
//! A chunk wholly inside the window (known from its manifest entry's `t_ns`) is copied
//! without decoding: its data blocks' stored bytes and CRC32C are carried over as they
//! are (a block stored raw has its CRC checked against its bytes, which costs no
//! decompression), its meta blocks are written anew. It is copied as soon as it is in the
//! source manifest, so after the post-window only the edge chunk is left. A chunk reaching
//! over an edge (or one recovery made, without `t_ns`) is decoded and cut to the step.
//!
//! A source chunk reaching past `end_ns` is copied only when the window is final (a later
//! trigger may still extend it). A latched stream also gets the last step before
//! `start_ns`.

use std::borrow::Cow;
use std::path::Path;

use serde_json::json;
use wshard::codec::{Codec, StoredCodec};
use wshard::episode::Timebase;
use wshard::episode::{ChunkInfo, Episode, StoredEpisode};
use wshard::episode_dir::index::{ChannelEntry, EpisodeStatus, StreamEntry};
use wshard::episode_dir::index::{TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS};
use wshard::manifest::{manifest_file_name, ChunkRef, Manifest};
use wshard::read::ShardReader;
use wshard::write::{prepare_block, Precompressed, PreparedBlock};

use super::pending::WindowSource;
use crate::chunk::chunk_file::{write_and_finalize_chunk_known, write_and_finalize_prepared_chunk};
use crate::chunk::columns::BlockCrcs;
use crate::chunk::manifest_commit::commit_manifest;
use crate::chunk::{META_EPISODE_KEY, META_STREAM_KEY};
use crate::error::StorageError;
use crate::session::finisher::CHUNK_T_NS_KEY;
use crate::session::SessionSettings;
use wshard_storage::fsio::Fs;
use wshard_storage::layout::{EpisodeLayout, STREAMS_DIR};

/// Blocks under this prefix describe the chunk (its id, range, channels): written anew.
const META_PREFIX: &str = "meta/";

/// Manifest statuses after which a source stream gets no more chunks.
const FINAL_STATUSES: [&str; 4] = ["complete", "aborted", "interrupted", "recovered"];

/// One stream of a window being copied.
#[derive(Debug)]
pub(crate) struct StreamCopy {
    pub(crate) src: WindowSource,
    layout: EpisodeLayout,
    manifest: Manifest,
    /// The next source chunk index to look at.
    next_src: u64,
    /// Latched: the last source chunk wholly before `start_ns`.
    before: Option<ChunkRef>,
    /// A source chunk reached `end_ns` (or lies past it).
    pub(crate) reached: bool,
    /// The source has no more chunks coming and all were looked at.
    pub(crate) exhausted: bool,
    pub(crate) entry: Option<StreamEntry>,
    /// The latest `t_ns` of the source chunks looked at (copied or skipped).
    pub(crate) seen_t_ns: Option<i64>,
    /// The window's post-window was cut short for this stream (its wall-clock deadline
    /// passed before a step past its end arrived).
    pub(crate) cut_short: bool,
}

/// The first and last `t_ns` of a chunk, as its manifest entry records them.
fn listed_t_range(c: &ChunkRef) -> Option<(i64, i64)> {
    c.extra
        .get(CHUNK_T_NS_KEY)
        .and_then(|v| serde_json::from_value::<[i64; 2]>(v.clone()).ok())
        .map(|r| (r[0], r[1]))
}

fn t_range_of(fs: &dyn Fs, dir: &Path, c: &ChunkRef) -> Result<(i64, i64), StorageError> {
    if let Some(r) = listed_t_range(c) {
        return Ok(r);
    }
    // Chunks recovery made from a journal carry no `t_ns`: read them.
    let ep = read_chunk(fs, dir, c)?;
    let ts = ep.timestamps_ns.unwrap_or_default();
    Ok((
        ts.first().copied().unwrap_or(i64::MAX),
        ts.last().copied().unwrap_or(i64::MIN),
    ))
}

fn read_chunk(fs: &dyn Fs, dir: &Path, c: &ChunkRef) -> Result<Episode, StorageError> {
    read_chunk_blocks(fs, dir, c).map(|(ep, _)| ep)
}

/// A source chunk, decoded, and its data blocks as stored (codec, CRC32C, bytes): what a
/// window chunk holding the same steps takes without compressing again.
fn read_chunk_blocks(
    fs: &dyn Fs,
    dir: &Path,
    c: &ChunkRef,
) -> Result<(Episode, Vec<PreparedBlock<'static>>), StorageError> {
    let path = dir.join(&c.uri);
    let bytes = fs
        .read(&path)
        .map_err(|e| StorageError::io("read source chunk", &path, e))?;
    let bad = |e| StorageError::format(format!("source chunk {}", path.display()), e);
    let r = ShardReader::from_bytes(bytes).map_err(bad)?;
    let ep = Episode::read(&r).map_err(bad)?;
    let index = r.index();
    let src: &[u8] = r.source();
    let mut blocks = Vec::new();
    for (i, (name, e)) in index.names().zip(index.entries()).enumerate() {
        if name.starts_with(META_PREFIX) || !index.crc_checked(i) {
            continue;
        }
        let codec = match index.stored_codec(i) {
            Some(StoredCodec::Raw) => Codec::None,
            Some(StoredCodec::Zstd) => Codec::zstd(),
            Some(StoredCodec::Lz4) => Codec::Lz4,
            None => continue,
        };
        let range = usize::try_from(e.data_offset)
            .ok()
            .zip(usize::try_from(e.data_offset.saturating_add(e.disk_size)).ok());
        let Some(stored) = range.and_then(|(a, b)| src.get(a..b)) else {
            continue;
        };
        blocks.push(PreparedBlock {
            name: name.to_owned(),
            stored: Cow::Owned(stored.to_vec()),
            meta: Precompressed {
                codec,
                orig_size: e.orig_size,
                crc32c: e.checksum,
                content_type: e.content_type,
            },
        });
    }
    Ok((ep, blocks))
}

/// The committed manifest of a source stream.
pub(crate) fn source_manifest(
    fs: &dyn Fs,
    data_dir: &Path,
    src: &WindowSource,
) -> Result<Manifest, StorageError> {
    let path = data_dir
        .join(&src.dir)
        .join(manifest_file_name(&src.files_id));
    let bytes = fs
        .read(&path)
        .map_err(|e| StorageError::io("read source manifest", &path, e))?;
    ShardReader::from_bytes(bytes)
        .and_then(|r| Manifest::read(&r))
        .map_err(|e| StorageError::format(format!("source manifest {}", path.display()), e))
}

/// Steps `[a, b)` of `ep`, as chunk `k` of the window stream starting at timestep `first`.
fn cut(ep: &Episode, a: usize, b: usize, k: u64, first: u64, window: &str, name: &str) -> Episode {
    let mut c = Episode::new(name.to_owned(), ep.env_id.clone(), ep.timebase);
    c.length = (b - a) as u64;
    c.chunk = Some(ChunkInfo {
        chunk_index: k,
        total_chunks: None,
    });
    c.timestep_range = Some([first, first + c.length - 1]);
    c.metadata.clone_from(&ep.metadata);
    c.wshard_extra.clone_from(&ep.wshard_extra);
    c.wshard_extra
        .insert(META_EPISODE_KEY.into(), json!(window));
    c.wshard_extra.insert(META_STREAM_KEY.into(), json!(name));
    c.reward_codec = ep.reward_codec;
    c.done_codec = ep.done_codec;
    c.reward = ep.reward[a..b].to_vec();
    c.done = ep.done[a..b].to_vec();
    c.timestamps_ns = ep.timestamps_ns.as_ref().map(|ts| ts[a..b].to_vec());
    for ch in &ep.channels {
        let step = ch
            .step_bytes()
            .ok()
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(0);
        let mut part = ch.clone();
        part.data = ch.data[a * step..b * step].to_vec();
        c.channels.push(part);
    }
    c
}

impl StreamCopy {
    /// The copy of `src` into the window episode `window` built under `build_root`.
    pub(crate) fn new(build_root: &Path, window: &str, src: WindowSource) -> Self {
        let layout = EpisodeLayout::stream(build_root, window, &src.name);
        let mut manifest = Manifest::new(src.name.clone(), String::new());
        manifest.status = Some(EpisodeStatus::Recording.as_str().into());
        Self {
            src,
            layout,
            manifest,
            next_src: 0,
            before: None,
            reached: false,
            exhausted: false,
            entry: None,
            seen_t_ns: None,
            cut_short: false,
        }
    }

    /// Steps copied so far.
    pub(crate) fn steps(&self) -> u64 {
        self.manifest.total_timesteps
    }

    fn write(
        &mut self,
        fs: &dyn Fs,
        settings: &SessionSettings,
        ep: &Episode,
        a: usize,
        b: usize,
        stored: Vec<PreparedBlock<'static>>,
    ) -> Result<(), StorageError> {
        if a >= b {
            return Ok(());
        }
        self.begin(fs, ep)?;
        let window = self.window();
        let k = self.manifest.chunks.len() as u64;
        let mut part = cut(
            ep,
            a,
            b,
            k,
            self.manifest.total_timesteps,
            &window,
            &self.src.name,
        );
        // A whole source chunk keeps its data blocks as stored; a cut one is encoded anew.
        let known = if a == 0 && b as u64 == ep.length {
            BlockCrcs::stored(stored)
        } else {
            BlockCrcs::none()
        };
        let chunk = write_and_finalize_chunk_known(
            fs,
            &self.layout,
            &mut part,
            &settings.write_options,
            settings.compression_workers,
            false,
            &known,
        )?;
        if self.manifest.env_id.is_empty() {
            self.manifest.env_id.clone_from(&ep.env_id);
        }
        self.manifest.push_chunk(chunk);
        if let (Some(e), Some(ts)) = (&mut self.entry, &part.timestamps_ns) {
            e.first_t_ns = e.first_t_ns.or(ts.first().copied());
            e.last_t_ns = ts.last().copied().or(e.last_t_ns);
        }
        // The manifest is committed once, by `finish`: the episode appears only whole (its
        // directory is renamed into place), and a cut build is started over.
        Ok(())
    }

    /// Before the stream's first chunk: its directory, made durable, and its index entry
    /// (described after `ep`).
    fn begin(&mut self, fs: &dyn Fs, ep: &Episode) -> Result<(), StorageError> {
        if !self.manifest.chunks.is_empty() {
            return Ok(());
        }
        let streams = self.layout.dir.parent().map(Path::to_path_buf);
        if let Some(streams) = streams {
            fs.create_dir_all(&self.layout.dir)
                .map_err(|e| StorageError::io("create directory", &self.layout.dir, e))?;
            for d in [Some(streams.as_path()), streams.parent()]
                .into_iter()
                .flatten()
            {
                fs.sync_dir(d)
                    .map_err(|e| StorageError::io("fsync directory", d, e))?;
            }
        }
        self.entry = Some(entry_of(ep, &self.src.name));
        Ok(())
    }

    /// The window episode's id (its build directory's name).
    fn window(&self) -> String {
        self.layout
            .dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Copy source chunk `c`, wholly inside the window (its steps' `t_ns` are `t`), as
    /// the window stream's next chunk without decoding it: its meta blocks planned anew
    /// (the window's episode and stream, chunk index and range), its channel, `reward`,
    /// `done` and timestamp blocks as stored (the blocks a cut chunk has).
    ///
    /// # Errors
    /// [`StorageError::WindowSourceBlock`] when a block stored raw disagrees with its
    /// CRC32C; format errors of the source chunk; the chunk file path's errors.
    fn copy_stored(
        &mut self,
        fs: &dyn Fs,
        settings: &SessionSettings,
        dir: &Path,
        c: &ChunkRef,
        t: (i64, i64),
    ) -> Result<(), StorageError> {
        let path = dir.join(&c.uri);
        let bytes = fs
            .read(&path)
            .map_err(|e| StorageError::io("read source chunk", &path, e))?;
        let bad = |e| StorageError::format(format!("source chunk {}", path.display()), e);
        let r = ShardReader::from_bytes(bytes).map_err(bad)?;
        let StoredEpisode { mut head, blocks } = StoredEpisode::read(&r).map_err(bad)?;
        if head.length == 0 {
            return Ok(());
        }
        let aux: Vec<String> = head.aux.drain(..).map(|a| a.name).collect();
        let blocks: Vec<PreparedBlock<'static>> = blocks
            .into_iter()
            .filter(|b| !aux.contains(&b.name))
            .collect();
        let window = self.window();
        for b in &blocks {
            if b.meta.codec != Codec::None {
                continue;
            }
            let crc = crc32c::crc32c(&b.stored);
            if crc != b.meta.crc32c {
                return Err(StorageError::WindowSourceBlock {
                    window,
                    stream: self.src.name.clone(),
                    chunk: c.chunk_index,
                    block: b.name.clone(),
                    message: format!(
                        "stored CRC32C {:#010x}, its bytes' {crc:#010x} ({})",
                        b.meta.crc32c,
                        path.display()
                    ),
                });
            }
        }
        self.begin(fs, &head)?;
        let k = self.manifest.chunks.len() as u64;
        let first = self.manifest.total_timesteps;
        let range = [first, first + head.length - 1];
        head.id.clone_from(&self.src.name);
        head.chunk = Some(ChunkInfo {
            chunk_index: k,
            total_chunks: None,
        });
        head.timestep_range = Some(range);
        head.wshard_extra
            .insert(META_EPISODE_KEY.into(), json!(window));
        head.wshard_extra
            .insert(META_STREAM_KEY.into(), json!(self.src.name));
        let opts = &settings.write_options;
        let mut all = Vec::with_capacity(blocks.len() + 3);
        for p in head.plan_meta(opts) {
            let b = prepare_block(&p.name, &p.data, p.opts, &opts.policy)
                .map_err(|e| StorageError::format(format!("window {window} chunk {k}"), e))?;
            all.push(PreparedBlock {
                name: b.name,
                stored: Cow::Owned(b.stored.into_owned()),
                meta: b.meta,
            });
        }
        all.extend(blocks);
        let chunk =
            write_and_finalize_prepared_chunk(fs, &self.layout, k, range, head.length, opts, &all)?;
        if self.manifest.env_id.is_empty() {
            self.manifest.env_id.clone_from(&head.env_id);
        }
        self.manifest.push_chunk(chunk);
        if let Some(e) = &mut self.entry {
            e.first_t_ns = e.first_t_ns.or(Some(t.0));
            e.last_t_ns = Some(t.1);
        }
        Ok(())
    }

    /// Copy what the source has of the window now; with `last`, also the chunk reaching
    /// past `end_ns` and (latched) the last step before `start_ns` when nothing else came.
    pub(crate) fn advance(
        &mut self,
        fs: &dyn Fs,
        data_dir: &Path,
        settings: &SessionSettings,
        last: bool,
    ) -> Result<(), StorageError> {
        let m = source_manifest(fs, data_dir, &self.src)?;
        let dir = data_dir.join(&self.src.dir);
        let ended = m
            .status
            .as_deref()
            .is_some_and(|s| FINAL_STATUSES.contains(&s));
        let (start, end) = (self.src.start_ns, self.src.end_ns);
        let mut chunks: Vec<&ChunkRef> = m
            .chunks
            .iter()
            .filter(|c| c.chunk_index >= self.next_src)
            .collect();
        chunks.sort_by_key(|c| c.chunk_index);
        let mut stopped = false;
        for c in chunks {
            let listed = listed_t_range(c);
            let (tf, tl) = match listed {
                Some(t) => t,
                None => t_range_of(fs, &dir, c)?,
            };
            self.seen_t_ns = Some(self.seen_t_ns.map_or(tl, |s| s.max(tl)));
            if tl < start {
                if self.src.latched {
                    self.before = Some(c.clone());
                }
                self.next_src = c.chunk_index + 1;
                continue;
            }
            if tf > end {
                self.reached = true;
                stopped = true;
                break;
            }
            if tl > end && !last {
                self.reached = true;
                stopped = true;
                break;
            }
            if listed.is_some() && tf >= start && tl <= end {
                // Wholly inside: copied as stored (after a latched stream's step before).
                if self.src.latched && self.steps() == 0 {
                    if let Some(prev) = self.before.take() {
                        let pe = read_chunk(fs, &dir, &prev)?;
                        let n = pe.length as usize;
                        self.write(fs, settings, &pe, n.saturating_sub(1), n, Vec::new())?;
                    }
                }
                self.copy_stored(fs, settings, &dir, c, (tf, tl))?;
                self.next_src = c.chunk_index + 1;
                if tl >= end {
                    self.reached = true;
                }
                continue;
            }
            let (ep, stored) = read_chunk_blocks(fs, &dir, c)?;
            let ts = ep.timestamps_ns.clone().unwrap_or_default();
            let mut a = ts.partition_point(|&t| t < start);
            let b = ts.partition_point(|&t| t <= end);
            if self.src.latched && self.steps() == 0 {
                if a > 0 {
                    a -= 1;
                } else if let Some(prev) = self.before.take() {
                    let pe = read_chunk(fs, &dir, &prev)?;
                    let n = pe.length as usize;
                    self.write(fs, settings, &pe, n.saturating_sub(1), n, Vec::new())?;
                }
            }
            self.write(fs, settings, &ep, a, b, stored)?;
            self.next_src = c.chunk_index + 1;
            if tl >= end {
                self.reached = true;
            }
        }
        self.exhausted = ended && !stopped;
        if last && self.src.latched && self.steps() == 0 {
            if let Some(prev) = self.before.take() {
                let pe = read_chunk(fs, &dir, &prev)?;
                let n = pe.length as usize;
                self.write(fs, settings, &pe, n.saturating_sub(1), n, Vec::new())?;
            }
        }
        Ok(())
    }

    /// Whether the window holds a step of this stream.
    pub(crate) fn holds_steps(&self) -> bool {
        !self.manifest.chunks.is_empty()
    }

    /// Remove the `.partial` chunk files a failed write left in this stream's build
    /// directory (the daemon's own), before what it holds is finalized.
    pub(crate) fn remove_partials(&self, fs: &dyn Fs) -> Result<(), StorageError> {
        let Ok(entries) = fs.read_dir(&self.layout.dir) else {
            return Ok(());
        };
        for p in entries {
            if p.extension().is_some_and(|e| e == "partial") {
                fs.remove_file(&p)
                    .map_err(|e| StorageError::io("remove", &p, e))?;
            }
        }
        Ok(())
    }

    /// The last `t_ns` copied, `None` before the first step.
    pub(crate) fn last_t_ns(&self) -> Option<i64> {
        self.entry.as_ref().and_then(|e| e.last_t_ns)
    }

    /// Commit the stream's manifest with `status`; `None` when it holds no step (the
    /// stream is then left out of the window).
    pub(crate) fn finish(
        &mut self,
        fs: &dyn Fs,
        status: EpisodeStatus,
    ) -> Result<Option<StreamEntry>, StorageError> {
        if self.manifest.chunks.is_empty() {
            return Ok(None);
        }
        if self.cut_short {
            let last = self.last_t_ns();
            self.manifest
                .extra
                .insert(super::finalize::CUT_SHORT_KEY.into(), json!(last));
        }
        self.manifest.status = Some(status.as_str().into());
        commit_manifest(fs, &self.layout, &self.manifest)?;
        let mut e = self.entry.clone();
        if let Some(e) = &mut e {
            e.status = status;
            e.steps = self.manifest.total_timesteps;
            e.chunks = self.manifest.chunks.len() as u64;
        }
        Ok(e)
    }
}

fn entry_of(ep: &Episode, name: &str) -> StreamEntry {
    let (timebase, tick_hz) = match ep.timebase {
        Timebase::Ticks { tick_hz } => (TIMEBASE_TICKS, tick_hz),
        Timebase::TimestampsNs { .. } => (TIMEBASE_TIMESTAMPS, 0.0),
    };
    StreamEntry {
        name: name.to_owned(),
        manifest: format!("{STREAMS_DIR}/{name}/{}", manifest_file_name(name)),
        timebase: timebase.to_owned(),
        tick_hz: if tick_hz.is_finite() { tick_hz } else { 0.0 },
        channels: ep
            .channels
            .iter()
            .map(|c| ChannelEntry {
                name: c.id.clone(),
                lane: c.lane.prefix().to_owned(),
                dtype: c.dtype.code().to_owned(),
                shape: c.shape.clone(),
            })
            .collect(),
        producer: "flight".to_owned(),
        status: EpisodeStatus::Recording,
        steps: 0,
        chunks: 0,
        first_t_ns: None,
        last_t_ns: None,
    }
}
