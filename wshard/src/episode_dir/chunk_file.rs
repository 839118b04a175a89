//! Reading a stream's chunks through its manifest: each chunk mapped into memory, its meta
//! blocks parsed, its channels kept in place when stored uncompressed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::column::ChannelData;
use super::error::EpisodeDirError;
use super::index::ChannelEntry;
use super::stream::StreamData;
use crate::consts::role;
use crate::episode::meta::{
    parse_channels_meta, parse_episode_meta, parse_object, ChannelDef, EpisodeMeta,
};
use crate::episode::{names, Timebase};
use crate::error::FormatError;
use crate::manifest::{ChunkRef, Manifest};
use crate::read::MappedShard;

/// Bytes of one `time/timestamps_ns` value.
const TIMESTAMP_BYTES: usize = 8;
/// Bytes of one `reward` value (T is taken from `reward` when `meta/episode` lacks it).
const REWARD_BYTES: u64 = 4;

/// A stream's manifest, read and checked for continuity, with its chunks in order.
pub(crate) struct StreamManifest {
    pub stream: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl StreamManifest {
    pub(crate) fn read(stream: &str, path: &Path) -> Result<Self, EpisodeDirError> {
        let fmt = |source| EpisodeDirError::format(stream, path, source);
        let mut manifest = Manifest::read_file(path).map_err(fmt)?;
        manifest.validate_continuity().map_err(fmt)?;
        manifest.chunks.sort_by_key(|c| c.chunk_index);
        Ok(Self {
            stream: stream.to_owned(),
            dir: path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            manifest,
        })
    }

    /// The chunks that hold steps, in order.
    pub(crate) fn non_empty(&self) -> impl DoubleEndedIterator<Item = &ChunkRef> {
        self.manifest.chunks.iter().filter(|c| c.length_t > 0)
    }

    /// Map chunk `c` and parse its meta blocks.
    pub(crate) fn open_chunk(&self, c: &ChunkRef) -> Result<ChunkFile, EpisodeDirError> {
        let path = self.dir.join(&c.uri);
        let fmt = |source| EpisodeDirError::format(&self.stream, &path, source);
        let shard = Arc::new(MappedShard::open(&path).map_err(fmt)?);
        let r = shard.reader();
        r.expect_role(role::WSHARD).map_err(fmt)?;
        let object = |name: &str| {
            r.read_block(name)
                .and_then(|bytes| parse_object(name, &bytes))
                .map_err(fmt)
        };
        let wshard = object(names::META_WSHARD)?;
        let meta = parse_episode_meta(&object(names::META_EPISODE)?, &wshard).map_err(fmt)?;
        let defs = parse_channels_meta(&object(names::META_CHANNELS)?).map_err(fmt)?;
        let length = match meta.length {
            Some(t) => t,
            None => r.entry(names::REWARD).map_err(fmt)?.1.orig_size / REWARD_BYTES,
        };
        let file = ChunkFile {
            chunk: c.clone(),
            path,
            shard,
            meta,
            defs,
            length,
        };
        if file.length != c.length_t {
            return Err(file.mismatch(
                &self.stream,
                format!(
                    "holds {} steps, the manifest says {}",
                    file.length, c.length_t
                ),
            ));
        }
        Ok(file)
    }

    /// Every chunk's data, concatenated per channel.
    pub(crate) fn read_data(&self) -> Result<StreamData, EpisodeDirError> {
        let total = usize::try_from(self.manifest.total_timesteps).unwrap_or(0);
        let mut timestamps = Vec::with_capacity(total);
        let mut first: Option<(Timebase, Vec<ChannelDef>)> = None;
        let mut columns: Vec<ChannelData> = Vec::new();
        for c in &self.manifest.chunks {
            let file = self.open_chunk(c)?;
            match &first {
                None => {
                    columns = file
                        .defs
                        .iter()
                        .map(|d| channel_of(d).map(|e| e.0))
                        .collect::<Result<_, _>>()
                        .map_err(|source| file.format_error(&self.stream, source))?;
                    first = Some((file.meta.timebase, file.defs.clone()));
                }
                Some((tb, defs)) => file.check_same_schema(&self.stream, *tb, defs)?,
            }
            for (col, def) in columns.iter_mut().zip(&file.defs) {
                file.push_block(&self.stream, &def.block, col)?;
            }
            timestamps.extend(file.timestamps(&self.stream)?);
        }
        let timebase = first.map_or(Timebase::TimestampsNs { dt_ns: 0 }, |f| f.0);
        Ok(StreamData::new(
            self.stream.clone(),
            timebase,
            timestamps,
            columns,
        )?)
    }
}

/// The channel a def describes (empty) and its index listing.
fn channel_of(def: &ChannelDef) -> Result<(ChannelData, ChannelEntry), FormatError> {
    let ch = def.to_channel(Vec::new())?;
    let entry = ChannelEntry {
        name: ch.id.clone(),
        lane: ch.lane.prefix().to_owned(),
        dtype: ch.dtype.code().to_owned(),
        shape: ch.shape.clone(),
    };
    Ok((ChannelData::new(ch.id, ch.lane, ch.dtype, ch.shape), entry))
}

/// One mapped chunk of a stream.
pub(crate) struct ChunkFile {
    pub chunk: ChunkRef,
    pub path: PathBuf,
    pub shard: Arc<MappedShard>,
    pub meta: EpisodeMeta,
    pub defs: Vec<ChannelDef>,
    /// Steps (T).
    pub length: u64,
}

impl ChunkFile {
    fn mismatch(&self, stream: &str, message: String) -> EpisodeDirError {
        EpisodeDirError::Chunk {
            stream: stream.to_owned(),
            chunk: self.chunk.chunk_index,
            uri: self.chunk.uri.clone(),
            message,
        }
    }

