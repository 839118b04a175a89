//! `wshard publish --dataset WS/NAME [--data-dir DIR] [EPISODE...]`: publish finished
//! episodes to an S3-compatible store as a dataset version (docs/PUBLISH.md), printing each
//! file sent or skipped and the version hash; `--json` prints one JSON object instead.
//!
//! Exit codes: 0 published (or nothing new: same version), 1 failed (store, episode or
//! verification error), 2 usage (bad dataset name, store settings, credentials missing),
//! 3 another publisher moved `latest.json` first (the version is stored; run again to put
//! it on top of the new latest).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use wshard_publish::publish::{BlobAction, BlobReport, LatestChange};
use wshard_publish::{DatasetId, PublishError, PublishReport};
use wshardd_config::Config;

use crate::store::args::StoreArgs;
use crate::store::exit_code::{exit_code, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Publish finished episodes to an S3-compatible store as a dataset version
///
/// Publish finished episodes (complete, interrupted, recovered) of a data directory to an
/// S3-compatible store as a dataset version: content-addressed blobs, an immutable version
/// manifest, latest.json moved by compare-and-swap. Credentials (S3) from AWS_ACCESS_KEY_ID
/// / AWS_SECRET_ACCESS_KEY, else the profile AWS_PROFILE of the shared credentials file
/// (~/.aws/credentials).
///
/// Exit codes: 0 published, 1 failed, 2 usage, 3 another publisher moved latest.json first.
#[derive(Clone, Debug, clap::Args)]
pub struct PublishArgs {
    /// The dataset, workspace/name (a-z 0-9 _ -).
    #[arg(long, value_name = "WS/NAME")]
    pub dataset: String,
    /// The data directory (else data_dir of the wshardd config, found as wshardd finds it).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The wshardd config whose data_dir to use.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Episodes to publish (each must be complete, interrupted or recovered); default every
    /// finished episode of the data directory.
    pub episodes: Vec<String>,
    /// Add the episodes to the dataset's latest version (latest's episodes plus these, the
    /// catalog merged, retried on a compare-and-swap conflict) instead of replacing it:
    /// several robots feeding one dataset.
    #[arg(long)]
    pub append: bool,
    /// With --append: the robot these episodes come from; their keys become ROBOT/EPISODE
    /// and the catalog's robot column is ROBOT when an episode's metadata has none. 1-64
    /// bytes of A-Z a-z 0-9 . _ -, not starting with `.` (as wshardd's publish.robot).
    #[arg(long, value_name = "R", requires = "append")]
    pub robot: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// No `--data-dir`, and the wshardd config that would name the data directory cannot be
/// loaded.
#[derive(Debug, thiserror::Error)]
#[error("no --data-dir, and the wshardd config cannot be loaded: {0}")]
struct NoDataDir(wshardd_config::ConfigError);

fn data_dir(args: &PublishArgs) -> Result<PathBuf, NoDataDir> {
    if let Some(d) = &args.data_dir {
        return Ok(d.clone());
    }
    Config::load(args.config.as_deref())
        .map(|(cfg, _)| cfg.data_dir)
        .map_err(NoDataDir)
}

fn publish(args: &PublishArgs, dir: &Path) -> Result<PublishReport, PublishError> {
    let dataset = DatasetId::parse(&args.dataset)?;
    args.store
        .publisher()?
        .publish(dir, &dataset, &args.episodes)
}

/// Run `wshard publish`; returns the exit code.
pub fn run(args: &PublishArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    run_with(args, out, err, publish, report_json, write_text)
}

/// Run a publishing command: the data directory (exit 2 when unknown), `work`, then its
/// report as `--json` (`json`) or text (`text`); an error printed, its exit code returned.
pub(crate) fn run_with<T>(
    args: &PublishArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
    work: impl FnOnce(&PublishArgs, &Path) -> Result<T, PublishError>,
    json: impl FnOnce(&T) -> serde_json::Value,
    text: impl FnOnce(&T, &mut dyn Write) -> std::io::Result<()>,
) -> u8 {
    let dir = match data_dir(args) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(err, "wshard publish: {e}");
            return EXIT_USAGE;
        }
    };
    match work(args, &dir) {
        Ok(report) => {
            let written = if args.json {
                writeln!(out, "{}", json(&report))
            } else {
                text(&report, out)
            };
            match written {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    let _ = writeln!(err, "wshard publish: writing output: {e}");
                    EXIT_FAILED
                }
            }
        }
        Err(e) => {
            let _ = writeln!(err, "wshard publish: {e}");
            exit_code(&e)
        }
    }
}

