//! Low-dimensional values: an aligned column's rows as f64 (for statistics, the non-finite
//! check and the still-sample filter) and the dtype they are written with.

use wshard::episode::DType;

/// The dtype a channel of `dtype` is written to `lowdim.npz` with: its own, except bf16
/// (numpy has none), written as f32.
#[must_use]
pub fn npz_dtype(dtype: DType) -> DType {
    if dtype == DType::BF16 {
        DType::F32
    } else {
        dtype
    }
}

/// Every element of `bytes` (a whole number of `dtype` elements) as f64.
#[must_use]
pub fn to_f64(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(dtype.size())
        .map(|b| dtype.element_f64(b))
        .collect()
}

/// The bytes of `values` (f64) written as `dtype` would hold them, for bf16 columns only
/// (written as f32); other dtypes are copied as they are.
#[must_use]
#[allow(clippy::cast_possible_truncation)]
pub fn bf16_as_f32(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| (*v as f32).to_le_bytes())
        .collect()
}
