//! Percentiles as numpy's default `method='linear'` computes them (Hyndman and Fan's
//! method 7), to the same floating-point operations: the virtual index `(n - 1) * (q / 100)`,
//! its floor and fraction `g`, and `a + (b - a) * g` below `g = 0.5`, `b - (b - a) * (1 - g)`
//! from it.

/// The percentiles written to `stats.json`.
pub const PERCENTILES: [u32; 6] = [1, 2, 5, 95, 98, 99];

/// Percent divisor.
const PERCENT: f64 = 100.0;

/// Percentile `q` (0..=100) of `sorted` (ascending, no NaN); `None` when empty.
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
pub fn percentile_sorted(sorted: &[f64], q: u32) -> Option<f64> {
    let n = sorted.len();
    let last = n.checked_sub(1)?;
    let virtual_index = last as f64 * (f64::from(q) / PERCENT);
    let below = virtual_index.floor();
    let gamma = virtual_index - below;
    let (lo, hi) = if virtual_index >= last as f64 {
        (last, last)
    } else {
        let lo = (below.max(0.0) as usize).min(last);
        (lo, (lo + 1).min(last))
    };
    let (a, b) = (sorted[lo], sorted[hi]);
    let diff = b - a;
    Some(if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    })
}

/// Sort finite values ascending (total order).
pub fn sort_values(values: &mut [f64]) {
    values.sort_unstable_by(f64::total_cmp);
}