/// `latest` of the `--json` documents.
pub(crate) fn latest_json(change: &LatestChange) -> serde_json::Value {
    match change {
        LatestChange::Created => json!({"change": "created"}),
        LatestChange::Moved { previous } => json!({"change": "moved", "previous": previous}),
        LatestChange::Unchanged => json!({"change": "unchanged"}),
    }
}

/// `files` of the `--json` documents.
pub(crate) fn files_json(files: &[BlobReport]) -> Vec<serde_json::Value> {
    files
        .iter()
        .map(|f| {
            let (action, multipart) = match f.action {
                BlobAction::Uploaded { multipart } => ("sent", multipart),
                BlobAction::AlreadyStored => ("skipped", false),
            };
            json!({"episode": f.episode, "file": f.file, "sha256": f.sha256, "size": f.size,
                   "key": f.key, "action": action, "multipart": multipart})
        })
        .collect()
}

/// `left_out` of the `--json` documents.
pub(crate) fn left_out_json(left_out: &[(String, String)]) -> Vec<serde_json::Value> {
    left_out
        .iter()
        .map(|(d, why)| json!({"dir": d, "reason": why}))
        .collect()
}

/// One line of text per file sent or skipped, then one per directory left out.
pub(crate) fn write_files_text(
    files: &[BlobReport],
    left_out: &[(String, String)],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for f in files {
        let what = match f.action {
            BlobAction::Uploaded { multipart: true } => "sent (multipart)",
            BlobAction::Uploaded { multipart: false } => "sent",
            BlobAction::AlreadyStored => "skipped (already stored)",
        };
        writeln!(
            out,
            "{what:<24} {}/{} {} B sha256 {}",
            f.episode, f.file, f.size, f.sha256
        )?;
    }
    for (dir, why) in left_out {
        writeln!(out, "{:<24} {dir}: {why}", "left out")?;
    }
    Ok(())
}

/// The `--json` document.
#[must_use]
pub fn report_json(r: &PublishReport) -> serde_json::Value {
    let p = &r.prepared;
    let files = files_json(&p.files);
    let left_out = left_out_json(&p.left_out);
    json!({
        "dataset": p.dataset.to_string(),
        "version_hash": p.version_hash,
        "version_key": p.version_key,
        "version_created": p.version_created,
        "latest": latest_json(&r.latest),
        "bytes_sent": r.bytes_sent(),
        "bytes_skipped": r.bytes_skipped(),
        "episodes": p.version.episodes.keys().collect::<Vec<_>>(),
        "files": files,
        "catalog": {"sha256": p.catalog.sha256, "size": p.catalog.size,
                    "blob_key": p.catalog.key, "key": p.catalog_key,
                    "action": if p.catalog.action == BlobAction::AlreadyStored { "skipped" } else { "sent" }},
        "left_out": left_out,
    })
}

fn write_text(r: &PublishReport, out: &mut dyn Write) -> std::io::Result<()> {
    let p = &r.prepared;
    write_files_text(&p.files, &[], out)?;
    let what = if p.catalog.action == BlobAction::AlreadyStored {
        "skipped (already stored)"
    } else {
        "sent"
    };
    writeln!(
        out,
        "{what:<24} catalog {} B sha256 {} (also at {})",
        p.catalog.size, p.catalog.sha256, p.catalog_key
    )?;
    for (dir, why) in &p.left_out {
        writeln!(out, "{:<24} {dir}: {why}", "left out")?;
    }
    let sent_n = p
        .files
        .iter()
        .chain(std::iter::once(&p.catalog))
        .filter(|f| matches!(f.action, BlobAction::Uploaded { .. }))
        .count();
    writeln!(
        out,
        "dataset {}: {} episodes, {} files; sent {} B in {sent_n} blobs, skipped {} B",
        p.dataset,
        p.version.episodes.len(),
        p.files.len(),
        r.bytes_sent(),
        r.bytes_skipped()
    )?;
    writeln!(
        out,
        "version {} ({}) at {}",
        p.version_hash,
        if p.version_created {
            "new"
        } else {
            "already stored"
        },
        p.version_key
    )?;
    match &r.latest {
        LatestChange::Created => writeln!(out, "latest  created -> {}", p.version_hash),
        LatestChange::Moved { previous } => {
            writeln!(out, "latest  moved {previous} -> {}", p.version_hash)
        }
        LatestChange::Unchanged => writeln!(out, "latest  unchanged ({})", p.version_hash),
    }
}
