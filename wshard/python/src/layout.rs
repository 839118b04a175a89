//! Where a stream's data lies: for every chunk file of the stream's manifest, each channel's
//! block (and `time/timestamps_ns`) either stored raw, which the Python side views in place
//! through a memory map, or decoded here (compressed blocks: one copy).
//!
//! Everything is validated before Python maps a byte: the manifest (continuity, and with
//! `verify` every chunk's SHA-256), each chunk's index, role and metadata, that every chunk
//! holds the steps the manifest says and the channels chunk 0 has, every block's length for
//! its dtype, shape and step count, and with `verify` every block's CRC32C.

use std::path::{Path, PathBuf};

use wshard::codec::StoredCodec;
use wshard::consts::role;
use wshard::episode::meta::{parse_channels_meta, parse_episode_meta, parse_object, ChannelDef};
use wshard::episode::{names, DType, Lane, Timebase};
use wshard::episode_dir::index::ChannelEntry;
use wshard::manifest::Manifest;
use wshard::read::MappedShard;

use crate::errors::{io_kind, Kind, ReadError, ReadResult};

/// Bytes per timestamp (`time/timestamps_ns` is i64 little-endian).
const TIMESTAMP_BYTES: u64 = 8;
/// Bytes per reward (f32), for chunks whose `meta/episode` has no `length_T`.
const REWARD_BYTES: u64 = 4;

/// One block of one chunk.
#[derive(Debug)]
pub(crate) enum BlockData {
    /// Stored raw at this offset of the chunk file: viewed in place.
    InPlace { offset: u64, len: u64 },
    /// Stored compressed: the decoded, CRC-checked bytes.
    Decoded(Vec<u8>),
}

/// One channel as chunk 0 of the stream describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChannelSpec {
    /// The channel's name: its block name without the `signal/` or `action/` prefix.
    pub name: String,
    pub block: String,
    /// `signal` or `action`.
    pub lane: &'static str,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

impl ChannelSpec {
    fn from_def(def: &ChannelDef) -> wshard::Result<Self> {
        let lane = def.lane()?;
        let name = def
            .block
            .strip_prefix(lane.prefix())
            .and_then(|s| s.strip_prefix('/'))
            .unwrap_or(&def.id)
            .to_owned();
        Ok(Self {
            name,
            block: def.block.clone(),
            lane: lane.prefix(),
            dtype: def.dtype,
            shape: def.shape.clone(),
        })
    }

    /// A channel as the episode index lists it (for a stream without chunks yet).
    pub(crate) fn from_entry(e: &ChannelEntry) -> ReadResult<Self> {
        let bad = |what: &str| {
            ReadError::new(
                Kind::Invalid,
                format!("channel `{}`: unknown {what}", e.name),
            )
            .field(e.name.clone())
        };
        let lane = match e.lane.as_str() {
            "signal" => Lane::Signal,
            "action" => Lane::Action,
            _ => return Err(bad("lane")),
        };
        Ok(Self {
            name: e.name.clone(),
            block: format!("{}/{}", lane.prefix(), e.name),
            lane: lane.prefix(),
            dtype: DType::parse(&e.dtype).map_err(|_| bad("dtype"))?,
            shape: e.shape.clone(),
        })
    }

    /// Bytes per step, `None` on overflow.
    fn step_bytes(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(self.dtype.size() as u64, |acc, &d| acc.checked_mul(d))
    }
}

/// What identifies the file that was validated, so that the Python side can check it maps
/// the same file (device, inode, length), taken before the file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
}

impl FileIdentity {
    fn of(path: &Path) -> ReadResult<Self> {
        let m = std::fs::metadata(path)
            .map_err(|e| ReadError::new(io_kind(&e), format!("stat: {e}")).at(path))?;
        Ok(Self::from_metadata(&m))
    }

    #[cfg(unix)]
    fn from_metadata(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
        }
    }

    #[cfg(not(unix))]
    fn from_metadata(m: &std::fs::Metadata) -> Self {
        Self {
            dev: 0,
            ino: 0,
            len: m.len(),
        }
    }
}

