//! Pictures compressed for `foxglove.CompressedImage`: JPEG (colour and mono, with
//! `jpeg-encoder`) and PNG (colour, mono, 16-bit depth, with `png`). Both are pure Rust and
//! give the same bytes for the same pixels.

/// The pixel layout of a picture to compress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pixels {
    /// u8 RGB, 3 bytes per pixel.
    Rgb8,
    /// u8 grey, 1 byte per pixel.
    Mono8,
    /// u16 little-endian, 2 bytes per pixel (depth in millimetres).
    Mono16,
}

/// A failed encoding, said in words (the caller names episode, channel and step).
pub(crate) type EncodeResult = Result<Vec<u8>, String>;

/// `width` x `height` pixels as JPEG at `quality` (1..=100). Only 8-bit pixels.
pub(crate) fn jpeg(
    pixels: Pixels,
    data: &[u8],
    width: u64,
    height: u64,
    quality: u8,
) -> EncodeResult {
    let color = match pixels {
        Pixels::Rgb8 => jpeg_encoder::ColorType::Rgb,
        Pixels::Mono8 => jpeg_encoder::ColorType::Luma,
        Pixels::Mono16 => return Err("JPEG holds 8-bit samples only".into()),
    };
    let side = |v: u64, what: &str| {
        u16::try_from(v).map_err(|_| format!("{what} {v} is over JPEG's limit of {}", u16::MAX))
    };
    let (w, h) = (side(width, "width")?, side(height, "height")?);
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, quality)
        .encode(data, w, h, color)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// `width` x `height` pixels as PNG (16-bit samples written big-endian, as PNG stores them).
pub(crate) fn png(pixels: Pixels, data: &[u8], width: u64, height: u64) -> EncodeResult {
    let side = |v: u64, what: &str| {
        u32::try_from(v).map_err(|_| format!("{what} {v} is over PNG's limit of {}", u32::MAX))
    };
    let (w, h) = (side(width, "width")?, side(height, "height")?);
    let (color, depth) = match pixels {
        Pixels::Rgb8 => (png::ColorType::Rgb, png::BitDepth::Eight),
        Pixels::Mono8 => (png::ColorType::Grayscale, png::BitDepth::Eight),
        Pixels::Mono16 => (png::ColorType::Grayscale, png::BitDepth::Sixteen),
    };
    let swapped;
    let samples = if pixels == Pixels::Mono16 {
        swapped = data
            .chunks_exact(2)
            .flat_map(|c| {
                [
                    c.get(1).copied().unwrap_or(0),
                    c.first().copied().unwrap_or(0),
                ]
            })
            .collect::<Vec<u8>>();
        &swapped[..]
    } else {
        data
    };
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(depth);
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer
            .write_image_data(samples)
            .map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
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
        let p = png(Pixels::Mono16, &[1, 2, 3, 4], 2, 1).unwrap_or_default();
        assert_eq!(p.get(1..4), Some(&b"PNG"[..]));
        assert!(jpeg(Pixels::Mono16, &[0; 4], 2, 1, 90).is_err());
        assert!(jpeg(Pixels::Mono8, &[0; 4], 70_000, 1, 90)
            .unwrap_err()
            .contains("width 70000"));
        // Too few bytes for the picture.
        assert!(png(Pixels::Rgb8, &[0; 5], 2, 1).is_err());
        assert!(jpeg(Pixels::Rgb8, &[0; 5], 2, 1, 90).is_err());
    }
}
