//! The AWS shared credentials file (`~/.aws/credentials`, or `AWS_SHARED_CREDENTIALS_FILE`):
//! the profile's `aws_access_key_id`, `aws_secret_access_key` and `aws_session_token`.
//!
//! A small INI reader of our own rather than a crate: the format needed here is a few
//! lines (sections, `key = value`, `#`/`;` comments), and every message it gives is built
//! here so that none can quote a line of the file (a line may hold a secret): errors name
//! the file, the profile, the key and a line number, never a value.

use std::path::{Path, PathBuf};

use crate::error::PublishError;

/// The variable naming the credentials file.
pub const ENV_SHARED_CREDENTIALS_FILE: &str = "AWS_SHARED_CREDENTIALS_FILE";
/// The variable naming the profile.
pub const ENV_PROFILE: &str = "AWS_PROFILE";
/// The profile when `AWS_PROFILE` is unset.
pub const DEFAULT_PROFILE: &str = "default";

/// The keys of a profile, as read (values never printed by this module).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct ProfileKeys {
    pub(crate) access_key_id: Option<String>,
    pub(crate) secret_access_key: Option<String>,
    pub(crate) session_token: Option<String>,
}

/// Why a profile could not be read out of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParseProblem {
    /// No `[profile]` section.
    NoProfile,
    /// A line that is no section, no `key = value`, no comment (1-based).
    BadLine(usize),
}

/// The keys of `profile` in the text of a credentials file. Section names are compared
/// trimmed (`[ default ]` is `default`); `[profile NAME]` (the config file's spelling) is
/// accepted too; key names are compared case-insensitively; a later value wins.
pub(crate) fn parse(text: &str, profile: &str) -> Result<ProfileKeys, ParseProblem> {
    let mut keys = ProfileKeys::default();
    let mut found = false;
    let mut inside = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let Some(name) = section.strip_suffix(']') else {
                return Err(ParseProblem::BadLine(n + 1));
            };
            let name = name.trim();
            let name = name.strip_prefix("profile ").map_or(name, str::trim);
            inside = name == profile;
            found |= inside;
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(ParseProblem::BadLine(n + 1));
        };
        if !inside {
            continue;
        }
        let v = Some(v.trim().to_owned()).filter(|v| !v.is_empty());
        match k.trim().to_ascii_lowercase().as_str() {
            "aws_access_key_id" => keys.access_key_id = v,
            "aws_secret_access_key" => keys.secret_access_key = v,
            "aws_session_token" => keys.session_token = v,
            _ => {}
        }
    }
    if found {
        Ok(keys)
    } else {
        Err(ParseProblem::NoProfile)
    }
}

/// The credentials file: `AWS_SHARED_CREDENTIALS_FILE`, else `$HOME/.aws/credentials`
/// (`None` when neither names one).
#[must_use]
pub fn credentials_file_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(ENV_SHARED_CREDENTIALS_FILE).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(&h).join(".aws").join("credentials"))
}

/// The profile: `AWS_PROFILE`, else `default`.
#[must_use]
pub fn profile_name() -> String {
    std::env::var(ENV_PROFILE)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_PROFILE.to_owned())
}

/// Read `profile` from the file at `path`: `Ok(None)` when the file does not exist.
pub(crate) fn read(path: &Path, profile: &str) -> Result<Option<ProfileKeys>, PublishError> {
    let bad = |reason: String| PublishError::CredentialsFile {
        file: path.to_path_buf(),
        profile: profile.to_owned(),
        reason,
    };
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // The kind only: the error's text holds nothing secret, but keep it short.
        Err(e) => return Err(bad(format!("cannot read it: {}", e.kind()))),
    };
    match parse(&text, profile) {
        Ok(keys) => Ok(Some(keys)),
        Err(ParseProblem::NoProfile) => Err(bad(format!("no [{profile}] section"))),
        Err(ParseProblem::BadLine(n)) => Err(bad(format!(
            "line {n} is no [section], no key = value and no comment"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n[default]\naws_access_key_id = AKID1\naws_secret_access_key=S1\n\n\
                        [ prod ]\n; other\nAWS_ACCESS_KEY_ID = AKID2\naws_secret_access_key = S2\n\
                        aws_session_token = T2\nregion = eu-west-1\n[profile cfg]\naws_access_key_id=A3\n";

    #[test]
    fn credentials_file_profiles_are_read() {
        let d = parse(FILE, "default").expect("default");
        assert_eq!(d.access_key_id.as_deref(), Some("AKID1"));
        assert_eq!(d.secret_access_key.as_deref(), Some("S1"));
        assert_eq!(d.session_token, None);
        let p = parse(FILE, "prod").expect("prod");
        assert_eq!(p.access_key_id.as_deref(), Some("AKID2"));
        assert_eq!(p.session_token.as_deref(), Some("T2"));
        let c = parse(FILE, "cfg").expect("cfg");
        assert_eq!(
            (c.access_key_id.as_deref(), c.secret_access_key),
            (Some("A3"), None)
        );
        assert_eq!(parse(FILE, "nope").err(), Some(ParseProblem::NoProfile));
        assert_eq!(
            parse("[default]\nthis line holds a secret\n", "default").err(),
            Some(ParseProblem::BadLine(2))
        );
        assert_eq!(
            parse("[default\n", "default").err(),
            Some(ParseProblem::BadLine(1))
        );
    }
}
