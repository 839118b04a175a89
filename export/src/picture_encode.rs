//! Picture encoding for every export: JPEG (colour and mono, libjpeg-turbo through
//! `turbojpeg`, 4:2:0 chroma as Pillow's default) and PNG (8-bit colour and grey, 16-bit
//! grey, at a chosen compression). The same pixels and settings give the same bytes.

use std::cell::RefCell;

/// The pixel layout of a picture to encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pixels {
    /// u8 RGB, 3 bytes per pixel.
    Rgb8,
    /// u8 grey, 1 byte per pixel.
    Mono8,
    /// u16 little-endian, 2 bytes per pixel (depth in millimetres).
    Mono16,
}

impl Pixels {
    /// Bytes per pixel.
    #[must_use]
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            Self::Rgb8 => 3,
            Self::Mono8 => 1,
            Self::Mono16 => 2,
        }
    }
}

/// How hard PNG compresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PngCompression {
    /// The `png` crate's default level and adaptive filter.
    Default,
    /// zlib level 1 (as Pillow's `compress_level=1`) with the Sub filter: on 320x240 depth
    /// ramps ~0.5 ms and 3-10 KB a frame, where the fdeflate mode gives 60-80 KB and the
    /// default level takes twice the time for a third less.
    Fast,
}

/// zlib level of [`PngCompression::Fast`].
const FAST_PNG_LEVEL: u8 = 1;

/// A picture the encoder refused: the format (`jpeg`, `png`) and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct EncodeError {
    pub what: &'static str,
    pub message: String,
}

impl EncodeError {
    pub(crate) fn new(what: &'static str, message: impl ToString) -> Self {
        Self {
            what,
            message: message.to_string(),
        }
    }
}

/// A picture side (a channel's shape) as `usize`; one too large for memory becomes
/// `usize::MAX`, which the encoders and size checks refuse.
#[must_use]
pub(crate) fn side(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

const JPEG: &str = "jpeg";
const PNG: &str = "png";

thread_local! {
    /// One libjpeg-turbo compressor per encoding thread.
    static COMPRESSOR: RefCell<Option<turbojpeg::Compressor>> = const { RefCell::new(None) };
}

/// The first `width * height * bytes_per_pixel` bytes of `data`, or an error naming both.
fn picture_bytes<'a>(
    what: &'static str,
    pixels: Pixels,
    data: &'a [u8],
    width: usize,
    height: usize,
) -> Result<&'a [u8], EncodeError> {
    let need = width
        .checked_mul(height)
        .and_then(|n| n.checked_mul(pixels.bytes_per_pixel()))
        .ok_or_else(|| EncodeError::new(what, format!("{width}x{height} is too large")))?;
    data.get(..need).ok_or_else(|| {
        EncodeError::new(
            what,
            format!("{} bytes, {need} expected for {width}x{height}", data.len()),
        )
    })
}

/// `width` x `height` pixels as JPEG at `quality` (1..=100). Only 8-bit pixels.
///
/// # Errors
/// [`EncodeError`] for 16-bit pixels, a side over 65535, too few bytes, or an encoder
/// failure.
pub fn jpeg(
    pixels: Pixels,
    data: &[u8],
    width: usize,
    height: usize,
    quality: u8,
) -> Result<Vec<u8>, EncodeError> {
    let (format, subsamp) = match pixels {
        Pixels::Rgb8 => (turbojpeg::PixelFormat::RGB, turbojpeg::Subsamp::Sub2x2),
        Pixels::Mono8 => (turbojpeg::PixelFormat::GRAY, turbojpeg::Subsamp::Gray),
        Pixels::Mono16 => return Err(EncodeError::new(JPEG, "JPEG holds 8-bit samples only")),
    };
    for (v, what) in [(width, "width"), (height, "height")] {
        if v > usize::from(u16::MAX) {
            return Err(EncodeError::new(
                JPEG,
                format!("{what} {v} is over JPEG's limit of {}", u16::MAX),
            ));
        }
    }
    let data = picture_bytes(JPEG, pixels, data, width, height)?;
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(turbojpeg::Compressor::new().map_err(|e| EncodeError::new(JPEG, e))?);
        }
        let Some(c) = slot.as_mut() else {
            return Err(EncodeError::new(JPEG, "no compressor"));
        };
        c.set_quality(i32::from(quality));
        c.set_subsamp(subsamp);
        let image = turbojpeg::Image {
            pixels: data,
            width,
            pitch: width * pixels.bytes_per_pixel(),
            height,
            format,
        };
        c.compress_to_vec(image)
            .map_err(|e| EncodeError::new(JPEG, e))
    })
}