/// One chunk file of a stream.
#[derive(Debug)]
pub(crate) struct ChunkLayout {
    pub path: PathBuf,
    pub identity: FileIdentity,
    pub steps: u64,
    /// `None` when the stream has no `time/timestamps_ns` (a ticks timebase without it).
    pub timestamps: Option<BlockData>,
    /// One per [`StreamLayout::channels`], same order.
    pub channels: Vec<BlockData>,
}

/// A whole stream.
#[derive(Debug)]
pub(crate) struct StreamLayout {
    pub channels: Vec<ChannelSpec>,
    pub timebase: Timebase,
    pub steps: u64,
    pub chunks: Vec<ChunkLayout>,
}

/// Read the layout of the stream whose manifest is `manifest_path`.
pub(crate) fn read_stream_layout(manifest_path: &Path, verify: bool) -> ReadResult<StreamLayout> {
    let manifest =
        Manifest::read_file(manifest_path).map_err(|e| ReadError::format(&e, manifest_path))?;
    manifest
        .validate_continuity()
        .map_err(|e| ReadError::format(&e, manifest_path))?;
    let dir = manifest_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if verify {
        check_hashes(&manifest, &dir)?;
    }
    let mut refs = manifest.chunks.clone();
    refs.sort_by_key(|c| c.chunk_index);
    let mut stream: Option<StreamLayout> = None;
    for c in &refs {
        let path = dir.join(&c.uri);
        let identity = FileIdentity::of(&path)?;
        let shard = MappedShard::open(&path).map_err(|e| ReadError::format(&e, &path))?;
        let head = chunk_head(&shard).map_err(|e| ReadError::format(&e, &path))?;
        if head.steps != c.length_t {
            return Err(ReadError::new(
                Kind::Invalid,
                format!(
                    "chunk {} holds {} steps, the manifest says {}",
                    c.chunk_index, head.steps, c.length_t
                ),
            )
            .at(&path)
            .field("length_T"));
        }
        let s = stream.get_or_insert_with(|| StreamLayout {
            channels: head.channels.clone(),
            timebase: head.timebase,
            steps: 0,
            chunks: Vec::new(),
        });
        if c.chunk_index > 0 {
            same_as_chunk0(s, &head, &path)?;
        }
        let has_ts = matches!(s.timebase, Timebase::TimestampsNs { .. }) || head.has_timestamps;
        let timestamps = if has_ts {
            Some(block(
                &shard,
                names::TIMESTAMPS_NS,
                TIMESTAMP_BYTES,
                head.steps,
                verify,
                &path,
            )?)
        } else {
            None
        };
        let mut channels = Vec::with_capacity(s.channels.len());
        for spec in &s.channels {
            let step = spec.step_bytes().ok_or_else(|| {
                ReadError::new(
                    Kind::Invalid,
                    format!("channel `{}`: shape {:?} overflows", spec.name, spec.shape),
                )
                .at(&path)
                .field(spec.block.clone())
            })?;
            channels.push(block(&shard, &spec.block, step, head.steps, verify, &path)?);
        }
        s.steps += head.steps;
        s.chunks.push(ChunkLayout {
            path,
            identity,
            steps: head.steps,
            timestamps,
            channels,
        });
    }
    stream.ok_or_else(|| {
        ReadError::new(Kind::Invalid, "the manifest lists no chunks")
            .at(manifest_path)
            .field("chunks")
    })
}

/// Compare every chunk's SHA-256 with the manifest; the first bad chunk is the error.
fn check_hashes(manifest: &Manifest, dir: &Path) -> ReadResult<()> {
    let Some(bad) = manifest
        .check_chunk_files(dir)
        .into_iter()
        .find(|c| c.error.is_some())
    else {
        return Ok(());
    };
    let path = dir.join(&bad.uri);
    let kind = match (&bad.computed_sha256, path.exists()) {
        (Some(_), _) => Kind::Corrupt,
        (None, false) => Kind::NotFound,
        (None, true) => Kind::Io,
    };
    Err(ReadError::new(kind, bad.error.unwrap_or_default())
        .at(&path)
        .field("sha256"))
}

