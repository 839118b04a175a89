//! Picture encoding: colour and mono as JPEG (quality [`JPEG_QUALITY`], 4:2:0 chroma as
//! Pillow's default, libjpeg-turbo), depth as 16-bit greyscale PNG in millimetres.
//!
//! Depth in f32 metres becomes `round(m * 1000)` millimetres, clamped to `0..=65535`; a
//! NaN, infinite or negative value (no reading) becomes 0.

use std::cell::RefCell;

use crate::channel_kind::{ChannelKind, DepthUnit};

use super::options::JPEG_QUALITY;
use super::resize::{resize_nearest, resize_u8};

/// zlib level of depth PNGs.
const PNG_LEVEL: u8 = 1;
/// Millimetres per metre.
const MM_PER_M: f32 = 1000.0;

/// A picture the encoder refused.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct EncodeError {
    pub what: &'static str,
    pub message: String,
}

impl EncodeError {
    fn new(what: &'static str, message: impl ToString) -> Self {
        Self {
            what,
            message: message.to_string(),
        }
    }
}

/// An encoded picture and the extension of its sample file.
#[derive(Debug)]
pub struct Encoded {
    /// `jpg` or `depth.png`.
    pub ext: &'static str,
    pub bytes: Vec<u8>,
}

thread_local! {
    /// One libjpeg-turbo compressor per encoding thread.
    static COMPRESSOR: RefCell<Option<turbojpeg::Compressor>> = const { RefCell::new(None) };
}

fn jpeg(pixels: &[u8], width: usize, height: usize, grey: bool) -> Result<Vec<u8>, EncodeError> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut c = turbojpeg::Compressor::new().map_err(|e| EncodeError::new("jpeg", e))?;
            c.set_quality(JPEG_QUALITY);
            *slot = Some(c);
        }
        let Some(c) = slot.as_mut() else {
            return Err(EncodeError::new("jpeg", "no compressor"));
        };
        let (format, subsamp, channels) = if grey {
            (turbojpeg::PixelFormat::GRAY, turbojpeg::Subsamp::Gray, 1)
        } else {
            (turbojpeg::PixelFormat::RGB, turbojpeg::Subsamp::Sub2x2, 3)
        };
        c.set_subsamp(subsamp);
        let image = turbojpeg::Image {
            pixels,
            width,
            pitch: width * channels,
            height,
            format,
        };
        c.compress_to_vec(image)
            .map_err(|e| EncodeError::new("jpeg", e))
    })
}

fn png16(mm: &[u16], width: usize, height: usize) -> Result<Vec<u8>, EncodeError> {
    let (w, h) = (
        u32::try_from(width).map_err(|e| EncodeError::new("png", e))?,
        u32::try_from(height).map_err(|e| EncodeError::new("png", e))?,
    );
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Sixteen);
        // zlib level 1 (as Pillow's compress_level=1) with the Sub filter: on 320x240 depth
        // ramps ~0.5 ms and 3-10 KB a frame, where the fdeflate mode gives 60-80 KB and
        // the default level takes twice the time for a third less.
        enc.set_deflate_compression(png::DeflateCompression::Level(PNG_LEVEL));
        enc.set_filter(png::Filter::Sub);
        let mut writer = enc.write_header().map_err(|e| EncodeError::new("png", e))?;
        // PNG samples are big-endian.
        let data: Vec<u8> = mm.iter().flat_map(|v| v.to_be_bytes()).collect();
        writer
            .write_image_data(&data)
            .map_err(|e| EncodeError::new("png", e))?;
        writer.finish().map_err(|e| EncodeError::new("png", e))?;
    }
    Ok(out)
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

fn side(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
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
            let channels = if matches!(kind, ChannelKind::Color { .. }) {
                3
            } else {
                1
            };
            let need = w * h * channels;
            let pixels = bytes.get(..need).ok_or_else(|| short(need))?;
            let bytes = match target {
                Some(t) if t != (w, h) => jpeg(
                    &resize_u8(pixels, (w, h), channels, t),
                    t.0,
                    t.1,
                    channels == 1,
                )?,
                _ => jpeg(pixels, w, h, channels == 1)?,
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
                Some(t) if t != (w, h) => png16(&resize_nearest(&mm, (w, h), t), t.0, t.1)?,
                _ => png16(&mm, w, h)?,
            };
            Ok(Encoded {
                ext: "depth.png",
                bytes,
            })
        }
        ChannelKind::LowDim => Err(EncodeError::new("picture", "not a picture channel")),
    }
}
