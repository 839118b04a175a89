//! `socket.mode`: a permission mode written as an octal string (`"0660"`), held as a `u32`.

use serde::{de, Deserialize, Deserializer, Serializer};

/// The largest mode accepted: permission bits only (no setuid, setgid or sticky bit).
pub const MAX_MODE: u32 = 0o777;

/// What is wrong with a permission mode's text; the message is fit for a config error (the
/// caller names the key and the value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModeTextError {
    /// Empty, or a character other than an octal digit (after an optional `0o`).
    #[error("must be an octal permission mode such as \"0660\" (digits 0-7 only)")]
    NotOctal,
    /// More than the permission bits (above [`MAX_MODE`]).
    #[error("must be at most \"0777\" (permission bits only)")]
    TooLarge,
}

/// Parse `"0660"`, `"660"` or `"0o660"`: octal digits only, at most [`MAX_MODE`].
///
/// # Errors
/// [`ModeTextError`] saying what is wrong with the text.
pub fn parse_mode(text: &str) -> Result<u32, ModeTextError> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(ModeTextError::NotOctal);
    }
    match u32::from_str_radix(digits, 8) {
        Ok(mode) if mode <= MAX_MODE => Ok(mode),
        _ => Err(ModeTextError::TooLarge),
    }
}

/// The form written to files: four octal digits, `0660`.
#[must_use]
pub fn format_mode(mode: u32) -> String {
    format!("{mode:04o}")
}

/// `#[serde(with = "octal")]` for a `u32` mode.
pub(crate) fn serialize<S: Serializer>(mode: &u32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_mode(*mode))
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_mode(&text).map_err(de::Error::custom)
}
