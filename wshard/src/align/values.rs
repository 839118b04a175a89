//! The aligned values of one channel: the source steps copied (`hold`, `nearest`) or
//! interpolated (`linear`).
//!
//! Output dtypes: `hold` and `nearest` keep the channel's dtype. `linear` computes
//! `a + (b - a) * w` in f64 per element and writes f32 for f32, f16 and bf16 channels,
//! f64 for f64 and every integer dtype; `bool` cannot be interpolated. A row without a
//! sample is all zero bytes.

use super::pick::Picks;
use crate::episode::DType;
use crate::episode_dir::ChannelData;

/// The dtype `linear` produces for a channel of `dtype`, `None` when it is not numeric.
#[must_use]
pub fn linear_output_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::Bool => None,
        DType::F32 | DType::F16 | DType::BF16 => Some(DType::F32),
        _ => Some(DType::F64),
    }
}

fn step_of(col: &ChannelData, row: i64) -> Option<&[u8]> {
    u64::try_from(row).ok().and_then(|r| col.step(r))
}

/// `hold` / `nearest`: each row's source step, zeros where there is none.
pub(crate) fn gather(col: &ChannelData, picks: &Picks) -> Vec<u8> {
    let step = col.step_bytes();
    let mut out = Vec::with_capacity(picks.row.len().saturating_mul(step));
    for &r in &picks.row {
        match step_of(col, r) {
            Some(b) => out.extend_from_slice(b),
            None => out.resize(out.len() + step, 0),
        }
    }
    out
}

/// `linear`: each row interpolated between its two source steps, as `out` (f32 or f64).
pub(crate) fn interpolate(col: &ChannelData, picks: &Picks, out: DType) -> Vec<u8> {
    let size = col.dtype.size();
    let elems = col.step_elements();
    let mut bytes = Vec::with_capacity(picks.row.len() * elems * out.size());
    let next = picks.next_row.as_deref().unwrap_or(&picks.row);
    let zero = vec![0.0f64; elems];
    let mut weights = picks.weight.as_deref().unwrap_or(&[]).iter();
    for (&r, &n) in picks.row.iter().zip(next) {
        let w = weights.next().copied().unwrap_or(0.0);
        let values: Vec<f64> = match (step_of(col, r), step_of(col, n)) {
            (Some(a), _) if r == n => a
                .chunks_exact(size)
                .map(|x| col.dtype.element_f64(x))
                .collect(),
            (Some(a), Some(b)) => a
                .chunks_exact(size)
                .zip(b.chunks_exact(size))
                .map(|(x, y)| {
                    let (x, y) = (col.dtype.element_f64(x), col.dtype.element_f64(y));
                    x + (y - x) * w
                })
                .collect(),
            _ => zero.clone(),
        };
        for v in values {
            if out == DType::F32 {
                #[allow(clippy::cast_possible_truncation)]
                bytes.extend_from_slice(&(v as f32).to_le_bytes());
            } else {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::align::pick::pick_rows;
    use crate::align::Policy;
    use crate::episode::Lane;

    #[test]
    fn values_linear_on_ints_is_f64() {
        let mut c = ChannelData::new("x", Lane::Signal, DType::I16, vec![]);
        c.push_owned(
            [-10i16, 10].iter().flat_map(|v| v.to_le_bytes()).collect(),
            2,
        )
        .unwrap();
        let p = pick_rows(&[0, 4], &[-1, 0, 1, 4], Policy::Linear, None);
        let out = interpolate(&c, &p, DType::F64);
        let v: Vec<f64> = out
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(v, [0.0, -10.0, -5.0, 10.0]);
        assert_eq!(linear_output_dtype(DType::Bool), None);
        assert_eq!(linear_output_dtype(DType::BF16), Some(DType::F32));
        assert_eq!(linear_output_dtype(DType::U8), Some(DType::F64));
        let g = gather(&c, &pick_rows(&[0, 4], &[-1, 5], Policy::Hold, None));
        assert_eq!(g, [0, 0, 10, 0]);
    }
}
