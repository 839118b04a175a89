//! `--resize WxH`: 8-bit pictures with a separable triangle (bilinear, antialiased when
//! shrinking, as Pillow's `BILINEAR`) filter; depth with nearest neighbour (a depth value is
//! never blended with its neighbours).

/// Contributions of source pixels to one output pixel along one axis.
struct Taps {
    first: usize,
    weights: Vec<f32>,
}

/// The taps of every output position when `src` samples become `dst`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn taps(src: usize, dst: usize) -> Vec<Taps> {
    let scale = src as f64 / dst as f64;
    let radius = scale.max(1.0);
    (0..dst)
        .map(|x| {
            let center = (x as f64 + 0.5) * scale;
            let first = (center - radius).floor().max(0.0) as usize;
            let end = ((center + radius).ceil() as usize).min(src);
            let mut weights: Vec<f32> = (first..end)
                .map(|i| {
                    let d = ((i as f64 + 0.5 - center) / radius).abs();
                    (1.0 - d).max(0.0) as f32
                })
                .collect();
            let sum: f32 = weights.iter().sum();
            if sum > 0.0 {
                weights.iter_mut().for_each(|w| *w /= sum);
            }
            Taps { first, weights }
        })
        .collect()
}

/// Resize an 8-bit `[h, w, channels]` picture to `(new_w, new_h)`.
#[must_use]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn resize_u8(
    src: &[u8],
    (w, h): (usize, usize),
    channels: usize,
    (new_w, new_h): (usize, usize),
) -> Vec<u8> {
    let xt = taps(w, new_w);
    let yt = taps(h, new_h);
    // Horizontal pass into f32 rows.
    let mut mid = vec![0.0_f32; h * new_w * channels];
    for y in 0..h {
        let row = &src[y * w * channels..(y + 1) * w * channels];
        for (x, t) in xt.iter().enumerate() {
            for c in 0..channels {
                let acc: f32 = t
                    .weights
                    .iter()
                    .enumerate()
                    .map(|(k, wt)| wt * f32::from(row[(t.first + k) * channels + c]))
                    .sum();
                mid[(y * new_w + x) * channels + c] = acc;
            }
        }
    }
    let mut out = vec![0_u8; new_h * new_w * channels];
    for (y, t) in yt.iter().enumerate() {
        for x in 0..new_w * channels {
            let acc: f32 = t
                .weights
                .iter()
                .enumerate()
                .map(|(k, wt)| wt * mid[(t.first + k) * new_w * channels + x])
                .sum();
            out[y * new_w * channels + x] = acc.round().clamp(0.0, 255.0) as u8;
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
