//! Messages of picture channels ([`crate::channel_kind`]): `foxglove.RawImage` with the
//! recorded pixels, or `foxglove.CompressedImage` (JPEG / PNG) as [`ImageMode`] asks.
//!
//! | kind | `raw` | `jpeg` | `png` |
//! |---|---|---|---|
//! | colour u8 `[h, w, 3]` | `rgb8` | JPEG | PNG RGB 8-bit |
//! | mono u8 `[h, w]` | `mono8` | JPEG grey | PNG grey 8-bit |
//! | depth u16 mm | `16UC1` | PNG grey 16-bit | PNG grey 16-bit |
//! | depth f32 m | `32FC1` | `32FC1` (raw) | `32FC1` (raw) |
//!
//! Depth is never written lossy; PNG has no float samples, so f32 depth stays raw.

use base64::Engine;

use super::options::ImageMode;
use super::schemas::{self, COMPRESSED_IMAGE_SCHEMA, RAW_IMAGE_SCHEMA};
use super::stamp::Stamp;
use crate::channel_kind::{ChannelKind, DepthUnit};
use crate::picture_encode::{jpeg, png, side, Pixels, PngCompression};

/// How one picture channel is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PictureFormat {
    /// `RawImage` with this encoding and bytes per pixel.
    Raw {
        encoding: &'static str,
        bytes_per_pixel: u64,
    },
    /// `CompressedImage` JPEG.
    Jpeg(Pixels),
    /// `CompressedImage` PNG.
    Png(Pixels),
}

/// A picture channel: its size and format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Picture {
    pub width: u64,
    pub height: u64,
    pub format: PictureFormat,
}

/// Why a picture could not be written: the format and what went wrong.
pub(crate) type PictureError = (&'static str, String);

impl Picture {
    /// The picture of a channel of `kind` written in `mode`; `None` for a vector.
    pub(crate) fn of(kind: ChannelKind, mode: ImageMode) -> Option<Self> {
        let raw = |encoding, bytes_per_pixel| PictureFormat::Raw {
            encoding,
            bytes_per_pixel,
        };
        let (height, width, format) = match kind {
            ChannelKind::LowDim => return None,
            ChannelKind::Color { height, width } => {
                let f = match mode {
                    ImageMode::Raw => raw("rgb8", 3),
                    ImageMode::Jpeg => PictureFormat::Jpeg(Pixels::Rgb8),
                    ImageMode::Png => PictureFormat::Png(Pixels::Rgb8),
                };
                (height, width, f)
            }
            ChannelKind::Mono { height, width } => {
                let f = match mode {
                    ImageMode::Raw => raw("mono8", 1),
                    ImageMode::Jpeg => PictureFormat::Jpeg(Pixels::Mono8),
                    ImageMode::Png => PictureFormat::Png(Pixels::Mono8),
                };
                (height, width, f)
            }
            ChannelKind::Depth {
                height,
                width,
                unit: DepthUnit::Millimetres,
            } => {
                let f = match mode {
                    ImageMode::Raw => raw("16UC1", 2),
                    ImageMode::Jpeg | ImageMode::Png => PictureFormat::Png(Pixels::Mono16),
                };
                (height, width, f)
            }
            ChannelKind::Depth {
                height,
                width,
                unit: DepthUnit::Metres,
            } => (height, width, raw("32FC1", 4)),
        };
        Some(Self {
            width,
            height,
            format,
        })
    }

    /// The MCAP schema name.
    pub(crate) fn schema_name(&self) -> &'static str {
        match self.format {
            PictureFormat::Raw { .. } => RAW_IMAGE_SCHEMA,
            PictureFormat::Jpeg(_) | PictureFormat::Png(_) => COMPRESSED_IMAGE_SCHEMA,
        }
    }

    /// The MCAP schema bytes.
    pub(crate) fn schema(&self) -> Vec<u8> {
        match self.format {
            PictureFormat::Raw { .. } => schemas::raw_image(),
            PictureFormat::Jpeg(_) | PictureFormat::Png(_) => schemas::compressed_image(),
        }
    }

    /// What `--images` made of it, for the channel's metadata: `rgb8`, `jpeg`, `png`, ...
    pub(crate) fn format_name(&self) -> &'static str {
        match self.format {
            PictureFormat::Raw { encoding, .. } => encoding,
            PictureFormat::Jpeg(_) => "jpeg",
            PictureFormat::Png(_) => "png",
        }
    }

    /// The message of one step: `data` is the step's pixels as recorded.
    pub(crate) fn message(
        &self,
        stamp: Stamp,
        frame_id: &str,
        data: &[u8],
        jpeg_quality: u8,
        out: &mut Vec<u8>,
    ) -> Result<(), PictureError> {
        out.clear();
        out.extend_from_slice(b"{\"timestamp\":");
        stamp.write_json(out);
        out.extend_from_slice(b",\"frame_id\":");
        // A string always serialises; a Vec never fails.
        let _ = serde_json::to_writer(&mut *out, frame_id);
        let compressed = match self.format {
            PictureFormat::Raw {
                encoding,
                bytes_per_pixel,
            } => {
                use std::io::Write;
                let _ = write!(
                    out,
                    ",\"width\":{},\"height\":{},\"encoding\":\"{}\",\"step\":{},\"data\":\"",
                    self.width,
                    self.height,
                    encoding,
                    self.width.saturating_mul(bytes_per_pixel)
                );
                push_base64(data, out);
                out.extend_from_slice(b"\"}");
                return Ok(());
            }
            PictureFormat::Jpeg(p) => (
                "jpeg",
                jpeg(p, data, side(self.width), side(self.height), jpeg_quality)
                    .map_err(|e| ("JPEG", e.message))?,
            ),
            PictureFormat::Png(p) => (
                "png",
                png(
                    p,
                    data,
                    side(self.width),
                    side(self.height),
                    PngCompression::Default,
                )
                .map_err(|e| ("PNG", e.message))?,
            ),
        };
        out.extend_from_slice(b",\"format\":\"");
        out.extend_from_slice(compressed.0.as_bytes());
        out.extend_from_slice(b"\",\"data\":\"");
        push_base64(&compressed.1, out);
        out.extend_from_slice(b"\"}");
        Ok(())
    }
}

/// Append `data` as standard base64 (with padding).
fn push_base64(data: &[u8], out: &mut Vec<u8>) {
    let mut s = String::new();
    base64::engine::general_purpose::STANDARD.encode_string(data, &mut s);
    out.extend_from_slice(s.as_bytes());
}
