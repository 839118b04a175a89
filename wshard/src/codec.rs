//! Per-block codecs (spec 8): none, zstd (one standard frame), LZ4 raw block.

use crate::consts::{
    codec_code, entry_flags, GO_KEEP_RATIO_DEN, GO_KEEP_RATIO_NUM, GO_MIN_COMPRESS_LEN,
    MAX_DECOMPRESS_BYTES, MAX_LZ4_BLOCK_BYTES,
};
use crate::error::{FormatError, Result};

/// zstd level used when none is given: the level Go's `SpeedDefault` and MCAP approximate.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// How one block is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Codec {
    #[default]
    None,
    /// One standard zstd frame with the content size recorded.
    Zstd { level: i32 },
    /// LZ4 raw block: no frame, no size prefix.
    Lz4,
}

impl Codec {
    /// zstd at [`DEFAULT_ZSTD_LEVEL`].
    #[must_use]
    pub fn zstd() -> Self {
        Self::Zstd {
            level: DEFAULT_ZSTD_LEVEL,
        }
    }

    /// The entry flag bits for a block stored with this codec.
    #[must_use]
    pub fn entry_flags(self) -> u16 {
        match self {
            Self::None => 0,
            Self::Zstd { .. } => entry_flags::COMPRESSED | entry_flags::ZSTD,
            Self::Lz4 => entry_flags::COMPRESSED | entry_flags::LZ4,
        }
    }

    /// The header `compression_default` code.
    #[must_use]
    pub fn header_code(self) -> u8 {
        match self {
            Self::None => codec_code::NONE,
            Self::Zstd { .. } => codec_code::ZSTD,
            Self::Lz4 => codec_code::LZ4,
        }
    }

    /// A short name for display: `none`, `zstd`, `lz4`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Zstd { .. } => "zstd",
            Self::Lz4 => "lz4",
        }
    }

    /// Parse `none`, `lz4`, `zstd` or `zstd-N`.
    ///
    /// # Errors
    /// [`FormatError::BadMeta`] naming the text when it is none of these.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "none" | "raw" => Ok(Self::None),
            "lz4" => Ok(Self::Lz4),
            "zstd" => Ok(Self::zstd()),
            other => match other.strip_prefix("zstd-").map(str::parse::<i32>) {
                Some(Ok(level)) if (1..=22).contains(&level) => Ok(Self::Zstd { level }),
                _ => Err(FormatError::BadMeta {
                    block: "codec".into(),
                    field: "codec".into(),
                    message: format!(
                        "unknown codec {other:?} (expected none, lz4, zstd or zstd-1..zstd-22)"
                    ),
                }),
            },
        }
    }
}

/// The codec a stored block was written with, decided from its entry flags (spec 8.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredCodec {
    Raw,
    Zstd,
    Lz4,
}

impl StoredCodec {
    /// Decide as the readers do: LZ4 bit first, then zstd, then the header default when only
    /// 0x0001 is set. `None` when 0x0001 is set and no codec can be found.
    #[must_use]
    pub fn from_flags(
        flags: u16,
        header_default: u8,
        disk_size: u64,
        orig_size: u64,
    ) -> Option<Self> {
        if flags & entry_flags::COMPRESSED == 0 {
            return Some(Self::Raw);
        }
        if flags & entry_flags::LZ4 != 0 {
            return Some(Self::Lz4);
        }
        if flags & entry_flags::ZSTD != 0 {
            return Some(Self::Zstd);
        }
        match header_default {
            codec_code::ZSTD => Some(Self::Zstd),
            codec_code::LZ4 => Some(Self::Lz4),
            // Python treats "compressed" with equal sizes as raw.
            _ if disk_size == orig_size => Some(Self::Raw),
            _ => None,
        }
    }

    /// Display name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Raw => "none",
            Self::Zstd => "zstd",
            Self::Lz4 => "lz4",
        }
    }
}

