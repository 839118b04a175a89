//! Compressing blocks away from the writer, e.g. on a worker pool, then handing them to
//! [`super::ShardWriter::write_precompressed`] in order.

use super::writer::{BlockOptions, Precompressed};
use crate::codec::{compress_into, Codec, CompressionPolicy};
use crate::error::Result;
use crate::hash::crc32c;

/// A block ready to be written as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedBlock<'a> {
    pub name: String,
    /// The bytes to store: compressed when that paid off, else the original bytes (borrowed).
    pub stored: std::borrow::Cow<'a, [u8]>,
    pub meta: Precompressed,
}

/// Apply the same rules as [`super::ShardWriter::write_block`] (policy, strictly smaller,
/// CRC32C of the original) to one block, without a writer. Raw blocks stay borrowed.
///
/// # Errors
/// [`crate::FormatError::Compress`] when the codec fails.
pub fn prepare_block<'a>(
    name: &str,
    data: &'a [u8],
    opts: BlockOptions,
    policy: &CompressionPolicy,
) -> Result<PreparedBlock<'a>> {
    prepare_block_with_crc(name, data, opts, policy, None)
}

/// [`prepare_block`] for a caller that already has the CRC32C of `data` (`known_crc`), e.g.
/// one that computed it piece by piece as the bytes arrived, while they were in cache: the
/// CRC is then not computed again. The caller is trusted: a wrong value makes the block fail
/// its check on every read. `None` computes it here.
///
/// # Errors
/// [`crate::FormatError::Compress`] when the codec fails.
pub fn prepare_block_with_crc<'a>(
    name: &str,
    data: &'a [u8],
    opts: BlockOptions,
    policy: &CompressionPolicy,
    known_crc: Option<u32>,
) -> Result<PreparedBlock<'a>> {
    let crc = known_crc.unwrap_or_else(|| crc32c(data));
    let orig = data.len() as u64;
    let mut codec = Codec::None;
    let mut stored = std::borrow::Cow::Borrowed(data);
    if policy.should_try(opts.codec, orig) {
        let mut out = Vec::new();
        compress_into(opts.codec, data, &mut out, name)?;
        if policy.keep(orig, out.len() as u64) {
            codec = opts.codec;
            stored = std::borrow::Cow::Owned(out);
        }
    }
    Ok(PreparedBlock {
        name: name.to_owned(),
        stored,
        meta: Precompressed {
            codec,
            orig_size: orig,
            crc32c: crc,
            content_type: opts.content_type,
        },
    })
}
