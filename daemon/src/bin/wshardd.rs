//! `wshardd`: the durable WShard recorder daemon.
//!
//! The data path runs on threads, not an async runtime: the work is blocking file I/O and
//! fsync, each episode's ordering is naturally one writer thread, and backpressure is a
//! bounded channel that blocks the connection's reader (which then stops reading its
//! socket). Only the optional `/metrics` endpoint runs on a (one-thread) tokio runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wshardd_config::{Config, ConfigSource};

/// The durable WShard recorder daemon.
#[derive(Debug, Parser)]
#[command(name = "wshardd", version, about)]
struct Args {
    /// Config file (else $WSHARDD_CONFIG, /etc/wshardd/wshardd.toml, ./wshardd.toml, built-in defaults).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Load and validate the config, print where it came from, and exit.
    #[arg(long)]
    check_config: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (cfg, source) = match Config::load(args.config.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("wshardd: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check_config {
        println!("config ok: {source}");
        println!("data_dir = {}", cfg.data_dir.display());
        println!("socket.path = {}", cfg.socket.path.display());
        for d in &cfg.deprecations {
            println!("warning: {d}");
        }
        return ExitCode::SUCCESS;
    }
    init_logging(&cfg);
    tracing::info!(config = %source, "starting wshardd {}", env!("CARGO_PKG_VERSION"));
    warn_deprecated(&cfg);
    let control = wshard_recorder::server::Control::default();
    if let Err(e) = install_signals(&control) {
        eprintln!("wshardd: cannot install signal handlers: {e}");
        return ExitCode::from(2);
    }
    let reload = || reload_config(&args.config, &source);
    match wshard_recorder::server::run(&cfg, &control, &reload, &|_| {}) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("wshardd: {e}");
            ExitCode::from(1)
        }
    }
}

fn reload_config(explicit: &Option<PathBuf>, source: &ConfigSource) -> Option<Config> {
    let path = explicit
        .clone()
        .or_else(|| source.path().map(std::path::Path::to_path_buf));
    let loaded = match path {
        Some(p) => Config::from_file(&p),
        None => Config::load(None).map(|(c, _)| c),
    };
    match loaded {
        Ok(c) => {
            warn_deprecated(&c);
            Some(c)
        }
        Err(e) => {
            tracing::error!("SIGHUP: config not reloaded, nothing changed: {e}");
            None
        }
    }
}

/// One warning per deprecated key the config used (read under its new name).
fn warn_deprecated(cfg: &Config) {
    for d in &cfg.deprecations {
        tracing::warn!("config: {d}");
    }
}

fn init_logging(cfg: &Config) {
    wshard_recorder::runtime::logging::init(cfg.log.level.as_str());
}

/// SIGTERM / SIGINT: graceful shutdown; a second one exits at once (recovery covers it).
/// SIGHUP: re-read the config.
fn install_signals(control: &wshard_recorder::server::Control) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGTERM, SIGINT] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, control.shutdown.clone())?;
        signal_hook::flag::register(sig, control.shutdown.clone())?;
    }
    signal_hook::flag::register(SIGHUP, control.reload.clone())?;
    Ok(())
}
