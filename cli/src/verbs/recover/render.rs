//! Printing a [`RecoverRun`]: per episode the summary, the discarded regions, the
//! quarantined and removed files, and the actions (planned in a dry run, done with
//! `--apply`), then the directories left alone, as text or as one JSON object.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::model::{EpisodeOutcome, RecoverRun};
use crate::output::table::{Align, Table};
use wshard_recorder::recovery::{RecoveryMode, RecoveryReport};

fn write_report(r: &RecoveryReport, dry: bool, out: &mut dyn Write) -> io::Result<()> {
    let prefix = if dry { "[dry run] " } else { "" };
    writeln!(out, "{prefix}{}", r.summary())?;
    if !r.discarded.is_empty() {
        writeln!(out, "  discarded:")?;
        let mut t = Table::new(&[
            ("    file", Align::Left),
            ("offset", Align::Right),
            ("len", Align::Right),
            ("reason", Align::Left),
        ]);
        for d in &r.discarded {
            t.push(vec![
                format!("    {}", d.file),
                d.offset.to_string(),
                d.len.to_string(),
                d.reason.clone(),
            ]);
        }
        t.write(out)?;
    }
    let (quarantined, removed) = if dry {
        ("to quarantine", "to remove")
    } else {
        ("quarantined", "removed")
    };
    for q in &r.quarantined {
        let rebuilt = if r.quarantined_rebuilt.contains(q) {
            " (a chunk rebuilt whole from its journal: nothing lost)"
        } else {
            ""
        };
        writeln!(out, "  {quarantined}: {q}{rebuilt}")?;
    }
    for f in &r.removed {
        writeln!(out, "  {removed}: {f}")?;
    }
    if !r.actions.is_empty() {
        writeln!(out, "  {}:", if dry { "planned" } else { "done" })?;
        for (i, a) in r.actions.iter().enumerate() {
            writeln!(out, "    {}. {}", i + 1, a.describe())?;
        }
    }
    Ok(())
}

/// The text report.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_text(run: &RecoverRun, out: &mut dyn Write) -> io::Result<()> {
    let dry = run.mode == RecoveryMode::DryRun;
    let what = if run.single_episode {
        "episode directory"
    } else {
        "data directory"
    };
    if dry {
        writeln!(
            out,
            "dry run on {what} {}: nothing was changed (--apply to do it)",
            run.target.display()
        )?;
    } else {
        writeln!(out, "recovering {what} {}", run.target.display())?;
    }
    if run.episodes.is_empty() {
        writeln!(out, "nothing to do: no episode needs recovery")?;
    }
    for e in &run.episodes {
        match e {
            EpisodeOutcome::NothingToDo(id) => {
                writeln!(out, "episode {id}: nothing to do")?;
            }
            EpisodeOutcome::Recovered(r) => write_report(r, dry, out)?,
            EpisodeOutcome::Failed(id, e) => {
                writeln!(out, "episode {id}: recovery failed: {e}")?;
            }
        }
    }
    for l in &run.left_alone {
        writeln!(
            out,
            "left alone: {}: not an episode ({})",
            l.path.display(),
            l.reason
        )?;
    }
    let lost = run
        .episodes
        .iter()
        .any(|e| matches!(e, EpisodeOutcome::Recovered(r) if r.lost_data()));
    if lost {
        writeln!(
            out,
            "data {}lost: corrupt regions discarded or files quarantined (quarantined files are kept)",
            if dry { "would be " } else { "was " }
        )?;
    }
    Ok(())
}

fn episode_json(e: &EpisodeOutcome) -> Value {
    match e {
        EpisodeOutcome::NothingToDo(id) => json!({
            "episode_id": id, "status": "nothing_to_do", "lost_data": false,
        }),
        EpisodeOutcome::Recovered(r) => json!({
            "episode_id": r.episode_id,
            "status": "recovered",
            "lost_data": r.lost_data(),
            "summary": r.summary(),
            "report": r.to_json(),
            "actions": r.actions.iter().map(wshard_recorder::recovery::Action::to_json).collect::<Vec<_>>(),
        }),
        EpisodeOutcome::Failed(id, err) => json!({
            "episode_id": id,
            "status": "failed",
            "lost_data": false,
            "error": err.to_string(),
            "exit_code": e.status().code(),
        }),
    }
}

/// One JSON object on one line.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_json(run: &RecoverRun, out: &mut dyn Write) -> io::Result<()> {
    let doc = json!({
        "target": run.target.display().to_string(),
        "data_dir": run.data_dir.display().to_string(),
        "scope": if run.single_episode { "episode" } else { "data_dir" },
        "mode": if run.mode == RecoveryMode::DryRun { "dry-run" } else { "apply" },
        "exit_code": run.status().code(),
        "episodes": run.episodes.iter().map(episode_json).collect::<Vec<_>>(),
        "left_alone": run.left_alone.iter().map(|l| json!({
            "directory": l.name,
            "path": l.path.display().to_string(),
            "reason": l.reason.to_string(),
        })).collect::<Vec<_>>(),
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}