/// When a block is worth compressing (spec 8.3). The defaults are Go-lib's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressionPolicy {
    /// Try to compress only blocks strictly longer than this.
    pub min_len_exclusive: u64,
    /// Keep the compressed form only if `compressed * den < orig * num` would hold with
    /// Go's integer rule `compressed < orig * num / den`. Use `num == den` for "strictly smaller".
    pub keep_ratio_num: u64,
    pub keep_ratio_den: u64,
}

impl Default for CompressionPolicy {
    fn default() -> Self {
        Self::go()
    }
}

impl CompressionPolicy {
    /// Go-lib: try above 256 bytes, keep below 90 %.
    #[must_use]
    pub fn go() -> Self {
        Self {
            min_len_exclusive: GO_MIN_COMPRESS_LEN,
            keep_ratio_num: GO_KEEP_RATIO_NUM,
            keep_ratio_den: GO_KEEP_RATIO_DEN,
        }
    }

    /// The golden generator: any size, keep when strictly smaller.
    #[must_use]
    pub fn any_smaller() -> Self {
        Self {
            min_len_exclusive: 0,
            keep_ratio_num: 1,
            keep_ratio_den: 1,
        }
    }

    /// Should a block of `len` bytes be tried at all with `codec`?
    #[must_use]
    pub fn should_try(&self, codec: Codec, len: u64) -> bool {
        match codec {
            Codec::None => false,
            Codec::Lz4 if len > MAX_LZ4_BLOCK_BYTES => false,
            _ => len > self.min_len_exclusive && len <= MAX_DECOMPRESS_BYTES && len > 0,
        }
    }

    /// Keep a compressed result of `compressed` bytes for an original of `orig` bytes?
    /// Always requires strictly smaller, whatever the ratio; then Go's integer rule
    /// `compressed < orig * num / den`.
    #[must_use]
    pub fn keep(&self, orig: u64, compressed: u64) -> bool {
        if compressed >= orig {
            return false;
        }
        if self.keep_ratio_num >= self.keep_ratio_den {
            return true;
        }
        let limit = u128::from(orig) * u128::from(self.keep_ratio_num)
            / u128::from(self.keep_ratio_den.max(1));
        u128::from(compressed) < limit
    }
}

/// Compress `data` with `codec` into `out` (cleared first).
///
/// # Errors
/// [`FormatError::Compress`] naming `block` when the codec fails.
pub fn compress_into(codec: Codec, data: &[u8], out: &mut Vec<u8>, block: &str) -> Result<()> {
    out.clear();
    match codec {
        Codec::None => out.extend_from_slice(data),
        Codec::Zstd { level } => {
            let bound = zstd::zstd_safe::compress_bound(data.len());
            out.reserve(bound);
            with_zstd_compressor(level, |c| c.compress_to_buffer(data, out)).map_err(|e| {
                FormatError::Compress {
                    name: block.to_owned(),
                    codec: "zstd",
                    message: e.to_string(),
                }
            })?;
        }
        Codec::Lz4 => {
            // `compress` sizes its output for the worst case without writing it first, so
            // only the pages the compressed bytes land on are touched (zero-filling the bound
            // here would make a whole block's worth of memory resident).
            *out = lz4_flex::block::compress(data);
        }
    }
    Ok(())
}

thread_local! {
    /// One zstd context per thread and level, reused: a fresh context costs about 20 % on
    /// 64 KiB blocks.
    static ZSTD_CTX: std::cell::RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

fn with_zstd_compressor<T>(
    level: i32,
    f: impl FnOnce(&mut zstd::bulk::Compressor<'static>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    ZSTD_CTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().map(|(l, _)| *l) != Some(level) {
            *slot = Some((level, zstd::bulk::Compressor::new(level)?));
        }
        match slot.as_mut() {
            Some((_, c)) => f(c),
            None => Err(std::io::Error::other("zstd context missing")),
        }
    })
}

