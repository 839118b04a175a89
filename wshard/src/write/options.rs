//! What a [`super::ShardWriter`] puts in the header and how much room it reserves.

use crate::codec::CompressionPolicy;
use crate::consts::{header_flags, role, DEFAULT_ALIGNMENT};

/// Header-level choices of a writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardOptions {
    pub role: u8,
    /// Header flags; the content-type bit is added automatically when an entry has one.
    pub flags: u16,
    /// 0, 16, 32 or 64.
    pub alignment: u8,
    /// The header `compression_default` byte.
    pub compression_default: u8,
    /// When a block handed in as bytes is worth compressing.
    pub policy: CompressionPolicy,
}

impl Default for ShardOptions {
    fn default() -> Self {
        Self::wshard()
    }
}

impl ShardOptions {
    /// The recommended profile for an episode (spec 6): role 5, flags 0x00A2, alignment 64.
    #[must_use]
    pub fn wshard() -> Self {
        Self {
            role: role::WSHARD,
            flags: header_flags::LITTLE_ENDIAN | header_flags::HAS_CHECKSUMS,
            alignment: DEFAULT_ALIGNMENT,
            compression_default: 0,
            policy: CompressionPolicy::go(),
        }
    }

    /// The same profile for a manifest (role 4).
    #[must_use]
    pub fn manifest() -> Self {
        Self {
            role: role::MANIFEST,
            ..Self::wshard()
        }
    }
}

/// How much room to leave before the data for the index and the string table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reserve {
    /// The names are known up front: reserve exactly, giving the tight layout of the goldens.
    Names(Vec<String>),
    /// Up to `entries` blocks whose names total at most `name_bytes` bytes.
    Capacity { entries: u32, name_bytes: u64 },
}

impl Reserve {
    /// Reserve exactly for these names.
    pub fn names<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Names(names.into_iter().map(Into::into).collect())
    }

    pub(crate) fn limits(&self) -> (u64, u64) {
        match self {
            Self::Names(names) => (
                names.len() as u64,
                names.iter().map(|n| n.len() as u64).sum(),
            ),
            Self::Capacity {
                entries,
                name_bytes,
            } => (u64::from(*entries), *name_bytes),
        }
    }
}
