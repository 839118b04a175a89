//! A decoded source array: element type, full shape (steps first) and little-endian bytes.

use wshard::episode::DType;

/// An n-dimensional array read from a source file.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub dtype: DType,
    /// Full shape; the first dimension is the step axis for per-step arrays.
    pub shape: Vec<u64>,
    /// Row-major, little-endian element bytes.
    pub data: Vec<u8>,
}

impl Array {
    /// The step count (first dimension); 0 for a scalar.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.shape.first().copied().unwrap_or(0)
    }

    /// Bytes of one step (one row of the first dimension).
    #[must_use]
    pub fn row_bytes(&self) -> usize {
        let elems: u64 = self.shape.iter().skip(1).product();
        usize::try_from(elems).unwrap_or(usize::MAX) * self.dtype.size()
    }

    /// The per-step shape (without the first dimension).
    #[must_use]
    pub fn step_shape(&self) -> Vec<u64> {
        self.shape.iter().skip(1).copied().collect()
    }

    /// Rows `start..end` as a new array.
    #[must_use]
    pub fn rows(&self, start: u64, end: u64) -> Self {
        let rb = self.row_bytes();
        let (s, e) = (
            usize::try_from(start).unwrap_or(usize::MAX),
            usize::try_from(end).unwrap_or(usize::MAX),
        );
        let mut shape = self.shape.clone();
        if let Some(first) = shape.first_mut() {
            *first = end.saturating_sub(start);
        }
        Self {
            dtype: self.dtype,
            shape,
            data: self.data[s * rb..e * rb].to_vec(),
        }
    }

    /// Append `n` rows of zero bytes (0, 0.0, false).
    pub fn pad_rows(&mut self, n: u64) {
        let add = usize::try_from(n).unwrap_or(0) * self.row_bytes();
        self.data.resize(self.data.len() + add, 0);
        if let Some(first) = self.shape.first_mut() {
            *first += n;
        }
    }

    /// Values as f32 (for the `reward` block), converting from any numeric type.
    #[must_use]
    pub fn to_f32(&self) -> Vec<f32> {
        let size = self.dtype.size();
        self.data
            .chunks_exact(size)
            .map(|b| self.dtype.element_f64(b) as f32)
            .collect()
    }

    /// Values as f64.
    #[must_use]
    pub fn to_f64(&self) -> Vec<f64> {
        let size = self.dtype.size();
        self.data
            .chunks_exact(size)
            .map(|b| self.dtype.element_f64(b))
            .collect()
    }

    /// Values as flags (non-zero = true).
    #[must_use]
    pub fn to_bool(&self) -> Vec<bool> {
        let size = self.dtype.size();
        self.data
            .chunks_exact(size)
            .map(|b| self.dtype.element_f64(b) != 0.0)
            .collect()
    }
}
