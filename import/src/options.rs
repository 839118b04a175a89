//! Options shared by every source format, and how ids and rates are derived from them.

use std::path::Path;

use wshard::episode_dir::name_rule::name_safe;

/// The rate written when neither `--hz` nor the source gives one: one tick per step, so a
/// step's time in seconds is its index.
pub const DEFAULT_HZ: f64 = 1.0;
/// Digits of the step-count index in derived ids (`{prefix}-000042`), so ids sort.
pub const INDEX_DIGITS: usize = 6;

/// What every importer takes.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Tick rate of the episodes; `None`: the source's, else [`DEFAULT_HZ`].
    pub hz: Option<f64>,
    /// Prefix of derived episode ids; `None`: from the source's name.
    pub prefix: Option<String>,
    /// `env_id` of the episodes; `None`: from the source when it has one.
    pub env_id: Option<String>,
}

impl ImportOptions {
    /// The rate to write and where it came from (`option`, `source`, `default`).
    #[must_use]
    pub fn rate(&self, from_source: Option<f64>) -> (f64, &'static str) {
        match (self.hz, from_source) {
            (Some(hz), _) => (hz, "option"),
            (None, Some(hz)) => (hz, "source"),
            (None, None) => (DEFAULT_HZ, "default"),
        }
    }

    /// The id prefix: the option, else `fallback` made id-safe.
    #[must_use]
    pub fn prefix_or(&self, fallback: &str) -> String {
        self.prefix.clone().unwrap_or_else(|| id_safe(fallback))
    }
}

/// `text` with every character outside `[A-Za-z0-9._-]` replaced by `_` and leading dots
/// dropped (the episode-id alphabet, [`name_safe`]), `episode` when nothing is left.
#[must_use]
pub fn id_safe(text: &str) -> String {
    let s = name_safe(text);
    if s.is_empty() {
        "episode".into()
    } else {
        s
    }
}

/// `{prefix}-{index:06}`.
#[must_use]
pub fn indexed_id(prefix: &str, index: u64) -> String {
    format!("{prefix}-{index:0width$}", width = INDEX_DIGITS)
}

/// The file stem of `path` (or its name), for ids and prefixes.
#[must_use]
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .or_else(|| path.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
