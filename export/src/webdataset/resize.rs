//! `--resize WxH`: 8-bit pictures with Lanczos (a sinc windowed over 3 lobes, antialiased
//! when shrinking), computed as Pillow's `Image.resize(size, Image.LANCZOS)` computes it:
//! the same weights rounded to 22-bit fixed point, a horizontal then a vertical pass with
//! 8-bit rounding between them, so the pixels are Pillow's to the byte; depth with nearest
//! neighbour (a depth value is never blended with its neighbours).

use std::f64::consts::PI;

/// Fraction bits of the fixed-point weights (Pillow's `PRECISION_BITS`: two bits of
/// headroom over 8-bit samples in an `i32`).
const PRECISION_BITS: u32 = 32 - 8 - 2;
/// Half of the weights' unit: the rounding offset of each weighted sum.
const ROUNDING: i64 = 1 << (PRECISION_BITS - 1);
/// Lobes of the Lanczos window.
const LANCZOS_SUPPORT: f64 = 3.0;

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * PI;
        x.sin() / x
    }
}

fn lanczos(x: f64) -> f64 {
    if (-LANCZOS_SUPPORT..LANCZOS_SUPPORT).contains(&x) {
        sinc(x) * sinc(x / LANCZOS_SUPPORT)
    } else {
        0.0
    }
}

/// Contributions of source samples to one output sample along one axis.
struct Taps {
    first: usize,
    /// Fixed-point weights of samples `first..first + weights.len()`.
    weights: Vec<i64>,
}

/// The taps of every output position when `src` samples become `dst`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]
fn taps(src: usize, dst: usize) -> Vec<Taps> {
    let scale = src as f64 / dst as f64;
    let filter_scale = scale.max(1.0);
    let support = LANCZOS_SUPPORT * filter_scale;
    (0..dst)
        .map(|x| {
            let center = (x as f64 + 0.5) * scale;
            // Rounded as Pillow does: truncation of `value + 0.5`.
            let first = ((center - support + 0.5) as i64).max(0);
            let end = ((center + support + 0.5) as i64).min(src as i64);
            let raw: Vec<f64> = (first..end)
                .map(|i| lanczos((i as f64 - center + 0.5) / filter_scale))
                .collect();
            let sum: f64 = raw.iter().sum();
            let unit = f64::from(1_u32 << PRECISION_BITS);
            let weights = raw
                .iter()
                .map(|w| {
                    let w = if sum == 0.0 { *w } else { w / sum };
                    if w < 0.0 {
                        (-0.5 + w * unit) as i64
                    } else {
                        (0.5 + w * unit) as i64
                    }
                })
                .collect();
            Taps {
                first: first as usize,
                weights,
            }
        })
        .collect()
}

/// A weighted sum back to 8 bits.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn clip8(acc: i64) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, i64::from(u8::MAX)) as u8
}

/// Resize an 8-bit `[h, w, channels]` picture to `(new_w, new_h)`.
#[must_use]
pub fn resize_u8(
    src: &[u8],
    (w, h): (usize, usize),
    channels: usize,
    (new_w, new_h): (usize, usize),
) -> Vec<u8> {
    let xt = taps(w, new_w);
    let yt = taps(h, new_h);
    // Horizontal pass, rounded to 8 bits as Pillow's intermediate picture is.
    let mut mid = vec![0_u8; h * new_w * channels];
    for y in 0..h {
        let row = &src[y * w * channels..(y + 1) * w * channels];
        for (x, t) in xt.iter().enumerate() {
            for c in 0..channels {
                let acc = t.weights.iter().enumerate().fold(ROUNDING, |acc, (k, wt)| {
                    acc + wt * i64::from(row[(t.first + k) * channels + c])
                });
                mid[(y * new_w + x) * channels + c] = clip8(acc);
            }
        }
    }
    let mut out = vec![0_u8; new_h * new_w * channels];
    for (y, t) in yt.iter().enumerate() {
        for x in 0..new_w * channels {
            let acc = t.weights.iter().enumerate().fold(ROUNDING, |acc, (k, wt)| {
                acc + wt * i64::from(mid[(t.first + k) * new_w * channels + x])
            });
            out[y * new_w * channels + x] = clip8(acc);
        }
    }
    out
}

/// Resize a one-channel `[h, w]` picture of any element type to `(new_w, new_h)` with
/// nearest neighbour.
#[must_use]
pub fn resize_nearest<T: Copy>(
    src: &[T],
    (w, h): (usize, usize),
    (new_w, new_h): (usize, usize),
) -> Vec<T> {
    let pick = |x: usize, n: usize, of: usize| ((2 * x + 1) * n / (2 * of)).min(n - 1);
    let mut out = Vec::with_capacity(new_w * new_h);
    for y in 0..new_h {
        let sy = pick(y, h, new_h);
        for x in 0..new_w {
            out.push(src[sy * w + pick(x, w, new_w)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::resize_u8;

    /// 7x5 RGB: `(x * 37 + y * 11 + c * 53 + x * y * 29) % 256`.
    fn source() -> Vec<u8> {
        let mut v = Vec::new();
        for y in 0..5_usize {
            for x in 0..7_usize {
                for c in 0..3_usize {
                    v.push(
                        u8::try_from((x * 37 + y * 11 + c * 53 + x * y * 29) % 256).unwrap_or(0),
                    );
                }
            }
        }
        v
    }

    /// Pillow 13.0.0's `Image.fromarray(source).resize(size, Image.LANCZOS)`.
    #[test]
    fn lanczos_is_pillows() {
        let src = source();
        assert_eq!(
            resize_u8(&src, (7, 5), 3, (3, 4)),
            [
                30, 86, 140, 113, 159, 204, 170, 152, 85, 85, 112, 174, 144, 80, 146, 120, 132,
                122, 90, 116, 100, 105, 132, 173, 106, 111, 182, 111, 170, 97, 152, 126, 175, 99,
                163, 137
            ]
        );
        let up = resize_u8(&src, (7, 5), 3, (11, 9));
        assert_eq!(
            up[..33],
            [
                0, 49, 102, 10, 65, 118, 38, 89, 142, 63, 103, 157, 74, 136, 185, 94, 186, 239,
                141, 204, 255, 180, 247, 210, 200, 255, 26, 219, 97, 32, 230, 0, 99
            ]
        );
        assert_eq!(
            up[264..],
            [
                27, 80, 165, 119, 167, 99, 201, 255, 65, 122, 208, 185, 148, 73, 162, 255, 22, 75,
                229, 164, 204, 105, 195, 255, 27, 77, 149, 133, 176, 57, 239, 255, 33
            ]
        );
        let mono: Vec<u8> = src.iter().step_by(3).copied().collect();
        assert_eq!(
            resize_u8(&mono, (7, 5), 1, (4, 3)),
            [19, 120, 121, 171, 68, 139, 107, 120, 97, 136, 123, 92]
        );
    }
}
