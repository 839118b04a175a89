//! `wshard publish --append [--robot R]`: send the episodes' blobs as `wshard publish`
//! does, then add the episodes to the dataset's latest version (`Publisher::append`:
//! latest's episodes plus these, the catalog merged, `latest.json` moved by
//! compare-and-swap and retried on a conflict) instead of replacing it with a version of
//! this data directory only (docs/PUBLISH.md, "Appending").
//!
//! Exit codes as `wshard publish`; 3 when another writer kept moving `latest.json` through
//! every attempt.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use wshard_publish::append::check_robot;
use wshard_publish::episodes::select;
use wshard_publish::publish::{BlobAction, BlobReport, LatestChange};
use wshard_publish::{AppendReport, Credentials, DatasetId, PublishError, Publisher, Store};

use super::publish::{exit_code, PublishArgs, EXIT_FAILED, EXIT_OK};

/// Compare-and-swap attempts of one `--append` run.
pub const APPEND_ATTEMPTS: usize = 5;

/// What an `--append` run did.
struct Appended {
    files: Vec<BlobReport>,
    left_out: Vec<(String, String)>,
    report: AppendReport,
}

fn append(args: &PublishArgs, dir: &Path) -> Result<Appended, PublishError> {
    let dataset = DatasetId::parse(&args.dataset)?;
    check_robot(args.robot.as_deref())?;
    let config = args.store.config()?;
    config.validate()?;
    let creds = Credentials::load_for(config.provider)?;
    let publisher = Publisher::new(Store::new(config, &creds, args.store.transfer())?);
    let sel = select(dir, &args.episodes)?;
    if sel.episodes.is_empty() {
        return Err(PublishError::NothingToPublish {
            data_dir: dir.to_path_buf(),
        });
    }
    publisher.store().check_bucket(publisher.keys().prefix())?;
    let (files, _) = publisher.send_blobs(&sel.episodes)?;
    let report = publisher.append(
        &dataset,
        args.robot.as_deref(),
        &sel.episodes,
        APPEND_ATTEMPTS,
    )?;
    Ok(Appended {
        files,
        left_out: sel.left_out,
        report,
    })
}

/// Run `wshard publish --append`; returns the exit code.
pub fn run(args: &PublishArgs, dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match append(args, dir) {
        Ok(a) => {
            let written = if args.json {
                writeln!(out, "{}", report_json(args, &a))
            } else {
                write_text(args, &a, out)
            };
            match written {
                Ok(()) => EXIT_OK,
                Err(_) => EXIT_FAILED,
            }
        }
        Err(e) => {
            let _ = writeln!(err, "wshard publish: {e}");
            exit_code(&e)
        }
    }
}

fn sent(files: &[BlobReport]) -> (u64, u64) {
    let (mut s, mut k) = (0, 0);
    for f in files {
        match f.action {
            BlobAction::Uploaded { .. } => s += f.size,
            BlobAction::AlreadyStored => k += f.size,
        }
    }
    (s, k)
}

fn report_json(args: &PublishArgs, a: &Appended) -> serde_json::Value {
    let (bytes_sent, bytes_skipped) = sent(&a.files);
    let files: Vec<_> = a
        .files
        .iter()
        .map(|f| {
            let (action, multipart) = match f.action {
                BlobAction::Uploaded { multipart } => ("sent", multipart),
                BlobAction::AlreadyStored => ("skipped", false),
            };
            json!({"episode": f.episode, "file": f.file, "sha256": f.sha256, "size": f.size,
                   "key": f.key, "action": action, "multipart": multipart})
        })
        .collect();
    let left_out: Vec<_> = a
        .left_out
        .iter()
        .map(|(d, why)| json!({"dir": d, "reason": why}))
        .collect();
    let latest = match &a.report.latest {
        LatestChange::Created => json!({"change": "created"}),
        LatestChange::Moved { previous } => json!({"change": "moved", "previous": previous}),
        LatestChange::Unchanged => json!({"change": "unchanged"}),
    };
    json!({
        "dataset": args.dataset,
        "append": true,
        "robot": args.robot,
        "version_hash": a.report.version_hash,
        "latest": latest,
        "added": a.report.added,
        "attempts": a.report.attempts,
        "bytes_sent": bytes_sent,
        "bytes_skipped": bytes_skipped,
        "files": files,
        "left_out": left_out,
    })
}

fn write_text(args: &PublishArgs, a: &Appended, out: &mut dyn Write) -> std::io::Result<()> {
    for f in &a.files {
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
    for (dir, why) in &a.left_out {
        writeln!(out, "{:<24} {dir}: {why}", "left out")?;
    }
    let (bytes_sent, bytes_skipped) = sent(&a.files);
    writeln!(
        out,
        "dataset {}: {} files; sent {bytes_sent} B, skipped {bytes_skipped} B",
        args.dataset,
        a.files.len()
    )?;
    let r = &a.report;
    if r.added.is_empty() {
        writeln!(out, "appended nothing: latest already holds these episodes")?;
    } else {
        writeln!(
            out,
            "appended {} ({} attempt{})",
            r.added.join(" "),
            r.attempts,
            if r.attempts == 1 { "" } else { "s" }
        )?;
    }
    match &r.latest {
        LatestChange::Created => writeln!(out, "latest  created -> {}", r.version_hash),
        LatestChange::Moved { previous } => {
            writeln!(out, "latest  moved {previous} -> {}", r.version_hash)
        }
        LatestChange::Unchanged => writeln!(out, "latest  unchanged ({})", r.version_hash),
    }
}
