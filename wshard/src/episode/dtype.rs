//! The 13 element types of WShard channels (spec 10.5).

use crate::error::{FormatError, Result};

/// Element type of a channel. Values are little-endian, row-major, timestep-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
    Bool,
}

impl DType {
    /// One little-endian element of this dtype as f64 (`b` holds at least [`size`](Self::size)
    /// bytes): exact for every dtype except 64-bit integers beyond 2^53; bool is 0 or 1
    /// (any non-zero byte is its value).
    ///
    /// # Panics
    /// When `b` is shorter than one element.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn element_f64(self, b: &[u8]) -> f64 {
        let a2 = || [b[0], b[1]];
        let a4 = || [b[0], b[1], b[2], b[3]];
        let a8 = || [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            Self::F64 => f64::from_le_bytes(a8()),
            Self::F32 => f64::from(f32::from_le_bytes(a4())),
            Self::F16 => f64::from(half::f16::from_le_bytes(a2())),
            Self::BF16 => f64::from(half::bf16::from_le_bytes(a2())),
            Self::I64 => i64::from_le_bytes(a8()) as f64,
            Self::I32 => f64::from(i32::from_le_bytes(a4())),
            Self::I16 => f64::from(i16::from_le_bytes(a2())),
            Self::I8 => f64::from(i8::from_le_bytes([b[0]])),
            Self::U64 => u64::from_le_bytes(a8()) as f64,
            Self::U32 => f64::from(u32::from_le_bytes(a4())),
            Self::U16 => f64::from(u16::from_le_bytes(a2())),
            Self::U8 | Self::Bool => f64::from(b[0]),
        }
    }

    /// All 13 codes.
    pub const ALL: [DType; 13] = [
        Self::F64,
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::I64,
        Self::I32,
        Self::I16,
        Self::I8,
        Self::U64,
        Self::U32,
        Self::U16,
        Self::U8,
        Self::Bool,
    ];

    /// Bytes per element.
    #[must_use]
    pub fn size(self) -> usize {
        match self {
            Self::F64 | Self::I64 | Self::U64 => 8,
            Self::F32 | Self::I32 | Self::U32 => 4,
            Self::F16 | Self::BF16 | Self::I16 | Self::U16 => 2,
            Self::I8 | Self::U8 | Self::Bool => 1,
        }
    }

    /// The short code written in `meta/channels`.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::F64 => "f64",
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::I64 => "i64",
            Self::I32 => "i32",
            Self::I16 => "i16",
            Self::I8 => "i8",
            Self::U64 => "u64",
            Self::U32 => "u32",
            Self::U16 => "u16",
            Self::U8 => "u8",
            Self::Bool => "bool",
        }
    }

    /// Parse a short code, or one of the long names Go canonicalizes (case-insensitive).
    ///
    /// # Errors
    /// [`FormatError::BadMeta`] naming the unknown string.
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        let d = match lower.as_str() {
            "f64" | "float64" | "double" => Self::F64,
            "f32" | "float32" | "float" => Self::F32,
            "f16" | "float16" | "half" => Self::F16,
            "bf16" | "bfloat16" => Self::BF16,
            "i64" | "int64" => Self::I64,
            "i32" | "int32" | "int" => Self::I32,
            "i16" | "int16" => Self::I16,
            "i8" | "int8" => Self::I8,
            "u64" | "uint64" => Self::U64,
            "u32" | "uint32" => Self::U32,
            "u16" | "uint16" => Self::U16,
            "u8" | "uint8" | "byte" => Self::U8,
            "bool" | "boolean" => Self::Bool,
            _ => {
                return Err(FormatError::BadMeta {
                    block: "meta/channels".into(),
                    field: "dtype".into(),
                    message: format!("unknown dtype {s:?}"),
                })
            }
        };
        Ok(d)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_golden_hashes_json() {
        let want = [
            ("bf16", 2),
            ("bool", 1),
            ("f16", 2),
            ("f32", 4),
            ("f64", 8),
            ("i16", 2),
            ("i32", 4),
            ("i64", 8),
            ("i8", 1),
            ("u16", 2),
            ("u32", 4),
            ("u64", 8),
            ("u8", 1),
        ];
        for (code, size) in want {
            let d = DType::parse(code).unwrap();
            assert_eq!(d.size(), size);
            assert_eq!(d.code(), code);
        }
        assert_eq!(DType::parse("Float32").unwrap(), DType::F32);
        assert!(DType::parse("complex64").is_err());
    }
}
