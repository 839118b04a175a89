//! `sign2nddiff` residuals (spec 12), with Go's f64 arithmetic.

/// `r[i] = sign(2 x[i] - x[i-1] - x[i+1])` for interior steps, 0 at both edges ("pad"), and
/// all zeros when there are fewer than 3 steps. The arithmetic is f64, as Go does (f32 input
/// must be widened first, which [`sign2nddiff_f32`] does).
#[must_use]
pub fn sign2nddiff(x: &[f64]) -> Vec<i8> {
    let n = x.len();
    let mut r = vec![0i8; n];
    if n < 3 {
        return r;
    }
    for i in 1..n - 1 {
        let d = 2.0 * x[i] - x[i - 1] - x[i + 1];
        r[i] = if d > 0.0 {
            1
        } else if d < 0.0 {
            -1
        } else {
            0
        };
    }
    r
}

/// [`sign2nddiff`] of f32 values widened to f64.
#[must_use]
pub fn sign2nddiff_f32(x: &[f32]) -> Vec<i8> {
    let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    sign2nddiff(&wide)
}

/// Pack residuals LSB-first, `ceil(T/8)` bytes: bit `i % 8` of byte `i / 8` is set iff `r[i] > 0`.
#[must_use]
pub fn pack_bits(r: &[i8]) -> Vec<u8> {
    let mut out = vec![0u8; r.len().div_ceil(8)];
    for (i, &v) in r.iter().enumerate() {
        if v > 0 {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

/// Unpack `t` residuals: a set bit is +1, a clear one -1 (zeros are not recoverable).
/// Missing bytes read as clear bits.
#[must_use]
pub fn unpack_bits(bits: &[u8], t: usize) -> Vec<i8> {
    (0..t)
        .map(|i| {
            let set = bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
            if set {
                1
            } else {
                -1
            }
        })
        .collect()
}

/// Residual bits of column `col` of a row-major f32 `[T, D]` tensor.
#[must_use]
pub fn column_bits_f32(values: &[f32], d: usize, col: usize) -> Vec<u8> {
    let column: Vec<f32> = values.iter().skip(col).step_by(d.max(1)).copied().collect();
    pack_bits(&sign2nddiff_f32(&column))
}

/// Residual bits of every column of a row-major f32 `[T, D]` tensor, dimension-major
/// (`D * ceil(T/8)` bytes: all of dim 0, then dim 1, ...).
#[must_use]
pub fn multidim_bits_f32(values: &[f32], d: usize) -> Vec<u8> {
    (0..d)
        .flat_map(|col| column_bits_f32(values, d, col))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_column_gives_90_00() {
        // Column 0 of omen_uncert's joint_pos: f32(i) * f32(0.1) for i = 0, 3, 6, ...
        #[allow(clippy::cast_precision_loss)]
        let col: Vec<f32> = (0..10).map(|k| (k * 3) as f32 * 0.1f32).collect();
        let r = sign2nddiff_f32(&col);
        assert_eq!(r, vec![0, 0, 0, 0, 1, -1, 0, 1, 0, 0]);
        assert_eq!(pack_bits(&r), vec![0x90, 0x00]);
    }

    #[test]
    fn short_series_are_zero_and_unpack_maps_signs() {
        assert_eq!(sign2nddiff(&[1.0, 2.0]), vec![0, 0]);
        assert_eq!(unpack_bits(&[0b0000_0101], 3), vec![1, -1, 1]);
        assert_eq!(
            multidim_bits_f32(&[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], 2),
            vec![0b10, 0]
        );
    }
}