/// Where a block lives, for error messages.
#[derive(Clone, Copy, Debug)]
pub struct BlockLocation<'a> {
    pub name: &'a str,
    pub offset: u64,
}

/// One LZ4 sequence (token, 2-byte offset, length bytes) yields at most 255 bytes per input
/// byte; literals yield one.
const LZ4_MAX_EXPANSION: u64 = 255;
/// A zstd block yields at most 128 KiB (the format's block maximum) and needs at least its
/// 3-byte block header: at most 43,691 bytes per input byte.
const ZSTD_MAX_EXPANSION: u64 = (128 * 1024_u64).div_ceil(3);

/// Why `disk` cannot decode to `orig_size` bytes, when that is certain without decoding.
fn impossible_size(codec: StoredCodec, disk: &[u8], orig_size: u64) -> Option<String> {
    let disk_len = disk.len() as u64;
    let ratio = match codec {
        StoredCodec::Raw => return None,
        StoredCodec::Lz4 => LZ4_MAX_EXPANSION,
        StoredCodec::Zstd => ZSTD_MAX_EXPANSION,
    };
    let max = disk_len.saturating_mul(ratio);
    if orig_size > max {
        return Some(format!(
            "{disk_len} stored bytes cannot decode to more than {max} bytes"
        ));
    }
    if codec == StoredCodec::Zstd {
        // A single frame that records its content size must record orig_size.
        let single = zstd::zstd_safe::find_frame_compressed_size(disk).ok() == Some(disk.len());
        if let (true, Ok(Some(n))) = (single, zstd::zstd_safe::get_frame_content_size(disk)) {
            if n != orig_size {
                return Some(format!(
                    "the zstd frame header records a content size of {n}"
                ));
            }
        }
    }
    None
}

