//! Finding and reading the configuration: `--config` > `$WSHARDD_CONFIG` >
//! `/etc/wshardd/wshardd.toml` > `./wshardd.toml` > built-in defaults.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::schema::Config;

/// Environment variable naming the configuration file when `--config` is not given.
pub const ENV_VAR: &str = "WSHARDD_CONFIG";
/// The system-wide configuration file, used when it exists.
pub const SYSTEM_CONFIG_PATH: &str = "/etc/wshardd/wshardd.toml";
/// The configuration file in the working directory, used when it exists.
pub const LOCAL_CONFIG_PATH: &str = "./wshardd.toml";
/// The origin named in errors about the built-in defaults.
pub const DEFAULTS_ORIGIN: &str = "built-in defaults";

/// The files tried, in order, after `--config` and [`ENV_VAR`].
#[must_use]
pub fn default_candidates() -> Vec<PathBuf> {
    vec![
        PathBuf::from(SYSTEM_CONFIG_PATH),
        PathBuf::from(LOCAL_CONFIG_PATH),
    ]
}

/// Where the loaded configuration came from, for the startup log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH`.
    Explicit(PathBuf),
    /// `$WSHARDD_CONFIG`.
    Env(PathBuf),
    /// The first existing file of the candidates (`/etc/wshardd/wshardd.toml`,
    /// `./wshardd.toml`).
    Found(PathBuf),
    /// No file: the built-in defaults.
    Defaults,
}

impl ConfigSource {
    /// The file read, `None` for the defaults.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Explicit(p) | Self::Env(p) | Self::Found(p) => Some(p),
            Self::Defaults => None,
        }
    }
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Explicit(p) => write!(f, "{} (--config)", p.display()),
            Self::Env(p) => write!(f, "{} (${ENV_VAR})", p.display()),
            Self::Found(p) => write!(f, "{}", p.display()),
            Self::Defaults => f.write_str(DEFAULTS_ORIGIN),
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, ConfigError> {
    std::path::absolute(path).map_err(|source| ConfigError::Io {
        path: path.to_owned(),
        source,
    })
}

impl Config {
    /// Load with the real environment and the default candidates
    /// ([`ENV_VAR`], [`default_candidates`]); see [`Config::load_with`].
    ///
    /// # Errors
    /// See [`Config::load_with`].
    pub fn load(explicit: Option<&Path>) -> Result<(Config, ConfigSource), ConfigError> {
        Self::load_with(explicit, std::env::var_os(ENV_VAR), &default_candidates())
    }

    /// Load from the first of: `explicit`, `env_value` (the value of [`ENV_VAR`]; empty
    /// counts as unset), the first of `candidates` that exists, the built-in defaults.
    ///
    /// Relative `data_dir` and `socket.path` are resolved against the directory of the file
    /// read, or against the working directory for the defaults; the returned paths are
    /// absolute.
    ///
    /// # Errors
    /// [`ConfigError::Io`] when the explicit or environment file is missing or a file cannot
    /// be read, otherwise as [`Config::from_toml_str`].
    pub fn load_with(
        explicit: Option<&Path>,
        env_value: Option<OsString>,
        candidates: &[PathBuf],
    ) -> Result<(Config, ConfigSource), ConfigError> {
        if let Some(path) = explicit {
            let config = Self::from_file(path)?;
            return Ok((config, ConfigSource::Explicit(absolute(path)?)));
        }
        if let Some(value) = env_value.filter(|v| !v.is_empty()) {
            let path = PathBuf::from(value);
            let config = Self::from_file(&path)?;
            return Ok((config, ConfigSource::Env(absolute(&path)?)));
        }
        for path in candidates {
            let exists = path.try_exists().map_err(|source| ConfigError::Io {
                path: path.clone(),
                source,
            })?;
            if exists {
                let config = Self::from_file(path)?;
                return Ok((config, ConfigSource::Found(absolute(path)?)));
            }
        }
        let mut config = Config::default();
        config.resolve_relative_paths(&absolute(Path::new("."))?);
        config.validate_resolved(DEFAULTS_ORIGIN)?;
        Ok((config, ConfigSource::Defaults))
    }

    /// Read, parse and validate one file, resolving relative paths against its directory.
    ///
    /// # Errors
    /// [`ConfigError::Io`] naming the path when it cannot be read, otherwise as
    /// [`Config::from_toml_str`].
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        let origin = path.display().to_string();
        let mut config = Self::from_toml_str(&text, &origin)?;
        let file = absolute(path)?;
        let dir = file.parent().unwrap_or(Path::new("/"));
        config.resolve_relative_paths(dir);
        config.validate_resolved(&origin)?;
        Ok(config)
    }

    /// Make relative `data_dir`, `socket.path` and `control.path` relative to `base`
    /// (absolute paths are kept).
    pub fn resolve_relative_paths(&mut self, base: &Path) {
        for path in [
            &mut self.data_dir,
            &mut self.socket.path,
            &mut self.control.path,
        ] {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        }
    }
}
