//! The one rule for the names that become directory and file names: an episode id and a
//! stream name are each 1..=`max` bytes of `[A-Za-z0-9._-]`, not starting with `.` (no
//! hidden file, no `.` or `..`, no separator).
//!
//! Each user sets its own limit and turns a [`NameRuleError`] into its own error: the
//! protocol's `BAD_EPISODE_ID` reasons (`wshard-ingest-proto`), the daemon's layout's
//! `EpisodeIdError` (`wshard-storage`), [`super::names::StreamNameError`]. [`name_safe`]
//! makes any text fit the alphabet (import prefixes, the robot name from the host name).

/// True for the characters a name may hold: `A-Z a-z 0-9 . _ -`.
#[must_use]
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// The part of the rule a name breaks (the first, in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameRuleError {
    /// Empty (`len` 0) or longer than `max` bytes.
    #[error("must be 1..={max} bytes, is {len}")]
    Length { len: usize, max: usize },
    /// Starts with `.`.
    #[error("must not start with `.`")]
    LeadingDot,
    /// Holds a character outside the alphabet ([`is_name_char`]).
    #[error("contains {0:?}: only A-Z a-z 0-9 . _ - are allowed")]
    BadChar(char),
}

/// Check `name` against the rule with a limit of `max` bytes.
///
/// # Errors
/// The first [`NameRuleError`] it breaks: length, then leading dot, then character.
pub fn check_name(name: &str, max: usize) -> Result<(), NameRuleError> {
    if name.is_empty() || name.len() > max {
        return Err(NameRuleError::Length {
            len: name.len(),
            max,
        });
    }
    if name.starts_with('.') {
        return Err(NameRuleError::LeadingDot);
    }
    match name.chars().find(|&c| !is_name_char(c)) {
        Some(c) => Err(NameRuleError::BadChar(c)),
        None => Ok(()),
    }
}

/// `text` in the rule's alphabet: every other character replaced by `_`, leading dots
/// dropped. The result may be empty and is not cut to any length.
#[must_use]
pub fn name_safe(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect();
    mapped.trim_start_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule_checks_length_then_dot_then_characters() {
        assert_eq!(
            check_name("", 4),
            Err(NameRuleError::Length { len: 0, max: 4 })
        );
        assert_eq!(
            check_name("abcde", 4),
            Err(NameRuleError::Length { len: 5, max: 4 })
        );
        assert_eq!(check_name(".a/", 4), Err(NameRuleError::LeadingDot));
        assert_eq!(check_name("a b", 4), Err(NameRuleError::BadChar(' ')));
        assert_eq!(check_name("é", 4), Err(NameRuleError::BadChar('é')));
        for good in ["a", "A._-", "0..", "abcd"] {
            assert_eq!(check_name(good, 4), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn name_rule_name_safe_fits_the_alphabet() {
        assert_eq!(name_safe("..my robot/1"), "my_robot_1");
        assert_eq!(name_safe("._x"), "_x");
        assert_eq!(name_safe("..."), "");
        assert_eq!(name_safe("é"), "_");
    }
}
