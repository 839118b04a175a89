//! What an MCAP export is asked to do: chunk compression, chunk size, how pictures are
//! written, and how many episodes are exported at once.

/// The default target size of an MCAP chunk before compression (the `mcap` crate's own
/// default): 768 KiB.
pub const DEFAULT_CHUNK_SIZE: u64 = 768 * 1024;

/// The default JPEG quality of `--images jpeg`.
pub const DEFAULT_JPEG_QUALITY: u8 = 90;

/// How MCAP chunks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum McapCompression {
    /// Zstandard (the default; every MCAP reader supports it).
    #[default]
    Zstd,
    /// LZ4 frames.
    Lz4,
    /// Chunks stored uncompressed.
    None,
}

impl McapCompression {
    /// The spelling of `--compression` (`zstd`, `lz4`, `none`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Zstd => "zstd",
            Self::Lz4 => "lz4",
            Self::None => "none",
        }
    }
}

/// How picture channels (see [`crate::channel_kind`]) are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageMode {
    /// `foxglove.RawImage`: the recorded pixels unchanged (`rgb8`, `mono8`, `16UC1`,
    /// `32FC1`).
    #[default]
    Raw,
    /// `foxglove.CompressedImage`: colour and mono pictures as JPEG; depth stays lossless
    /// (u16 millimetres as a 16-bit PNG, f32 metres as `RawImage` `32FC1`).
    Jpeg,
    /// `foxglove.CompressedImage` PNG (lossless): colour, mono and u16 depth; f32 metres
    /// depth as `RawImage` `32FC1` (PNG has no float samples).
    Png,
}

impl ImageMode {
    /// The spelling of `--images` (`raw`, `jpeg`, `png`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Jpeg => "jpeg",
            Self::Png => "png",
        }
    }
}

/// Options of an MCAP export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McapOptions {
    pub compression: McapCompression,
    /// Target chunk size in bytes (uncompressed); a chunk is closed once it is larger.
    pub chunk_size: u64,
    pub images: ImageMode,
    /// JPEG quality 1..=100 for [`ImageMode::Jpeg`].
    pub jpeg_quality: u8,
    /// Replace `<episode>.mcap` files already in the output directory (else a non-empty
    /// output directory is refused).
    pub overwrite: bool,
    /// Episodes exported at once (at least 1).
    pub workers: usize,
}

impl Default for McapOptions {
    fn default() -> Self {
        Self {
            compression: McapCompression::default(),
            chunk_size: DEFAULT_CHUNK_SIZE,
            images: ImageMode::default(),
            jpeg_quality: DEFAULT_JPEG_QUALITY,
            overwrite: false,
            workers: 1,
        }
    }
}
