//! Keys renamed but still read under their old name, with a warning: a config written for
//! an older `wshardd` keeps working ([`Config::deprecations`] says what to rename).

use std::fmt;

use toml::{Table, Value};

use crate::error::ConfigError;

/// A renamed key: `old` is still read as `new` (the same setting, same meaning, same range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deprecation {
    /// The old dotted key path, e.g. `limits.max_episode_bytes`.
    pub old: &'static str,
    /// The dotted key path it is read as.
    pub new: &'static str,
    /// Why it was renamed.
    pub why: &'static str,
}

impl fmt::Display for Deprecation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is deprecated and read as {} ({}); rename it",
            self.old, self.new, self.why
        )
    }
}

/// Every renamed key. The schema reads each old name as a serde alias of the new field.
pub const DEPRECATED_KEYS: &[Deprecation] = &[Deprecation {
    old: "limits.max_episode_bytes",
    new: "limits.max_episode_wire_bytes",
    why: "it counts the bytes of timestep records received, not bytes on disk",
}];

/// Split `table.key` into the table's name and the key.
fn split(path: &str) -> (&str, &str) {
    path.split_once('.').unwrap_or(("", path))
}

fn sub_table_mut<'t>(root: &'t mut Table, name: &str) -> Option<&'t mut Table> {
    if name.is_empty() {
        return Some(root);
    }
    match root.get_mut(name) {
        Some(Value::Table(t)) => Some(t),
        _ => None,
    }
}

/// Find the deprecated keys `table` uses and rename them to their new names in place, so
/// that the table is what the schema reads.
///
/// # Errors
/// [`ConfigError::Invalid`] when a key is given under both its old and its new name.
pub(crate) fn rename_deprecated(
    table: &mut Table,
    origin: &str,
) -> Result<Vec<Deprecation>, ConfigError> {
    let mut found = Vec::new();
    for d in DEPRECATED_KEYS {
        let (old_table, old_key) = split(d.old);
        let (new_table, new_key) = split(d.new);
        debug_assert_eq!(old_table, new_table, "a rename stays in its table");
        let Some(t) = sub_table_mut(table, old_table) else {
            continue;
        };
        let Some(value) = t.remove(old_key) else {
            continue;
        };
        if t.contains_key(new_key) {
            return Err(ConfigError::invalid(
                origin,
                d.old,
                value.to_string(),
                format!(
                    "is the deprecated name of {}, which is set too; keep only {}",
                    d.new, d.new
                ),
            ));
        }
        t.insert(new_key.to_owned(), value);
        found.push(*d);
    }
    Ok(found)
}

/// An error about a key that was set under its old name names that name.
pub(crate) fn name_old_key(e: ConfigError, used: &[Deprecation]) -> ConfigError {
    match e {
        ConfigError::Invalid {
            origin,
            key,
            value,
            reason,
        } => match used.iter().find(|d| d.new == key) {
            Some(d) => ConfigError::Invalid {
                origin,
                key: format!("{} (deprecated name of {})", d.old, d.new),
                value,
                reason,
            },
            None => ConfigError::Invalid {
                origin,
                key,
                value,
                reason,
            },
        },
        other => other,
    }
}
