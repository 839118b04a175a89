//! `wshard inspect FILE`: the header, one row per block, and what the meta blocks say.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wshard::codec::StoredCodec;
use wshard::consts::role;
use wshard::entry::{content_type, IndexEntry};
use wshard::header::ShardHeader;
use wshard::manifest::Manifest;
use wshard::read::{BlockCheck, ReadAt, ShardReader};

use crate::shard_view::describe::is_block_read_error;
use crate::shard_view::episode_view::{EpisodeView, TensorType};

/// The name prefix of the blocks that describe a shard (read even when the others are not).
const META_PREFIX: &str = "meta/";

/// What a block holds, as far as the file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// A `meta/*` block or one with the JSON content type.
    Json,
    /// A tensor whose dtype and shape the episode's meta blocks give.
    Tensor(TensorType),
    /// Nothing in the file describes it.
    Unknown,
}

/// One block of the index, with what checking it found.
#[derive(Clone, Debug)]
pub struct BlockRow {
    pub index: usize,
    pub name: String,
    pub kind: BlockKind,
    /// `None` when the entry flags name no codec the readers know.
    pub codec: Option<StoredCodec>,
    pub entry: IndexEntry,
    /// `None` when the block could not be decoded.
    pub computed_crc: Option<u32>,
    /// Whether readers check this block's CRC (header flag 0x20 or a non-zero CRC).
    pub crc_checked: bool,
    /// `None` when the block decodes and its CRC matches (or was not read).
    pub error: Option<String>,
    /// False when the block was not read (a remote shard: only its index and `meta/*`
    /// blocks are).
    pub read: bool,
}

impl BlockRow {
    /// `ok`, `BAD`, `n/a` for a good block whose CRC readers do not check, or `unread`.
    #[must_use]
    pub fn crc_label(&self) -> &'static str {
        match (&self.error, self.crc_checked) {
            _ if !self.read => "unread",
            (Some(_), _) => "BAD",
            (None, true) => "ok",
            (None, false) => "n/a",
        }
    }
}

/// Why a `meta/*` block could not be shown as JSON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaBlockError {
    /// The block could not be read (I/O, CRC, codec).
    #[error(transparent)]
    Read(#[from] wshard::FormatError),
    /// The block's bytes are not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// A `meta/*` block decoded as JSON (or why it could not be).
#[derive(Debug)]
pub struct MetaBlock {
    pub name: String,
    pub value: Result<Value, MetaBlockError>,
}

/// Everything `wshard inspect` shows about one file.
#[derive(Debug)]
pub struct Inspection {
    pub path: PathBuf,
    pub header: ShardHeader,
    /// Real length of the file.
    pub file_len: u64,
    /// For a WShard episode (role 0x05).
    pub episode: Option<EpisodeView>,
    /// For a manifest (role 0x04), when it parses.
    pub manifest: Option<Manifest>,
    pub blocks: Vec<BlockRow>,
    /// Problems that are not a single block's: unreadable meta, a manifest that does not parse.
    pub notes: Vec<String>,
    /// Every `meta/*` block's JSON; filled only when asked for (`--verbose`).
    pub meta: Vec<MetaBlock>,
}

/// How `wshard inspect` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InspectOptions {
    /// Also print the JSON of the `meta/*` blocks.
    pub verbose: bool,
    /// Print one JSON object instead of text.
    pub json: bool,
}

impl Inspection {
    /// Open `path` and gather its header, blocks and meta.
    ///
    /// # Errors
    /// Errors opening the file or parsing its header and index; a bad block is not an error
    /// here but a row with [`BlockRow::error`] set.
    pub fn read(path: &Path, with_meta: bool) -> wshard::Result<Self> {
        let reader = ShardReader::open(path)?;
        Ok(Self::from_reader(&reader, path, with_meta, true))
    }

    /// Gather what an opened shard holds; `path` is what to call it. Without
    /// `check_blocks` only the `meta/*` blocks are read and checked (a remote shard: every
    /// other block would be one more request) and the other rows are `unread`.
    #[must_use]
    pub fn from_reader<R: ReadAt>(
        reader: &ShardReader<R>,
        path: &Path,
        with_meta: bool,
        check_blocks: bool,
    ) -> Self {
        let header = *reader.header();
        let mut notes = Vec::new();
        let episode = (header.role == role::WSHARD).then(|| EpisodeView::read(reader));
        if let Some(view) = &episode {
            notes.extend(view.notes.iter().cloned());
        }
        let manifest = if header.role == role::MANIFEST {
            match Manifest::read(reader) {
                Ok(m) => Some(m),
                Err(e) if is_block_read_error(&e) => None,
                Err(e) => {
                    notes.push(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        let index = reader.index();
        let checks = if check_blocks {
            reader.check_all().into_iter().map(|c| (c, true)).collect()
        } else {
            meta_checks(reader)
        };
        let blocks = checks
            .into_iter()
            .zip(index.entries())
            .map(|((check, read), entry)| {
                let kind = if check.name.starts_with(META_PREFIX)
                    || entry.content_type == content_type::JSON
                {
                    BlockKind::Json
                } else {
                    episode
                        .as_ref()
                        .and_then(|v| v.tensors.get(&check.name))
                        .map_or(BlockKind::Unknown, |t| BlockKind::Tensor(t.clone()))
                };
                BlockRow {
                    index: check.entry,
                    crc_checked: index.crc_checked(check.entry),
                    name: check.name,
                    kind,
                    codec: check.codec,
                    entry: *entry,
                    computed_crc: check.computed_crc,
                    error: check.error,
                    read,
                }
            })
            .collect();
        let meta = if with_meta {
            (0..index.len())
                .filter_map(|i| {
                    let name = index.name(i)?;
                    name.starts_with(META_PREFIX).then(|| MetaBlock {
                        name: name.to_owned(),
                        value: reader
                            .read_entry(i)
                            .map_err(MetaBlockError::from)
                            .and_then(|bytes| Ok(serde_json::from_slice(&bytes)?)),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        Self {
            path: path.to_path_buf(),
            header,
            file_len: index.file_len(),
            episode,
            manifest,
            blocks,
            notes,
            meta,
        }
    }

    /// True when every block decodes and matches its CRC and nothing else was wrong.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.notes.is_empty() && self.blocks.iter().all(|b| b.error.is_none())
    }
}

/// One row per block, each with whether it was read: the `meta/*` blocks are read and
/// checked, the others are not.
fn meta_checks<R: ReadAt>(reader: &ShardReader<R>) -> Vec<(BlockCheck, bool)> {
    let index = reader.index();
    index
        .entries()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let name = index.name(i).unwrap_or_default();
            if name.starts_with(META_PREFIX) {
                return (reader.check_entry(i), true);
            }
            let unread = BlockCheck {
                entry: i,
                name: name.to_owned(),
                codec: index.stored_codec(i),
                disk_size: e.disk_size,
                orig_size: e.orig_size,
                stored_crc: e.checksum,
                computed_crc: None,
                error: None,
            };
            (unread, false)
        })
        .collect()
}