/// `width` x `height` pixels as PNG; [`Pixels::Mono16`] samples are little-endian in `data`
/// (written big-endian, as PNG stores them).
///
/// # Errors
/// [`EncodeError`] for a side over `u32::MAX`, too few bytes, or an encoder failure.
pub fn png(
    pixels: Pixels,
    data: &[u8],
    width: usize,
    height: usize,
    compression: PngCompression,
) -> Result<Vec<u8>, EncodeError> {
    let data = picture_bytes(PNG, pixels, data, width, height)?;
    let swapped;
    let samples = if pixels == Pixels::Mono16 {
        swapped = data
            .chunks_exact(2)
            .flat_map(|c| [c[1], c[0]])
            .collect::<Vec<u8>>();
        &swapped[..]
    } else {
        data
    };
    write_png(pixels, samples, width, height, compression)
}

/// 16-bit grey `width` x `height` samples (row-major) as PNG.
///
/// # Errors
/// As [`png()`].
pub fn png_mono16(
    samples: &[u16],
    width: usize,
    height: usize,
    compression: PngCompression,
) -> Result<Vec<u8>, EncodeError> {
    let need = width.saturating_mul(height);
    let samples = samples.get(..need).ok_or_else(|| {
        EncodeError::new(
            PNG,
            format!(
                "{} samples, {need} expected for {width}x{height}",
                samples.len()
            ),
        )
    })?;
    // PNG samples are big-endian.
    let be: Vec<u8> = samples.iter().flat_map(|v| v.to_be_bytes()).collect();
    write_png(Pixels::Mono16, &be, width, height, compression)
}

/// PNG of `samples`, already in PNG's byte order and of the right length.
fn write_png(
    pixels: Pixels,
    samples: &[u8],
    width: usize,
    height: usize,
    compression: PngCompression,
) -> Result<Vec<u8>, EncodeError> {
    let side = |v: usize, what: &str| {
        u32::try_from(v).map_err(|_| {
            EncodeError::new(
                PNG,
                format!("{what} {v} is over PNG's limit of {}", u32::MAX),
            )
        })
    };
    let (w, h) = (side(width, "width")?, side(height, "height")?);
    let (color, depth) = match pixels {
        Pixels::Rgb8 => (png::ColorType::Rgb, png::BitDepth::Eight),
        Pixels::Mono8 => (png::ColorType::Grayscale, png::BitDepth::Eight),
        Pixels::Mono16 => (png::ColorType::Grayscale, png::BitDepth::Sixteen),
    };
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(depth);
        if compression == PngCompression::Fast {
            enc.set_deflate_compression(png::DeflateCompression::Level(FAST_PNG_LEVEL));
            enc.set_filter(png::Filter::Sub);
        }
        let mut writer = enc.write_header().map_err(|e| EncodeError::new(PNG, e))?;
        writer
            .write_image_data(samples)
            .map_err(|e| EncodeError::new(PNG, e))?;
        writer.finish().map_err(|e| EncodeError::new(PNG, e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_refuses() {
        let rgb = vec![7u8; 8 * 8 * 3];
        let j = jpeg(Pixels::Rgb8, &rgb, 8, 8, 90).unwrap_or_default();
        assert_eq!(j.get(..2), Some(&[0xff, 0xd8][..]));
        let p =
            png(Pixels::Mono16, &[1, 2, 3, 4], 2, 1, PngCompression::Default).unwrap_or_default();
        assert_eq!(p.get(1..4), Some(&b"PNG"[..]));
        let q = png_mono16(&[0x0201, 0x0403], 2, 1, PngCompression::Default).unwrap_or_default();
        assert_eq!(
            p, q,
            "little-endian bytes and u16 samples give the same PNG"
        );
        assert!(jpeg(Pixels::Mono16, &[0; 4], 2, 1, 90).is_err());
        assert!(jpeg(Pixels::Mono8, &[0; 4], 70_000, 1, 90)
            .unwrap_err()
            .message
            .contains("width 70000"));
        // Too few bytes for the picture.
        assert!(png(Pixels::Rgb8, &[0; 5], 2, 1, PngCompression::Fast).is_err());
        assert!(jpeg(Pixels::Rgb8, &[0; 5], 2, 1, 90).is_err());
        assert!(png_mono16(&[0; 1], 2, 1, PngCompression::Fast).is_err());
    }
}