    fn format_error(&self, stream: &str, source: FormatError) -> EpisodeDirError {
        EpisodeDirError::format(stream, &self.path, source)
    }

    /// The channels as the index would list them.
    pub(crate) fn channel_entries(
        &self,
        stream: &str,
    ) -> Result<Vec<ChannelEntry>, EpisodeDirError> {
        self.defs
            .iter()
            .map(|d| channel_of(d).map(|e| e.1))
            .collect::<Result<_, _>>()
            .map_err(|source| self.format_error(stream, source))
    }

    fn check_same_schema(
        &self,
        stream: &str,
        timebase: Timebase,
        defs: &[ChannelDef],
    ) -> Result<(), EpisodeDirError> {
        if self.meta.timebase.type_name() != timebase.type_name() {
            return Err(self.mismatch(
                stream,
                format!(
                    "timebase {} differs from chunk 0's {}",
                    self.meta.timebase.type_name(),
                    timebase.type_name()
                ),
            ));
        }
        if self.defs.len() != defs.len() {
            return Err(self.mismatch(
                stream,
                format!("{} channels, chunk 0 has {}", self.defs.len(), defs.len()),
            ));
        }
        for (a, b) in self.defs.iter().zip(defs) {
            if a.block != b.block || a.dtype != b.dtype || a.shape != b.shape {
                return Err(self.mismatch(
                    stream,
                    format!(
                        "channel `{}` ({} {:?}) differs from chunk 0's `{}` ({} {:?})",
                        a.block, a.dtype, a.shape, b.block, b.dtype, b.shape
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Append block `block` to `col`: in place when it is stored uncompressed (its CRC
    /// checked), else decompressed (and CRC-checked) into memory.
    fn push_block(
        &self,
        stream: &str,
        block: &str,
        col: &mut ChannelData,
    ) -> Result<(), EpisodeDirError> {
        let seg = |source| EpisodeDirError::Segment {
            stream: stream.to_owned(),
            chunk: self.chunk.chunk_index,
            source,
        };
        match self.shard.view_verified::<u8>(block) {
            Ok(bytes) => {
                let base = self.shard.reader().source().as_ptr() as usize;
                let start = (bytes.as_ptr() as usize).saturating_sub(base);
                col.push_mapped(
                    Arc::clone(&self.shard),
                    start,
                    start + bytes.len(),
                    self.length,
                )
                .map_err(seg)
            }
            Err(FormatError::View { .. }) => {
                let data = self
                    .shard
                    .reader()
                    .read_block(block)
                    .map_err(|e| self.format_error(stream, e))?;
                col.push_owned(data, self.length).map_err(seg)
            }
            Err(e) => Err(self.format_error(stream, e)),
        }
    }

    /// The chunk's timestamps: `time/timestamps_ns`, or for a `ticks` chunk without it,
    /// the global step index times `dt_ns`.
    pub(crate) fn timestamps(&self, stream: &str) -> Result<Vec<i64>, EpisodeDirError> {
        let r = self.shard.reader();
        if r.contains(names::TIMESTAMPS_NS) {
            let bytes = r
                .read_block(names::TIMESTAMPS_NS)
                .map_err(|e| self.format_error(stream, e))?;
            if Some(bytes.len() as u64) != self.length.checked_mul(TIMESTAMP_BYTES as u64) {
                return Err(self.mismatch(
                    stream,
                    format!(
                        "block `{}` holds {} bytes, expected {} x 8",
                        names::TIMESTAMPS_NS,
                        bytes.len(),
                        self.length
                    ),
                ));
            }
            return Ok(bytes
                .chunks_exact(TIMESTAMP_BYTES)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect());
        }
        match self.meta.timebase {
            Timebase::Ticks { .. } => {
                let dt = i64::try_from(self.meta.timebase.dt_ns()).unwrap_or(i64::MAX);
                let start = self.chunk.timestep_range[0];
                (start..start + self.length)
                    .map(|k| {
                        i64::try_from(k)
                            .ok()
                            .and_then(|k| k.checked_mul(dt))
                            .ok_or_else(|| {
                                self.mismatch(
                                    stream,
                                    format!("tick {k} x dt_ns {dt} overflows i64"),
                                )
                            })
                    })
                    .collect()
            }
            Timebase::TimestampsNs { .. } => Err(self.mismatch(
                stream,
                format!(
                    "timebase timestamps_ns but no `{}` block",
                    names::TIMESTAMPS_NS
                ),
            )),
        }
    }
}