/// What one chunk's metadata says.
struct ChunkHead {
    steps: u64,
    timebase: Timebase,
    channels: Vec<ChannelSpec>,
    has_timestamps: bool,
}

fn chunk_head(shard: &MappedShard) -> wshard::Result<ChunkHead> {
    let r = shard.reader();
    r.expect_role(role::WSHARD)?;
    let wshard = parse_object(names::META_WSHARD, &r.read_block(names::META_WSHARD)?)?;
    let ep = parse_object(names::META_EPISODE, &r.read_block(names::META_EPISODE)?)?;
    let ch = parse_object(names::META_CHANNELS, &r.read_block(names::META_CHANNELS)?)?;
    let meta = parse_episode_meta(&ep, &wshard)?;
    let steps = match meta.length {
        Some(t) => t,
        None => r.entry(names::REWARD)?.1.orig_size / REWARD_BYTES,
    };
    let channels = parse_channels_meta(&ch)?
        .iter()
        .map(ChannelSpec::from_def)
        .collect::<wshard::Result<Vec<_>>>()?;
    Ok(ChunkHead {
        steps,
        timebase: meta.timebase,
        channels,
        has_timestamps: r.contains(names::TIMESTAMPS_NS),
    })
}

/// A later chunk must describe the same channels as chunk 0 and agree on timestamps.
fn same_as_chunk0(s: &StreamLayout, head: &ChunkHead, path: &Path) -> ReadResult<()> {
    let differs = |what: String, field: String| {
        Err(
            ReadError::new(Kind::Invalid, format!("{what} differs from chunk 0"))
                .at(path)
                .field(field),
        )
    };
    if head.channels.len() != s.channels.len() {
        return differs("the channel list".into(), names::META_CHANNELS.into());
    }
    for (a, b) in s.channels.iter().zip(&head.channels) {
        if a != b {
            return differs(format!("channel `{}`", b.name), b.block.clone());
        }
    }
    let ts0 = matches!(s.timebase, Timebase::TimestampsNs { .. })
        || s.chunks.first().is_some_and(|c| c.timestamps.is_some());
    let ts = matches!(s.timebase, Timebase::TimestampsNs { .. }) || head.has_timestamps;
    if ts0 != ts {
        return differs(
            "the presence of time/timestamps_ns".into(),
            names::TIMESTAMPS_NS.into(),
        );
    }
    Ok(())
}

/// Locate (raw) or decode (compressed) block `name` of `steps` steps of `step` bytes.
fn block(
    shard: &MappedShard,
    name: &str,
    step: u64,
    steps: u64,
    verify: bool,
    path: &Path,
) -> ReadResult<BlockData> {
    let fmt = |e: wshard::FormatError| ReadError::format(&e, path);
    let r = shard.reader();
    let (i, e) = r.entry(name).map_err(fmt)?;
    let want = step.checked_mul(steps);
    if want != Some(e.orig_size) {
        return Err(ReadError::new(
            Kind::Invalid,
            format!(
                "block `{name}`: {} bytes, expected {} ({step} per step x {steps} steps)",
                e.orig_size,
                want.map_or_else(|| "an overflow".to_owned(), |w| w.to_string())
            ),
        )
        .at(path)
        .field(name));
    }
    let raw = r.index().stored_codec(i) == Some(StoredCodec::Raw) && e.disk_size == e.orig_size;
    if !raw {
        return r.read_block(name).map(BlockData::Decoded).map_err(fmt);
    }
    let (offset, len) = (e.data_offset, e.disk_size);
    if verify {
        shard.view_verified::<u8>(name).map_err(fmt)?;
    } else {
        shard.bytes(name).map_err(fmt)?;
    }
    Ok(BlockData::InPlace { offset, len })
}
