//! TOML text to [`Config`], with errors that name the key, its table and the line.
//!
//! Deserialization errors from `toml` carry a span but not the key path. When the full
//! deserialization fails, the parsed table is compared with the serialized defaults: an
//! unknown key is found by name, any other failure by deserializing each of the user's values
//! alone over the defaults until one fails. Both are schema-driven, so nothing here lists keys.

use toml::{Table, Value};

use crate::deprecated::{name_old_key, rename_deprecated};
use crate::error::ConfigError;
use crate::schema::Config;

impl Config {
    /// Parse and validate `text`. `origin` names it in errors (usually the file path).
    /// Relative paths are returned as written (see [`Config::resolve_relative_paths`]).
    ///
    /// # Errors
    /// [`ConfigError::Parse`] for invalid TOML or an unknown key, [`ConfigError::Invalid`] for a
    /// value of the wrong type or out of range.
    ///
    /// A deprecated key (see [`crate::DEPRECATED_KEYS`]) is read under its new name and
    /// listed in [`Config::deprecations`]; giving both names is an error.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut table: Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.to_owned(),
            message: with_line(e.message(), text, e.span()),
        })?;
        let deprecations = rename_deprecated(&mut table, origin)?;
        // From the text, so that errors keep their line; the schema reads old names as
        // aliases. The diagnosis works on the renamed table.
        let mut config = match toml::from_str::<Config>(text) {
            Ok(config) => config,
            Err(e) => return Err(diagnose(origin, text, &table, &e)),
        };
        config
            .validate(origin)
            .map_err(|e| name_old_key(e, &deprecations))?;
        config.deprecations = deprecations;
        Ok(config)
    }
}

/// 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn with_line(message: &str, text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let message = one_line(message);
    match span {
        Some(span) => format!("{message} (line {})", line_of(text, span.start)),
        None => message.to_owned(),
    }
}

/// A dotted key path, quoting the parts that are not bare TOML keys: `codecs.channels."cam*"`.
pub(crate) fn key_path<S: AsRef<str>>(parts: &[S]) -> String {
    parts
        .iter()
        .map(|part| {
            let part = part.as_ref();
            let bare = !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if bare {
                part.to_owned()
            } else {
                format!("{part:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn diagnose(origin: &str, text: &str, user: &Table, err: &toml::de::Error) -> ConfigError {
    let generic = || ConfigError::Parse {
        origin: origin.to_owned(),
        message: with_line(err.message(), text, err.span()),
    };
    let Ok(defaults) = Table::try_from(Config::default()) else {
        return generic();
    };
    if let Some(name) = unknown_field_name(err.message()) {
        if let Some((table, known)) = find_unknown(user, &defaults, &mut Vec::new(), name) {
            let place = if table.is_empty() {
                "at top level".to_owned()
            } else {
                format!("in table [{}]", key_path(&table))
            };
            let line = err
                .span()
                .map(|s| format!(" (line {})", line_of(text, s.start)))
                .unwrap_or_default();
            let closest = known
                .iter()
                .map(|k| (edit_distance(k, name), k))
                .min()
                .filter(|(d, _)| *d <= 1 + name.chars().count() / 3);
            let hint = match closest.map(|(_, k)| k) {
                Some(close) => format!("; did you mean `{close}`?"),
                None => format!("; known keys: {}", known.join(", ")),
            };
            return ConfigError::Parse {
                origin: origin.to_owned(),
                message: format!("unknown key `{name}` {place}{line}{hint}"),
            };
        }
    }
    match find_culprit(user, &defaults, &defaults, &mut Vec::new()) {
        Some((path, value, reason)) => ConfigError::Invalid {
            origin: origin.to_owned(),
            key: key_path(&path),
            value: value.to_string(),
            reason,
        },
        None => generic(),
    }
}

/// `name` from serde's "unknown field `name`, expected ...".
fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// A table of the defaults whose keys are free-form (a map, like `codecs.channels`): it is
/// empty by default. Structs always have keys.
fn is_map(defaults: &Table) -> bool {
    defaults.is_empty()
}

/// The table path holding unknown key `name`, and the keys that table does know.
fn find_unknown(
    user: &Table,
    defaults: &Table,
    path: &mut Vec<String>,
    name: &str,
) -> Option<(Vec<String>, Vec<String>)> {
    if is_map(defaults) {
        return None;
    }
    if user.contains_key(name) && !defaults.contains_key(name) {
        return Some((path.clone(), defaults.keys().cloned().collect()));
    }
    for (key, value) in user {
        if let (Some(Value::Table(sub_defaults)), Value::Table(sub)) = (defaults.get(key), value) {
            path.push(key.clone());
            let found = find_unknown(sub, sub_defaults, path, name);
            path.pop();
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// The first user value that fails to deserialize on its own over the defaults: its path,
/// the value and the deserializer's message.
fn find_culprit(
    user: &Table,
    defaults: &Table,
    root: &Table,
    path: &mut Vec<String>,
) -> Option<(Vec<String>, Value, String)> {
    for (key, value) in user {
        path.push(key.clone());
        let found = match (defaults.get(key), value) {
            // A map's defaults are empty, so each of its entries is tried alone.
            (Some(Value::Table(sub_defaults)), Value::Table(sub)) => {
                find_culprit(sub, sub_defaults, root, path)
            }
            _ => try_alone(root, path, value).map(|reason| (path.clone(), value.clone(), reason)),
        };
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Deserialize the defaults with only `path` set to `value`; the error message if that fails.
fn try_alone(root: &Table, path: &[String], value: &Value) -> Option<String> {
    let mut candidate = root.clone();
    let (last, parents) = path.split_last()?;
    let mut table = &mut candidate;
    for part in parents {
        table = match table.get_mut(part) {
            Some(Value::Table(t)) => t,
            _ => return None,
        };
    }
    table.insert(last.clone(), value.clone());
    match candidate.try_into::<Config>() {
        Ok(_) => None,
        Err(e) => {
            let message = one_line(e.message());
            // serde names the Rust type; the reader knows tables.
            Some(match message.split_once(", expected struct ") {
                Some((head, _)) => format!("{head}, expected a table"),
                None => message,
            })
        }
    }
}

/// toml's messages may span lines; errors are printed on one.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, key_path, line_of};

    #[test]
    fn config_edit_distance() {
        assert_eq!(edit_distance("rotaton", "rotation"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn config_key_path_quotes_non_bare_parts() {
        assert_eq!(
            key_path(&["codecs", "channels", "cam*"]),
            "codecs.channels.\"cam*\""
        );
        assert_eq!(key_path(&["fsync", "interval_ms"]), "fsync.interval_ms");
    }

    #[test]
    fn config_line_of_counts_newlines() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
