//! Display names for the numbers in a shard header and index.

use std::io::Read;
use std::path::Path;

use wshard::consts::{codec_code, header_flags, role};
use wshard::header::{ShardHeader, HEADER_BYTES};
use wshard::FormatError;

/// What kind of file a shard is, from its role byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Role 0x05: a WShard episode (or one chunk of a chunked episode).
    Episode,
    /// Role 0x04: a chunked episode's manifest.
    Manifest,
    /// Any other role, or a file whose header could not be read.
    Shard,
}

impl Kind {
    /// The kind of a shard with this role byte.
    #[must_use]
    pub fn from_role(r: u8) -> Self {
        match r {
            role::WSHARD => Self::Episode,
            role::MANIFEST => Self::Manifest,
            _ => Self::Shard,
        }
    }

    /// `episode`, `manifest` or `shard`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Episode => "episode",
            Self::Manifest => "manifest",
            Self::Shard => "shard",
        }
    }
}

/// The short name of a role byte (spec 2).
#[must_use]
pub fn role_name(r: u8) -> &'static str {
    match r {
        role::MOSH => "mosh",
        role::SAMPLE => "sample",
        role::GEMM_PANEL => "gemm-panel",
        role::MANIFEST => "manifest",
        role::WSHARD => "wshard",
        role::UMSH => "umsh",
        role::ROLE_07 => "role-07",
        role::COLUMN => "column",
        _ => "unknown",
    }
}

/// `0x05 wshard`.
#[must_use]
pub fn role_label(r: u8) -> String {
    format!("{r:#04x} {}", role_name(r))
}

/// The names of the header flag bits set in `flags` (spec 2.1); unknown bits as hex.
#[must_use]
pub fn header_flag_names(flags: u16) -> Vec<String> {
    let known = [
        (header_flags::COMPRESSED, "compressed"),
        (header_flags::LITTLE_ENDIAN, "little-endian"),
        (header_flags::BIG_ENDIAN, "big-endian"),
        (header_flags::HAS_SCHEMA, "schema"),
        (header_flags::HAS_CHECKSUMS, "checksums"),
        (header_flags::STREAMING, "streaming"),
        (header_flags::HAS_CONTENT_TYPES, "content-types"),
    ];
    let mut rest = flags;
    let mut out = Vec::new();
    for (bit, name) in known {
        if flags & bit != 0 {
            out.push(name.to_owned());
            rest &= !bit;
        }
    }
    if rest != 0 {
        out.push(format!("{rest:#06x}"));
    }
    out
}

/// `0x00a2 (little-endian, checksums, content-types)`.
#[must_use]
pub fn flags_label(flags: u16) -> String {
    let names = header_flag_names(flags);
    if names.is_empty() {
        format!("{flags:#06x}")
    } else {
        format!("{flags:#06x} ({})", names.join(", "))
    }
}

/// The name of a header `compression_default` code.
#[must_use]
pub fn codec_code_name(code: u8) -> &'static str {
    match code {
        codec_code::NONE => "none",
        codec_code::ZSTD => "zstd",
        codec_code::LZ4 => "lz4",
        _ => "unknown",
    }
}

/// A CRC32C as `0x` and eight hex digits.
#[must_use]
pub fn crc_hex(crc: u32) -> String {
    format!("{crc:#010x}")
}

/// Decode only the 64-byte header of `path`, for files whose index cannot be parsed.
/// `None` when the file is shorter or the magic or version is wrong.
#[must_use]
pub fn peek_header(path: &Path) -> Option<ShardHeader> {
    let mut buf = [0u8; HEADER_BYTES];
    std::fs::File::open(path).ok()?.read_exact(&mut buf).ok()?;
    ShardHeader::decode(&buf).ok()
}

/// An error's text for a message that already names `subject`: an I/O error about that
/// same path drops the repeated path, anything else is kept whole.
#[must_use]
pub fn error_about(subject: &Path, e: &FormatError) -> String {
    match e {
        FormatError::Io {
            op,
            path: Some(p),
            source,
        } if p == subject => format!("{op}: {source}"),
        other => other.to_string(),
    }
}

/// Errors that reading one block can give (I/O, truncation, codec, CRC). When
/// `ShardReader::check_all` has reported the bad block, the same failure seen again through
/// a structural read is not a new problem.
#[must_use]
pub fn is_block_read_error(e: &FormatError) -> bool {
    e.is_io()
        || matches!(
            e,
            FormatError::BlockCrc { .. }
                | FormatError::Decompress { .. }
                | FormatError::UnknownCodec { .. }
                | FormatError::Truncated { .. }
                | FormatError::LimitExceeded { .. }
                | FormatError::BadEntry { .. }
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(role_label(5), "0x05 wshard");
        assert_eq!(role_label(4), "0x04 manifest");
        assert_eq!(
            flags_label(0x00A2),
            "0x00a2 (little-endian, checksums, content-types)"
        );
        assert_eq!(flags_label(0), "0x0000");
        assert_eq!(flags_label(0x8002), "0x8002 (little-endian, 0x8000)");
        assert_eq!(crc_hex(0x17a7_9d5d), "0x17a79d5d");
        assert_eq!(Kind::from_role(4).as_str(), "manifest");
    }
}