/// Decompress a stored block into exactly `orig_size` bytes.
///
/// # Errors
/// [`FormatError::LimitExceeded`] when `orig_size` is above `max_orig`, and
/// [`FormatError::Decompress`] when the codec fails or yields another size.
pub fn decompress(
    codec: StoredCodec,
    disk: &[u8],
    orig_size: u64,
    max_orig: u64,
    at: BlockLocation<'_>,
) -> Result<Vec<u8>> {
    let fail = |codec: &'static str, message: String| FormatError::Decompress {
        name: at.name.to_owned(),
        codec,
        offset: at.offset,
        disk_size: disk.len() as u64,
        orig_size,
        message,
    };
    match codec {
        StoredCodec::Raw => Ok(disk.to_vec()),
        StoredCodec::Zstd | StoredCodec::Lz4 => {
            if orig_size > max_orig {
                return Err(FormatError::LimitExceeded {
                    limit: "decompressed block size",
                    value: orig_size,
                    max: max_orig,
                });
            }
            // Reject sizes the stored bytes cannot decode to before reserving them, so a few
            // hostile bytes cannot make the reader reserve up to the limit.
            if let Some(message) = impossible_size(codec, disk, orig_size) {
                return Err(fail(codec.name(), message));
            }
            let cap = usize::try_from(orig_size)
                .map_err(|_| fail(codec.name(), "size does not fit in memory".into()))?;
            if codec == StoredCodec::Zstd {
                let mut out = Vec::with_capacity(cap);
                // The buffer's capacity is the limit: a frame that decodes to more fails here.
                zstd::bulk::Decompressor::new()
                    .and_then(|mut dec| dec.decompress_to_buffer(disk, &mut out))
                    .map_err(|e| fail("zstd", e.to_string()))?;
                if out.len() != cap {
                    return Err(fail("zstd", format!("decoded {} bytes", out.len())));
                }
                Ok(out)
            } else {
                let mut out = vec![0u8; cap];
                let n = lz4_flex::block::decompress_into(disk, &mut out)
                    .map_err(|e| fail("lz4", e.to_string()))?;
                if n != cap {
                    return Err(fail("lz4", format!("decoded {n} bytes")));
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> BlockLocation<'static> {
        BlockLocation {
            name: "b",
            offset: 0,
        }
    }

    #[test]
    fn codecs_round_trip() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        for codec in [Codec::zstd(), Codec::Lz4, Codec::Zstd { level: 1 }] {
            let mut out = Vec::new();
            compress_into(codec, &data, &mut out, "b").unwrap();
            assert!(out.len() < data.len());
            let stored = StoredCodec::from_flags(
                codec.entry_flags(),
                0,
                out.len() as u64,
                data.len() as u64,
            )
            .unwrap();
            let back = decompress(stored, &out, data.len() as u64, 1 << 30, at()).unwrap();
            assert_eq!(back, data);
        }
    }

    #[test]
    fn lz4_is_a_raw_block_without_size_prefix() {
        let data = vec![7u8; 1000];
        let mut out = Vec::new();
        compress_into(Codec::Lz4, &data, &mut out, "b").unwrap();
        assert_eq!(lz4_flex::block::decompress(&out, 1000).unwrap(), data);
    }

    #[test]
    fn decompress_rejects_wrong_size_and_limit() {
        let data = vec![1u8; 1000];
        let mut out = Vec::new();
        compress_into(Codec::zstd(), &data, &mut out, "b").unwrap();
        assert!(matches!(
            decompress(StoredCodec::Zstd, &out, 999, 1 << 30, at()),
            Err(FormatError::Decompress { .. })
        ));
        assert!(matches!(
            decompress(StoredCodec::Zstd, &out, 1001, 1 << 30, at()),
            Err(FormatError::Decompress { .. })
        ));
        assert!(matches!(
            decompress(StoredCodec::Zstd, &out, 1000, 10, at()),
            Err(FormatError::LimitExceeded { .. })
        ));
        compress_into(Codec::Lz4, &data, &mut out, "b").unwrap();
        assert!(matches!(
            decompress(StoredCodec::Lz4, &out, 999, 1 << 30, at()),
            Err(FormatError::Decompress { .. })
        ));
    }

    #[test]
    fn codec_fallback_to_header_default() {
        assert_eq!(
            StoredCodec::from_flags(0x0001, 1, 10, 20),
            Some(StoredCodec::Zstd)
        );
        assert_eq!(
            StoredCodec::from_flags(0x0001, 2, 10, 20),
            Some(StoredCodec::Lz4)
        );
        assert_eq!(
            StoredCodec::from_flags(0x0001, 0, 20, 20),
            Some(StoredCodec::Raw)
        );
        assert_eq!(StoredCodec::from_flags(0x0001, 0, 10, 20), None);
        assert_eq!(
            StoredCodec::from_flags(0x0005, 1, 10, 20),
            Some(StoredCodec::Lz4)
        );
    }

    #[test]
    fn policy_thresholds_match_go() {
        let go = CompressionPolicy::go();
        assert!(!go.should_try(Codec::zstd(), 256));
        assert!(go.should_try(Codec::zstd(), 257));
        // 1000 * 9 / 10 = 900: 899 kept, 900 not.
        assert!(go.keep(1000, 899));
        assert!(!go.keep(1000, 900));
        let any = CompressionPolicy::any_smaller();
        assert!(any.should_try(Codec::zstd(), 1));
        assert!(any.keep(100, 99));
        assert!(!any.keep(100, 100));
        assert!(!any.should_try(Codec::Lz4, MAX_LZ4_BLOCK_BYTES + 1));
    }

    #[test]
    fn parse_codec_names() {
        assert_eq!(Codec::parse("zstd-1").unwrap(), Codec::Zstd { level: 1 });
        assert_eq!(Codec::parse("lz4").unwrap(), Codec::Lz4);
        assert!(Codec::parse("gzip").is_err());
    }
}
