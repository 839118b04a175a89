//! The episodes an export's inputs name: each input is an episode directory (exported
//! whatever its status: the operator named it), or a data directory, whose finished
//! episodes (status `complete`, `interrupted` or `recovered`, or a single-stream episode
//! without a status) are exported; hidden directories (`.upload`, `.*`), episodes still
//! recording and aborted ones are skipped and said. Episodes come out sorted by id, each
//! once.

use std::path::{Path, PathBuf};

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::EpisodeDir;

use super::error::McapError;

/// Suffixes of the files that make a directory an episode directory.
const EPISODE_FILE_SUFFIXES: [&str; 2] = ["_index.json", "_manifest.wshard"];

/// One episode to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeInput {
    pub episode_id: String,
    pub dir: PathBuf,
}

/// A directory of a data directory that is not exported, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub dir: PathBuf,
    pub reason: String,
}

/// The inputs resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Sorted by episode id.
    pub episodes: Vec<EpisodeInput>,
    /// In the order found (inputs in order, each data directory's entries by name).
    pub skipped: Vec<Skipped>,
}

fn is_episode_dir(dir: &Path) -> Result<bool, McapError> {
    let entries = std::fs::read_dir(dir).map_err(|e| McapError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| McapError::io("list", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if EPISODE_FILE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Resolve `inputs` to episodes.
///
/// # Errors
/// [`McapError::Io`] for an input that cannot be read, [`McapError::NotAnInput`] for a
/// file, [`McapError::DuplicateEpisode`] for two directories of the same episode,
/// [`McapError::NoEpisodes`] when nothing is left to export.
pub fn resolve_inputs(inputs: &[PathBuf]) -> Result<Inputs, McapError> {
    let mut out = Inputs::default();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| McapError::io("open", input, e))?;
        if !meta.is_dir() {
            return Err(McapError::NotAnInput {
                path: input.clone(),
            });
        }
        if is_episode_dir(input)? {
            // Named by the operator: exported whatever its status. An episode that cannot
            // be opened keeps its directory name and fails in the export, named.
            let episode_id = EpisodeDir::open(input)
                .map(|ep| ep.episode_id().to_owned())
                .unwrap_or_else(|_| dir_name(input));
            out.episodes.push(EpisodeInput {
                episode_id,
                dir: input.clone(),
            });
            continue;
        }
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(input).map_err(|e| McapError::io("list", input, e))? {
            let entry = entry.map_err(|e| McapError::io("list", input, e))?;
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        dirs.sort();
        for dir in dirs {
            let name = dir_name(&dir);
            if name.starts_with('.') {
                out.skipped.push(Skipped {
                    dir,
                    reason: "hidden directory".into(),
                });
                continue;
            }
            if !is_episode_dir(&dir)? {
                out.skipped.push(Skipped {
                    dir,
                    reason: "not an episode directory".into(),
                });
                continue;
            }
            match EpisodeDir::open(&dir) {
                Ok(ep) => match ep.status() {
                    Some(s @ (EpisodeStatus::Recording | EpisodeStatus::Aborted)) => {
                        out.skipped.push(Skipped {
                            dir,
                            reason: format!("status {}", s.as_str()),
                        });
                    }
                    _ => out.episodes.push(EpisodeInput {
                        episode_id: ep.episode_id().to_owned(),
                        dir,
                    }),
                },
                // Unreadable: exported so that its error is reported, named.
                Err(_) => out.episodes.push(EpisodeInput {
                    episode_id: name,
                    dir,
                }),
            }
        }
    }
    out.episodes.sort_by(|a, b| a.episode_id.cmp(&b.episode_id));
    let mut unique: Vec<EpisodeInput> = Vec::with_capacity(out.episodes.len());
    for e in std::mem::take(&mut out.episodes) {
        if let Some(prev) = unique.last() {
            if prev.episode_id == e.episode_id {
                let same = match (prev.dir.canonicalize(), e.dir.canonicalize()) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                };
                if same {
                    continue;
                }
                return Err(McapError::DuplicateEpisode {
                    episode: e.episode_id,
                    first: prev.dir.clone(),
                    second: e.dir,
                });
            }
        }
        unique.push(e);
    }
    out.episodes = unique;
    if out.episodes.is_empty() {
        return Err(McapError::NoEpisodes {
            inputs: inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(out)
}
