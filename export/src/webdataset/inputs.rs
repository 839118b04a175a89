//! Which episodes an export reads: each input is an episode directory (taken whatever its
//! status: the operator named it), or a data directory whose finished episodes (status complete, interrupted or recovered) are taken; hidden
//! entries (`.upload`, `.*`), episodes still recording or aborted, and directories that are
//! not episodes are left out and said. Sorted by episode id, then cut to `max_episodes`.

use std::path::{Path, PathBuf};

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;

use super::error::WebdatasetError;

/// The episodes found and what was left out.
#[derive(Debug, Default)]
pub struct Selected {
    pub episodes: Vec<EpisodeDir>,
    /// `(path, reason)`.
    pub left_out: Vec<(PathBuf, String)>,
}

fn finished(status: Option<EpisodeStatus>) -> bool {
    matches!(
        status,
        Some(EpisodeStatus::Complete | EpisodeStatus::Interrupted | EpisodeStatus::Recovered)
    )
}

fn scan_data_dir(dir: &Path, out: &mut Selected) -> Result<(), WebdatasetError> {
    let entries = std::fs::read_dir(dir).map_err(|e| WebdatasetError::io("list", dir, e))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| WebdatasetError::io("list", dir, e))?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        paths.push(path);
    }
    paths.sort();
    for path in paths {
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .map_or(true, |n| n.starts_with('.'));
        if hidden {
            out.left_out.push((path, "hidden directory".to_owned()));
            continue;
        }
        match EpisodeDir::open(&path) {
            Ok(ep) if finished(ep.status()) => out.episodes.push(ep),
            Ok(ep) => {
                let status = ep.status().map_or("unknown", EpisodeStatus::as_str);
                out.left_out
                    .push((path, format!("status {status}: not a finished episode")));
            }
            Err(e) => out.left_out.push((path, format!("not an episode: {e}"))),
        }
    }
    Ok(())
}

/// The episodes of `inputs`.
///
/// # Errors
/// [`WebdatasetError::BadInput`] for an input that is neither an episode nor a directory,
/// [`WebdatasetError::NoEpisodes`] when nothing is left.
pub fn select(
    inputs: &[PathBuf],
    max_episodes: Option<usize>,
) -> Result<Selected, WebdatasetError> {
    let mut out = Selected::default();
    for input in inputs {
        match EpisodeDir::open(input) {
            Ok(ep) => out.episodes.push(ep),
            Err(_) if input.is_dir() && !is_episode_like(input) => {
                scan_data_dir(input, &mut out)?;
            }
            Err(e) => {
                return Err(WebdatasetError::BadInput {
                    path: input.clone(),
                    message: e.to_string(),
                })
            }
        }
    }
    out.episodes
        .sort_by(|a, b| a.episode_id().cmp(b.episode_id()));
    out.episodes
        .dedup_by(|a, b| a.episode_id() == b.episode_id());
    if let Some(n) = max_episodes {
        out.episodes.truncate(n);
    }
    if out.episodes.is_empty() {
        return Err(WebdatasetError::NoEpisodes {
            inputs: inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(out)
}

/// A directory holding an index or manifest file: an episode that failed to open (its
/// error is the one to report), not a data directory.
fn is_episode_like(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.ends_with("_index.json") || n.ends_with("_manifest.wshard"))
        })
    })
}
