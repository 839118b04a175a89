//! `wshard doctor`: check the object-store setup that `wshard publish` uses, one line per
//! check (`ok`, `FAILED` with a hint, or `skipped`); `--json` prints one array. Exit 0 when
//! every check is ok, 1 otherwise. Credentials are reported as set or not, never shown.

use std::io::Write;

use serde_json::json;
use wshard_publish::doctor::{self, Check, CheckStatus};
use wshard_publish::Credentials;

use crate::store::args::StoreArgs;

/// Check the object-store setup: endpoint, credentials, bucket, writes
///
/// Check the object-store setup: endpoint, credentials, bucket, write, conditional puts.
/// One line per check.
///
/// Exit codes: 0 every check is ok, 1 any failed, 2 usage.
#[derive(Clone, Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print one JSON array instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the checks; returns the exit code.
pub fn run(args: &DoctorArgs, out: &mut dyn Write) -> u8 {
    let checks = match args.store.config() {
        Ok(config) => doctor::run(
            &config,
            Credentials::load_for(config.provider),
            &args.store.transfer(),
        ),
        Err(e) => vec![Check {
            name: "config",
            status: CheckStatus::Failed,
            detail: e.to_string(),
            hint: Some("fix --provider / WSHARD_STORE_PROVIDER or the bucket URL".into()),
        }],
    };
    let all_ok = checks.iter().all(|c| c.status == CheckStatus::Ok);
    let _ = if args.json {
        writeln!(out, "{}", checks_json(&checks))
    } else {
        write_text(&checks, out)
    };
    u8::from(!all_ok)
}

fn checks_json(checks: &[Check]) -> serde_json::Value {
    checks
        .iter()
        .map(|c| json!({"check": c.name, "status": c.status.as_str(), "detail": c.detail, "hint": c.hint}))
        .collect()
}

fn write_text(checks: &[Check], out: &mut dyn Write) -> std::io::Result<()> {
    for c in checks {
        writeln!(out, "{:<7} {:<17} {}", c.status.as_str(), c.name, c.detail)?;
        if let Some(h) = &c.hint {
            writeln!(out, "{:<7} {:<17} hint: {h}", "", "")?;
        }
    }
    Ok(())
}
