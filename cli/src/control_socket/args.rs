//! The flags that say where a running daemon's control socket is, shared by `wshard status`,
//! `episodes`, `close` and `metrics`.

use std::path::PathBuf;

use super::call::ControlOptions;

/// Where the running daemon's control socket is.
#[derive(Debug, clap::Args)]
pub struct ControlArgs {
    /// The control socket (else `control.path` of the config).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// The daemon's config file (else $WSHARDD_CONFIG, /etc/wshardd/wshardd.toml,
    /// ./wshardd.toml, built-in defaults, as wshardd looks).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Print the daemon's JSON reply instead of text.
    #[arg(long)]
    json: bool,
}

impl ControlArgs {
    /// The options of a control call.
    #[must_use]
    pub fn options(self) -> ControlOptions {
        ControlOptions {
            control: self.control,
            config: self.config,
            json: self.json,
        }
    }
}
