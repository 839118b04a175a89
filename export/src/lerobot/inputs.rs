//! The episodes an export reads: episode directories as given, and the finished episodes of
//! data directories, sorted by episode id.

use std::path::{Path, PathBuf};

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;

use super::error::LerobotError;

/// An episode left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The episodes to export (sorted by episode id) and those left out.
#[derive(Debug, Default)]
pub struct Inputs {
    pub episodes: Vec<EpisodeDir>,
    pub skipped: Vec<Skipped>,
}

/// Whether `dir` holds an episode's index or manifest itself.
fn looks_like_episode(dir: &Path) -> Result<bool, LerobotError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LerobotError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LerobotError::io("list", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with("_index.json") || name.ends_with("_manifest.wshard") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A finished episode's status (complete, interrupted, recovered); `None` for one still
/// recording or aborted.
fn finished(status: Option<EpisodeStatus>) -> bool {
    matches!(
        status,
        Some(EpisodeStatus::Complete | EpisodeStatus::Interrupted | EpisodeStatus::Recovered)
    )
}

fn open(path: &Path) -> Result<EpisodeDir, LerobotError> {
    EpisodeDir::open(path).map_err(|source| LerobotError::Episode {
        path: path.to_path_buf(),
        source: Box::new(source),
    })
}

/// Resolve `inputs`: an episode directory is exported as it is (whatever its status); a data
/// directory gives each finished episode in it, hidden (`.name`) and unfinished ones skipped.
///
/// # Errors
/// [`LerobotError::NotEpisodes`] for an input that is neither, the errors of reading an
/// episode directory.
pub fn resolve(inputs: &[PathBuf]) -> Result<Inputs, LerobotError> {
    let mut out = Inputs::default();
    for input in inputs {
        if !input.is_dir() {
            return Err(LerobotError::NotEpisodes {
                path: input.clone(),
            });
        }
        if looks_like_episode(input)? {
            out.episodes.push(open(input)?);
            continue;
        }
        let mut children: Vec<PathBuf> = Vec::new();
        let entries = std::fs::read_dir(input).map_err(|e| LerobotError::io("list", input, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| LerobotError::io("list", input, e))?;
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with('.') {
                out.skipped.push(Skipped {
                    path,
                    reason: "hidden directory".into(),
                });
                continue;
            }
            if looks_like_episode(&path)? {
                children.push(path);
            }
        }
        if children.is_empty() {
            return Err(LerobotError::NotEpisodes {
                path: input.clone(),
            });
        }
        children.sort();
        for path in children {
            let episode = open(&path)?;
            if finished(episode.status()) {
                out.episodes.push(episode);
            } else {
                let status = episode.status().map_or("unknown", EpisodeStatus::as_str);
                out.skipped.push(Skipped {
                    path,
                    reason: format!("status {status}, not finished"),
                });
            }
        }
    }
    out.episodes
        .sort_by(|a, b| a.episode_id().cmp(b.episode_id()));
    Ok(out)
}
