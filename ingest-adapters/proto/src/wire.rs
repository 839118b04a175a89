//! Little-endian field readers and writers shared by the frame parser and encoder.

use crate::error::ProtoError;

/// A cursor over one frame payload; every read names its field for the error message.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    frame: &'static str,
}

macro_rules! read_le {
    ($name:ident, $ty:ty) => {
        pub(crate) fn $name(&mut self, field: &str) -> Result<$ty, ProtoError> {
            let bytes = self.array::<{ std::mem::size_of::<$ty>() }>(field)?;
            Ok(<$ty>::from_le_bytes(bytes))
        }
    };
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], frame: &'static str) -> Self {
        Self { buf, pos: 0, frame }
    }

    pub(crate) fn frame(&self) -> &'static str {
        self.frame
    }

    pub(crate) fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], ProtoError> {
        let have = self.buf.len() - self.pos;
        if n > have {
            return Err(ProtoError::Truncated {
                frame: self.frame,
                field: field.to_owned(),
                need: n,
                have,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N], ProtoError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    read_le!(u8, u8);
    read_le!(i8, i8);
    read_le!(u16, u16);
    read_le!(u32, u32);
    read_le!(u64, u64);
    read_le!(i64, i64);
    read_le!(f32, f32);
    read_le!(f64, f64);

    fn utf8(&self, bytes: &'a [u8], field: &str) -> Result<String, ProtoError> {
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(ProtoError::BadUtf8 {
                frame: self.frame,
                field: field.to_owned(),
            }),
        }
    }

    /// A `str16`: u16 byte length, then UTF-8.
    pub(crate) fn str16(&mut self, field: &str) -> Result<String, ProtoError> {
        let len = usize::from(self.u16(field)?);
        let bytes = self.take(len, field)?;
        self.utf8(bytes, field)
    }

    /// A `str32`: u32 byte length, then UTF-8.
    pub(crate) fn str32(&mut self, field: &str) -> Result<String, ProtoError> {
        let len = self.u32(field)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let bytes = self.take(len, field)?;
        self.utf8(bytes, field)
    }

    /// A `bytes32`: u32 byte length, then that many bytes.
    pub(crate) fn bytes32(&mut self, field: &str) -> Result<&'a [u8], ProtoError> {
        let len = self.u32(field)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.take(len, field)
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A bad enum or flag value in this frame.
    pub(crate) fn bad_value(&self, field: &str, value: u64, expected: &'static str) -> ProtoError {
        ProtoError::BadValue {
            frame: self.frame,
            field: field.to_owned(),
            value,
            expected,
        }
    }

    /// The payload must be consumed exactly.
    pub(crate) fn finish(self) -> Result<(), ProtoError> {
        let extra = self.buf.len() - self.pos;
        if extra == 0 {
            Ok(())
        } else {
            Err(ProtoError::TrailingBytes {
                frame: self.frame,
                extra,
            })
        }
    }
}

/// Append a `str16`.
///
/// # Errors
/// [`ProtoError::TooLong`] when `s` is longer than `u16::MAX` bytes.
pub(crate) fn put_str16(
    out: &mut Vec<u8>,
    s: &str,
    frame: &'static str,
    field: &str,
) -> Result<(), ProtoError> {
    let len = u16::try_from(s.len()).map_err(|_| too_long(frame, field, s.len(), 0xFFFF))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// Append a `str32`.
///
/// # Errors
/// [`ProtoError::TooLong`] when `s` is longer than `u32::MAX` bytes.
pub(crate) fn put_str32(
    out: &mut Vec<u8>,
    s: &str,
    frame: &'static str,
    field: &str,
) -> Result<(), ProtoError> {
    put_bytes32(out, s.as_bytes(), frame, field)
}

/// Append a `bytes32`.
///
/// # Errors
/// [`ProtoError::TooLong`] when `b` is longer than `u32::MAX` bytes.
pub(crate) fn put_bytes32(
    out: &mut Vec<u8>,
    b: &[u8],
    frame: &'static str,
    field: &str,
) -> Result<(), ProtoError> {
    let len = u32::try_from(b.len()).map_err(|_| too_long(frame, field, b.len(), 0xFFFF_FFFF))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

pub(crate) fn too_long(frame: &'static str, field: &str, len: usize, max: usize) -> ProtoError {
    ProtoError::TooLong {
        frame,
        field: field.to_owned(),
        len,
        max,
    }
}

/// `N` bytes at `at`; the caller guarantees the range is in bounds.
pub(crate) fn array_at<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[at..at + N]);
    out
}

/// Truncate `s` to at most `max` bytes on a char boundary.
pub(crate) fn truncate_utf8(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while cut > 0 && !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}
