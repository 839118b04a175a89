//! The one error type of the format library.
//!
//! Every variant carries what someone needs to debug a file without a debugger: the block
//! name or entry number, the file offset, and the values that disagreed.

use std::path::PathBuf;

/// Result alias for the format library.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing a shard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// An I/O call failed. `op` says which, `path` where (when known).
    #[error("{op}{}: {source}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Io {
        op: &'static str,
        path: Option<PathBuf>,
        #[source]
        source: std::io::Error,
    },

    /// The source ended before a structure it declares.
    #[error("truncated: {what} needs bytes {offset}..{end}, but the file has {len}")]
    Truncated {
        what: String,
        offset: u64,
        end: u64,
        len: u64,
    },

    #[error(
        "not a shard file: magic at offset 0 is {found:02x?}, expected 53 48 52 44 (\"SHRD\")"
    )]
    BadMagic { found: [u8; 4] },

    #[error("unsupported shard version {found} at offset 4 (only 2 is supported)")]
    UnsupportedVersion { found: u8 },

    #[error("wrong role {found:#04x} at offset 5, expected {expected:#04x}")]
    WrongRole { found: u8, expected: u8 },

    #[error("header field {field} at offset {offset}: {message}")]
    BadHeader {
        field: &'static str,
        offset: u64,
        message: String,
    },

    #[error("index entry {entry} (at offset {offset}): {message}")]
    BadEntry {
        entry: u32,
        offset: u64,
        message: String,
    },

    #[error("total_file_size in header is {header}, but the file is {actual} bytes")]
    FileSizeMismatch { header: u64, actual: u64 },

    #[error("{limit} limit exceeded: {value} > {max}")]
    LimitExceeded {
        limit: &'static str,
        value: u64,
        max: u64,
    },

    #[error("block `{name}` not found")]
    BlockNotFound { name: String },

    #[error("block `{name}`: crc32c stored {stored:#010x}, computed {computed:#010x}")]
    BlockCrc {
        name: String,
        stored: u32,
        computed: u32,
    },

    #[error("block `{name}` (entry {entry}): unknown codec, entry flags {flags:#06x}, header compression_default {default}")]
    UnknownCodec {
        name: String,
        entry: u32,
        flags: u16,
        default: u8,
    },

    #[error("block `{name}`: {codec} decompression failed at offset {offset} ({disk_size} bytes on disk, {orig_size} expected): {message}")]
    Decompress {
        name: String,
        codec: &'static str,
        offset: u64,
        disk_size: u64,
        orig_size: u64,
        message: String,
    },

    #[error("block `{name}`: {codec} compression failed: {message}")]
    Compress {
        name: String,
        codec: &'static str,
        message: String,
    },

    #[error("block `{name}`: cannot view as {type_name}: {message}")]
    View {
        name: String,
        type_name: &'static str,
        message: String,
    },

    #[error("block name `{name}` written twice")]
    DuplicateName { name: String },

    #[error("invalid block name {name:?}: {message}")]
    BadName { name: String, message: String },

    #[error("writer reserve exceeded: {message}")]
    ReserveExceeded { message: String },

    #[error("writer is failed after an earlier error; no more writes are accepted")]
    WriterFailed,

    #[error("block `{block}`: bad JSON: {message}")]
    BadJson { block: String, message: String },

    #[error("{block}: field `{field}`: {message}")]
    BadMeta {
        block: String,
        field: String,
        message: String,
    },

    #[error("episode: {message}")]
    BadEpisode { message: String },

    #[error("manifest: {message}")]
    BadManifest { message: String },

    #[error("manifest continuity: chunk index sequence has gaps or duplicates at position {position} (got {got}, expected {position})")]
    ChunkIndexSequence { position: usize, got: u64 },

    #[error("manifest continuity: timestep gap between chunk {prev_index} (ends {prev_end}) and chunk {next_index} (starts {next_start})")]
    TimestepGap {
        prev_index: u64,
        prev_end: u64,
        next_index: u64,
        next_start: u64,
    },

    #[error("manifest continuity: sum of chunk lengths ({sum}) != total_timesteps ({total})")]
    LengthSum { sum: u64, total: u64 },

    #[error("chunk {index} `{uri}`: sha256 stored {stored}, computed {computed}")]
    ChunkSha256 {
        index: u64,
        uri: String,
        stored: String,
        computed: String,
    },
}

impl FormatError {
    pub(crate) fn io(op: &'static str, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: None,
            source,
        }
    }

    pub(crate) fn io_at(op: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: Some(path.to_path_buf()),
            source,
        }
    }

    /// True when the error is an I/O failure rather than bad content.
    #[must_use]
    pub fn is_io(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}
