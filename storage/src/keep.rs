//! The keep mark: an episode an operator asked to keep (`wshard keep EPISODE`) is never
//! evicted from the data directory by retention, the quota or the low watermark.
//!
//! ```text
//! data_dir/
//!   .keep/
//!     {episode_id}       empty file: the mark (its presence is all that counts)
//! ```
//!
//! The mark is made durable before the caller answers: the folder is created and its
//! parent synced when it is missing, the empty file is created, synced, and the folder
//! synced ([`mark`]). Removing it ([`release`]) removes the file and syncs the folder. A
//! power cut at any point leaves the mark there or not, never anything else: the file has
//! no content to tear. `.keep` starts with `.`, so it is no episode id: recovery, the
//! episode listings and the uploader's scan leave it alone.
//!
//! Every step goes through the [`Fs`] seam (the crash-point tests cut power at each one).

use std::io;
use std::path::{Path, PathBuf};

use crate::fsio::Fs;

/// The folder of the keep marks under the data directory.
pub const KEEP_DIR: &str = ".keep";

/// A keep mark could not be made or removed; the message names the episode, the step and
/// the path.
#[derive(Debug, thiserror::Error)]
#[error("keep mark of episode `{episode}`: {step} {}: {source}", path.display())]
pub struct KeepError {
    /// The episode whose mark it is.
    pub episode: String,
    /// What failed: `create directory`, `create file`, `fsync file`, `fsync directory`,
    /// `remove file`.
    pub step: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// The folder of the marks: `data_dir/.keep`.
#[must_use]
pub fn keep_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(KEEP_DIR)
}

/// The mark of `episode`: `data_dir/.keep/{episode}` (the id must be valid).
#[must_use]
pub fn mark_path(data_dir: &Path, episode: &str) -> PathBuf {
    keep_dir(data_dir).join(episode)
}

/// Whether `episode` is kept.
#[must_use]
pub fn is_kept(fs: &dyn Fs, data_dir: &Path, episode: &str) -> bool {
    fs.exists(&mark_path(data_dir, episode))
}

/// The kept episodes, sorted (the names in `.keep/`; none when it does not exist).
#[must_use]
pub fn kept(fs: &dyn Fs, data_dir: &Path) -> Vec<String> {
    fs.read_dir(&keep_dir(data_dir))
        .map(|entries| {
            entries
                .iter()
                .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Mark `episode` kept, durably: when this returns `Ok` the mark survives a power cut.
/// Marking a kept episode again syncs the mark again (a mark an earlier attempt left
/// unsynced becomes durable) and changes nothing else.
///
/// # Errors
/// [`KeepError`] naming the step that failed; the mark may then be there or not.
pub fn mark(fs: &dyn Fs, data_dir: &Path, episode: &str) -> Result<(), KeepError> {
    let err = |step: &'static str, path: &Path| {
        let episode = episode.to_owned();
        let path = path.to_owned();
        move |source| KeepError {
            episode,
            step,
            path,
            source,
        }
    };
    let dir = keep_dir(data_dir);
    if !fs.exists(&dir) {
        match fs.create_dir(&dir) {
            Ok(()) => {}
            // Another mark made it meanwhile.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(err("create directory", &dir)(e)),
        }
    }
    // The folder's own entry, whether this call or a cut-short earlier one created it.
    fs.sync_dir(data_dir)
        .map_err(err("fsync directory", data_dir))?;
    let path = mark_path(data_dir, episode);
    let mut file = fs.create(&path).map_err(err("create file", &path))?;
    file.sync_all().map_err(err("fsync file", &path))?;
    drop(file);
    fs.sync_dir(&dir).map_err(err("fsync directory", &dir))
}

/// Remove the mark of `episode`, durably; returns whether there was one.
///
/// # Errors
/// [`KeepError`] naming the step that failed; the mark may then be there or not.
pub fn release(fs: &dyn Fs, data_dir: &Path, episode: &str) -> Result<bool, KeepError> {
    let dir = keep_dir(data_dir);
    let path = mark_path(data_dir, episode);
    let err = |step: &'static str, path: &Path| {
        let episode = episode.to_owned();
        let path = path.to_owned();
        move |source| KeepError {
            episode,
            step,
            path,
            source,
        }
    };
    let had = match fs.remove_file(&path) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(err("remove file", &path)(e)),
    };
    if fs.exists(&dir) {
        // Also when there was none: a removal an earlier attempt left unsynced.
        fs.sync_dir(&dir).map_err(err("fsync directory", &dir))?;
    }
    Ok(had)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;
    use crate::fsio::sim::{PowerLoss, SimFs};

    const DATA: &str = "/d";
    const EP: &str = "ep-1";

    fn setup() -> SimFs {
        let fs = SimFs::new();
        fs.mkdir_durable(Path::new(DATA)).unwrap();
        fs
    }

    #[test]
    fn keep_mark_and_release_round_trip() {
        let fs = setup();
        let data = Path::new(DATA);
        assert!(!is_kept(&fs, data, EP));
        assert!(kept(&fs, data).is_empty());
        mark(&fs, data, EP).unwrap();
        mark(&fs, data, EP).unwrap();
        mark(&fs, data, "ep-2").unwrap();
        assert!(is_kept(&fs, data, EP));
        assert_eq!(kept(&fs, data), vec![EP.to_owned(), "ep-2".to_owned()]);
        let image = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert!(is_kept(&image, data, EP), "a mark is durable once made");
        assert!(release(&fs, data, EP).unwrap());
        assert!(!release(&fs, data, EP).unwrap());
        assert!(!is_kept(&fs, data, EP));
        let image = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert!(!is_kept(&image, data, EP), "a release is durable once done");
        assert!(is_kept(&image, data, "ep-2"));
    }

    #[test]
    fn keep_mark_failure_names_episode_step_and_path() {
        let fs = setup();
        fs.crash_after(0);
        let e = mark(&fs, Path::new(DATA), EP).unwrap_err().to_string();
        assert!(
            e.contains("`ep-1`") && e.contains("create directory") && e.contains("/d/.keep"),
            "{e}"
        );
    }
}
