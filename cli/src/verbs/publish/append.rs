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
use wshard_publish::append::{check_robot, APPEND_ATTEMPTS};
use wshard_publish::episodes::select;
use wshard_publish::publish::{BlobAction, BlobReport, LatestChange};
use wshard_publish::{AppendReport, DatasetId, PublishError};

use super::new_version::{
    files_json, latest_json, left_out_json, run_with, write_files_text, PublishArgs,
};

/// What an `--append` run did.
struct Appended {
    files: Vec<BlobReport>,
    left_out: Vec<(String, String)>,
    report: AppendReport,
}

fn append(args: &PublishArgs, dir: &Path) -> Result<Appended, PublishError> {
    let dataset = DatasetId::parse(&args.dataset)?;
    check_robot(args.robot.as_deref())?;
    let publisher = args.store.publisher()?;
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
pub fn run(args: &PublishArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    run_with(
        args,
        out,
        err,
        append,
        |a| report_json(args, a),
        |a, out| write_text(args, a, out),
    )
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
    let files = files_json(&a.files);
    let left_out = left_out_json(&a.left_out);
    let latest = latest_json(&a.report.latest);
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
    write_files_text(&a.files, &a.left_out, out)?;
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
