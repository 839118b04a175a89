//! `wshard query "SQL" [--dataset WS/NAME | --all] [--json | --csv]`: run one SQL statement
//! with DuckDB on the catalogs of the latest dataset versions, in place on the store
//! (docs/PUBLISH.md, "Querying"). We resolve which catalog files to read (`latest.json` of
//! each dataset, then `catalog/<version>.parquet`); DuckDB (Python `duckdb` with its httpfs
//! extension from `duckdb-extension-httpfs`) reads them with range requests: nothing is
//! downloaded by us. The interpreter is `$WSHARD_PYTHON`, else `python3`.
//!
//! Exit codes: 0 ok, 1 failed (store, no catalog, SQL error), 2 usage or setup (bad
//! dataset name, store settings, credentials missing, python or duckdb missing).

use std::io::Write;
use std::process::Command;

use wshard_publish::query::{catalog_targets, CatalogTarget, QUERY_SCRIPT};
use wshard_publish::{
    Credentials, DatasetId, Provider, PublishError, Publisher, Store, StoreConfig,
};

use crate::python::python;
use crate::store::args::StoreArgs;

/// Exit: ok.
pub const EXIT_OK: u8 = 0;
/// Exit: failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit: usage or setup.
pub const EXIT_USAGE: u8 = 2;
/// How to get DuckDB.
pub const INSTALL_HINT: &str = "install python3 with `python3 -m pip install duckdb==1.5.5 \
     duckdb-extension-httpfs==1.5.5`, or point $WSHARD_PYTHON at a python that has them";

/// Run SQL with DuckDB on the datasets' catalogs, in place on the store
///
/// Run SQL with DuckDB on the catalog (one row per episode stream) of the latest version of
/// one dataset (--dataset) or of every dataset (--all, the default), in place on the store.
/// Needs python3 with duckdb and duckdb-extension-httpfs 1.5.5.
///
/// Exit codes: 0 ok, 1 failed (store, no catalog, SQL error), 2 usage or setup.
#[derive(Clone, Debug, clap::Args)]
pub struct QueryArgs {
    /// The SQL; the table is `catalog` (one row per episode stream, docs/PUBLISH.md).
    pub sql: String,
    /// Query this dataset's latest version (workspace/name).
    #[arg(long, value_name = "WS/NAME", conflicts_with = "all")]
    pub dataset: Option<String>,
    /// Query the latest version of every dataset under the prefix (the default).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// One JSON object per row instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV with a header row instead of a table.
    #[arg(long)]
    pub csv: bool,
}

fn exit_code(e: &PublishError) -> u8 {
    match e {
        PublishError::InvalidDataset { .. }
        | PublishError::InvalidConfig { .. }
        | PublishError::CredentialsMissing { .. }
        | PublishError::CredentialsFile { .. } => EXIT_USAGE,
        _ => EXIT_FAILED,
    }
}

fn targets(
    args: &QueryArgs,
) -> Result<(StoreConfig, Credentials, Vec<CatalogTarget>), PublishError> {
    let dataset = args.dataset.as_deref().map(DatasetId::parse).transpose()?;
    let config = args.store.config()?;
    config.validate()?;
    if config.provider != Provider::S3 {
        // DuckDB is handed S3 credentials (httpfs); its GCS and Azure setups are not wired.
        return Err(PublishError::InvalidConfig {
            field: "provider",
            reason: format!(
                "wshard query reads catalogs on s3 only, not on {}",
                config.provider
            ),
        });
    }
    let creds = Credentials::load()?;
    let store = Store::new(config.clone(), &creds, args.store.transfer())?;
    let p = Publisher::new(store);
    p.store().check_bucket(p.keys().prefix())?;
    let targets = catalog_targets(&p, dataset.as_ref())?;
    Ok((config, creds, targets))
}

/// `host:port` of an endpoint URL, and whether it is https.
fn host_port(endpoint: &str) -> (String, bool) {
    let ssl = endpoint.starts_with("https://");
    let rest = endpoint
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    (rest.trim_end_matches('/').to_owned(), ssl)
}

/// Run `wshard query`; returns the exit code.
pub fn run(args: &QueryArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (config, creds, targets) = match targets(args) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "wshard query: {e}");
            return exit_code(&e);
        }
    };
    let (endpoint, ssl) = host_port(&config.endpoint);
    let format = if args.json {
        "json"
    } else if args.csv {
        "csv"
    } else {
        "table"
    };
    let py = python();
    let mut cmd = Command::new(&py);
    // From the environment or the credentials file: DuckDB gets them in its environment.
    creds.export_to(&mut cmd);
    cmd.arg("-c")
        .arg(QUERY_SCRIPT)
        .args(["--endpoint", &endpoint])
        .args(["--ssl", if ssl { "1" } else { "0" }])
        .args(["--region", &config.region])
        .args(["--format", format])
        .args(["--sql", &args.sql]);
    for t in &targets {
        cmd.arg(format!("s3://{}/{}", config.bucket, t.key));
    }
    match cmd.output() {
        Ok(o) => {
            let _ = out.write_all(&o.stdout);
            let _ = err.write_all(&o.stderr);
            match o.status.code() {
                Some(0) => EXIT_OK,
                Some(c) if c == i32::from(EXIT_USAGE) => EXIT_USAGE,
                _ => EXIT_FAILED,
            }
        }
        Err(e) => {
            let _ = writeln!(
                err,
                "wshard query: cannot run {}: {e}; {INSTALL_HINT}",
                py.to_string_lossy()
            );
            EXIT_USAGE
        }
    }
}
