//! The episodes an export's inputs name, one rule for every export.
//!
//! Each input is an episode directory (exported whatever its final status: the operator
//! named it; an episode still being recorded is refused, its files are still changing), or
//! a data directory, whose finished episodes (status `complete`, `interrupted` or
//! `recovered`, or a single-stream episode without a status) are exported; hidden
//! directories (`.upload`, `.*`), directories that are not episodes, episodes still
//! recording and aborted ones are skipped and said. An episode directory that cannot be
//! opened is kept (under its directory name) so that the export reports its error, named.
//! Episodes come out sorted by id, each once; two different directories of one episode
//! are refused (they would be the same output).
//!
//! Every [`InputsError`] is the inputs naming nothing (more) to export, a usage error: the
//! CLI's exit code 2 for every export (exit 1 is for an episode whose files are bad).

use std::path::{Path, PathBuf};

use wshard::episode_dir::index::EpisodeStatus;
use wshard::episode_dir::names::INDEX_FILE_SUFFIX;
use wshard::episode_dir::EpisodeDir;
use wshard::manifest::MANIFEST_FILE_SUFFIX;
use wshard::IoError;

/// Suffixes of the files that make a directory an episode directory.
const EPISODE_FILE_SUFFIXES: [&str; 2] = [INDEX_FILE_SUFFIX, MANIFEST_FILE_SUFFIX];

/// The `op` of [`InputsError::Io`] for an input that cannot be opened (absent, no access).
pub const OP_OPEN: &str = "open";
/// The `op` of [`InputsError::Io`] for a directory that cannot be listed.
pub const OP_LIST: &str = "list";

/// Why the inputs name no episodes to export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputsError {
    /// An input is neither an episode directory nor a directory holding episodes.
    #[error("{}: not an episode directory, nor a data directory holding episode directories", path.display())]
    NotAnInput { path: PathBuf },
    /// The inputs hold no finished episode; `left_out` says what they held and why it was
    /// not taken.
    #[error("no finished episode to export in {inputs}{}", left_out_text(.left_out))]
    NoEpisodes {
        inputs: String,
        left_out: Vec<Skipped>,
    },
    /// An episode directory named as an input is still being recorded.
    #[error("episode `{episode}` ({}) is still recording: export it once it is finished (a daemon that stopped without finishing it marks it recovered when it starts again)", dir.display())]
    StillRecording { episode: String, dir: PathBuf },
    /// Two different input directories are the same episode.
    #[error("episode `{episode}` is given twice: {} and {}", first.display(), second.display())]
    DuplicateEpisode {
        episode: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// An input could not be opened or listed ([`OP_OPEN`], [`OP_LIST`]).
    #[error(transparent)]
    Io(#[from] IoError),
}

/// `: left out DIR: REASON; ...` (the names of the directories), or nothing.
fn left_out_text(left_out: &[Skipped]) -> String {
    if left_out.is_empty() {
        return String::new();
    }
    let items: Vec<String> = left_out
        .iter()
        .map(|s| format!("{}: {}", dir_name(&s.dir), s.reason))
        .collect();
    format!(" (left out {})", items.join("; "))
}

impl InputsError {
    /// [`InputsError::NoEpisodes`] naming `inputs` and what they held.
    pub(crate) fn no_episodes(inputs: &[PathBuf], left_out: Vec<Skipped>) -> Self {
        Self::NoEpisodes {
            inputs: inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            left_out,
        }
    }

    fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io(IoError::new(op, path, source))
    }
}

/// One episode to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeInput {
    /// The episode's id, or its directory name when it cannot be opened.
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

/// Whether an episode of `status` is exported from a data directory: every status but
/// `recording` and `aborted` (a single-stream episode has none).
#[must_use]
pub fn is_finished(status: Option<EpisodeStatus>) -> bool {
    !matches!(
        status,
        Some(EpisodeStatus::Recording | EpisodeStatus::Aborted)
    )
}

fn is_episode_dir(dir: &Path) -> Result<bool, InputsError> {
    let entries = std::fs::read_dir(dir).map_err(|e| InputsError::io(OP_LIST, dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| InputsError::io(OP_LIST, dir, e))?;
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

/// The entries of data directory `input`, exported or skipped, into `out`.
fn scan_data_dir(input: &Path, out: &mut Inputs) -> Result<(), InputsError> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(input).map_err(|e| InputsError::io(OP_LIST, input, e))? {
        let entry = entry.map_err(|e| InputsError::io(OP_LIST, input, e))?;
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
                Some(s) if !is_finished(Some(s)) => out.skipped.push(Skipped {
                    dir,
                    reason: format!("status {}", s.as_str()),
                }),
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
    Ok(())
}

/// Sort `episodes` by id; drop the same directory given twice, refuse two directories of
/// one episode.
fn sort_unique(episodes: Vec<EpisodeInput>) -> Result<Vec<EpisodeInput>, InputsError> {
    let mut episodes = episodes;
    episodes.sort_by(|a, b| a.episode_id.cmp(&b.episode_id));
    let mut unique: Vec<EpisodeInput> = Vec::with_capacity(episodes.len());
    for e in episodes {
        if let Some(prev) = unique.last() {
            if prev.episode_id == e.episode_id {
                let same = match (prev.dir.canonicalize(), e.dir.canonicalize()) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                };
                if same {
                    continue;
                }
                return Err(InputsError::DuplicateEpisode {
                    episode: e.episode_id,
                    first: prev.dir.clone(),
                    second: e.dir,
                });
            }
        }
        unique.push(e);
    }
    Ok(unique)
}

/// Resolve `inputs` to episodes.
///
/// # Errors
/// [`InputsError::Io`] for an input that cannot be read, [`InputsError::NotAnInput`] for
/// a file, [`InputsError::StillRecording`] for an episode directory still being recorded,
/// [`InputsError::DuplicateEpisode`] for two directories of the same episode,
/// [`InputsError::NoEpisodes`] when nothing is left to export.
pub fn resolve_inputs(inputs: &[PathBuf]) -> Result<Inputs, InputsError> {
    let mut out = Inputs::default();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| InputsError::io(OP_OPEN, input, e))?;
        if !meta.is_dir() {
            return Err(InputsError::NotAnInput {
                path: input.clone(),
            });
        }
        if is_episode_dir(input)? {
            // Named by the operator: exported whatever its final status. An episode that
            // cannot be opened keeps its directory name and fails in the export, named.
            let episode_id = match EpisodeDir::open(input) {
                Ok(ep) if ep.status() == Some(EpisodeStatus::Recording) => {
                    return Err(InputsError::StillRecording {
                        episode: ep.episode_id().to_owned(),
                        dir: input.clone(),
                    });
                }
                Ok(ep) => ep.episode_id().to_owned(),
                Err(_) => dir_name(input),
            };
            out.episodes.push(EpisodeInput {
                episode_id,
                dir: input.clone(),
            });
            continue;
        }
        scan_data_dir(input, &mut out)?;
    }
    out.episodes = sort_unique(std::mem::take(&mut out.episodes))?;
    if out.episodes.is_empty() {
        return Err(InputsError::no_episodes(inputs, out.skipped));
    }
    Ok(out)
}
