//! A frame of a picture channel as a sample file: colour and mono as JPEG (quality
//! [`JPEG_QUALITY`]), depth as 16-bit greyscale PNG in millimetres (fast compression); the
//! encoders are `crate::picture_encode`'s.
//!
//! Depth in f32 metres becomes `round(m * 1000)` millimetres, clamped to `0..=65535`; a
//! NaN, infinite or negative value (no reading) becomes 0.

use crate::channel_kind::{ChannelKind, DepthUnit};
pub use crate::picture_encode::EncodeError;
use crate::picture_encode::{jpeg, png_mono16, side, Pixels, PngCompression};

use super::options::JPEG_QUALITY;
use super::resize::{resize_nearest, resize_u8};

/// Millimetres per metre.
const MM_PER_M: f32 = 1000.0;

/// An encoded picture and the extension of its sample file.
#[derive(Debug)]
pub struct Encoded {
    /// `jpg` or `depth.png`.
    pub ext: &'static str,
    pub bytes: Vec<u8>,
}

/// Millimetres of an f32 depth in metres.
#[must_use]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn metres_to_mm(m: f32) -> u16 {
    if m.is_finite() && m > 0.0 {
        (m * MM_PER_M).round().min(f32::from(u16::MAX)) as u16
    } else {
        0
    }
}

/// Encode one frame (`bytes`, the channel's step, little-endian) of a picture channel of
/// `kind`, resized to `resize` = `(width, height)` when given.
///
/// # Errors
/// [`EncodeError`] when the frame is not the size its kind says or the encoder fails.
pub fn encode_picture(
    kind: ChannelKind,
    bytes: &[u8],
    resize: Option<(u32, u32)>,
) -> Result<Encoded, EncodeError> {
    let target = resize.map(|(w, h)| (side(u64::from(w)), side(u64::from(h))));
    let short =
        |need: usize| EncodeError::new("frame", format!("{} bytes, {need} expected", bytes.len()));
    match kind {
        ChannelKind::Color { height, width } | ChannelKind::Mono { height, width } => {
            let (w, h) = (side(width), side(height));
            let layout = if matches!(kind, ChannelKind::Color { .. }) {
                Pixels::Rgb8
            } else {
                Pixels::Mono8
            };
            let channels = layout.bytes_per_pixel();
            let need = w * h * channels;
            let pixels = bytes.get(..need).ok_or_else(|| short(need))?;
            let bytes = match target {
                Some(t) if t != (w, h) => jpeg(
                    layout,
                    &resize_u8(pixels, (w, h), channels, t),
                    t.0,
                    t.1,
                    JPEG_QUALITY,
                )?,
                _ => jpeg(layout, pixels, w, h, JPEG_QUALITY)?,
            };
            Ok(Encoded { ext: "jpg", bytes })
        }
        ChannelKind::Depth {
            height,
            width,
            unit,
        } => {
            let (w, h) = (side(width), side(height));
            let mm: Vec<u16> = match unit {
                DepthUnit::Millimetres => {
                    let raw = bytes.get(..w * h * 2).ok_or_else(|| short(w * h * 2))?;
                    raw.chunks_exact(2)
                        .map(|b| u16::from_le_bytes([b[0], b[1]]))
                        .collect()
                }
                DepthUnit::Metres => {
                    let raw = bytes.get(..w * h * 4).ok_or_else(|| short(w * h * 4))?;
                    raw.chunks_exact(4)
                        .map(|b| metres_to_mm(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                        .collect()
                }
            };
            let bytes = match target {
                Some(t) if t != (w, h) => png_mono16(
                    &resize_nearest(&mm, (w, h), t),
                    t.0,
                    t.1,
                    PngCompression::Fast,
                )?,
                _ => png_mono16(&mm, w, h, PngCompression::Fast)?,
            };
            Ok(Encoded {
                ext: "depth.png",
                bytes,
            })
        }
        ChannelKind::LowDim => Err(EncodeError::new("picture", "not a picture channel")),
    }
}
