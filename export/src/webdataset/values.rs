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

/// One little-endian element of `dtype` as f64.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn element_f64(dtype: DType, b: &[u8]) -> f64 {
    let a2 = || [b[0], b[1]];
    let a4 = || [b[0], b[1], b[2], b[3]];
    let a8 = || [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
    match dtype {
        DType::F64 => f64::from_le_bytes(a8()),
        DType::F32 => f64::from(f32::from_le_bytes(a4())),
        DType::F16 => f64::from(half::f16::from_le_bytes(a2())),
        DType::BF16 => f64::from(half::bf16::from_le_bytes(a2())),
        DType::I64 => i64::from_le_bytes(a8()) as f64,
        DType::I32 => f64::from(i32::from_le_bytes(a4())),
        DType::I16 => f64::from(i16::from_le_bytes(a2())),
        DType::I8 => f64::from(i8::from_le_bytes([b[0]])),
        DType::U64 => u64::from_le_bytes(a8()) as f64,
        DType::U32 => f64::from(u32::from_le_bytes(a4())),
        DType::U16 => f64::from(u16::from_le_bytes(a2())),
        DType::U8 | DType::Bool => f64::from(b[0]),
    }
}

/// Every element of `bytes` (a whole number of `dtype` elements) as f64.
#[must_use]
pub fn to_f64(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(dtype.size())
        .map(|b| element_f64(dtype, b))
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
