//! What is on disk: manifests, episodes read back, leftover files, quarantine, and the
//! operator's `wshard verify`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_client::ChannelSpec;

use crate::bins;
use crate::data::check_steps;

/// The quarantine directory name (the config default).
pub const QUARANTINE: &str = "quarantine";

/// Manifest statuses of a finished episode.
pub const FINAL_STATUSES: [&str; 4] = ["complete", "aborted", "interrupted", "recovered"];

/// Every file under `dir`, recursively, sorted (empty when `dir` does not exist).
#[must_use]
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(_) => out.push(p),
                Err(_) => {}
            }
        }
    }
    out.sort();
    out
}

/// The episode directories under `data_dir` (names, sorted; the quarantine excluded).
#[must_use]
pub fn episode_ids(data_dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(data_dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != QUARANTINE)
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// `data_dir/{id}/{id}_manifest.wshard`.
#[must_use]
pub fn manifest_path(data_dir: &Path, id: &str) -> PathBuf {
    data_dir
        .join(id)
        .join(wshard::manifest::manifest_file_name(id))
}

/// Read and parse an episode's manifest.
///
/// # Errors
/// A message naming the file.
pub fn read_manifest(data_dir: &Path, id: &str) -> Result<Manifest, String> {
    let path = manifest_path(data_dir, id);
    Manifest::read_file(&path).map_err(|e| format!("{id}: manifest {}: {e}", path.display()))
}

/// Files in `data_dir/quarantine`, recursively.
#[must_use]
pub fn quarantine_files(data_dir: &Path) -> Vec<PathBuf> {
    walk(&data_dir.join(QUARANTINE))
}

/// Files in the episode directories (not the quarantine) whose name ends with `suffix`.
#[must_use]
pub fn episode_files_ending(data_dir: &Path, suffix: &str) -> Vec<PathBuf> {
    episode_ids(data_dir)
        .iter()
        .flat_map(|id| walk(&data_dir.join(id)))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

/// What an episode looks like on disk, once checked.
#[derive(Clone, Debug)]
pub struct EpisodeState {
    pub id: String,
    pub status: String,
    /// `total_timesteps` of the manifest (= timesteps read back).
    pub timesteps: u64,
    pub chunks: usize,
    pub manifest: Manifest,
}

/// Check one episode: the manifest parses, is continuous and names the episode; the
/// chunks join (SHA-256 and lengths as listed, via `read_episode_chunked`) into exactly
/// `total_timesteps` timesteps, each bit-exact against the generator for `channels`.
///
/// # Errors
/// A message naming the episode and the problem.
pub fn check_episode(
    data_dir: &Path,
    id: &str,
    channels: &[ChannelSpec],
) -> Result<EpisodeState, String> {
    let manifest = read_manifest(data_dir, id)?;
    manifest
        .validate_continuity()
        .map_err(|e| format!("{id}: manifest not continuous: {e}"))?;
    if manifest.episode_id != id {
        return Err(format!(
            "{id}: manifest names episode {:?}",
            manifest.episode_id
        ));
    }
    let state = EpisodeState {
        id: id.to_owned(),
        status: manifest.status.clone().unwrap_or_default(),
        timesteps: manifest.total_timesteps,
        chunks: manifest.chunks.len(),
        manifest,
    };
    if state.chunks == 0 {
        return Ok(state);
    }
    let ep = read_episode_chunked(&manifest_path(data_dir, id))
        .map_err(|e| format!("{id}: reading the chunks back: {e}"))?;
    if ep.length != state.timesteps {
        return Err(format!(
            "{id}: {} timesteps read back, manifest says {}",
            ep.length, state.timesteps
        ));
    }
    check_steps(&ep, channels).map_err(|e| format!("{id}: {e}"))?;
    Ok(state)
}

/// Poll (at most `timeout`) until the episode's manifest has a final status.
///
/// # Errors
/// The last status seen (or read error) when the time runs out.
pub fn wait_final(data_dir: &Path, id: &str, timeout: Duration) -> Result<Manifest, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match read_manifest(data_dir, id) {
            // The publisher removes the last journal segment just after the final manifest
            // commit (never before: the chunk must be listed first), so a final status alone
            // does not mean the episode is settled on disk yet.
            Ok(m)
                if m.status
                    .as_deref()
                    .is_some_and(|s| FINAL_STATUSES.contains(&s))
                    && !has_pending_files(&data_dir.join(id)) =>
            {
                return Ok(m)
            }
            Ok(m) => format!("status {:?}", m.status),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!("{id}: no final status within {timeout:?}: {last}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True while the episode directory still holds a journal segment, a `.partial` or a `.tmp`.
fn has_pending_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".wal") || name.ends_with(".partial") || name.ends_with(".tmp")
        })
    })
}

/// One run of `wshard verify`.
#[derive(Clone, Debug)]
pub struct VerifyRun {
    pub paths: Vec<PathBuf>,
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl VerifyRun {
    /// Exit code 0.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

impl std::fmt::Display for VerifyRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wshard verify {:?} exited {:?}\n--- stdout\n{}--- stderr\n{}",
            self.paths, self.code, self.stdout, self.stderr
        )
    }
}

/// Run `wshard verify PATHS...`.
#[must_use]
pub fn run_verify(paths: &[PathBuf]) -> VerifyRun {
    let out = Command::new(bins::wshard())
        .arg("verify")
        .args(paths)
        .output()
        .expect("cannot run wshard verify");
    VerifyRun {
        paths: paths.to_vec(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `wshard verify` over a data directory. `verify` walks every subdirectory, the
/// quarantine included, and checks every `*.wshard` file it finds there; a quarantined
/// file may legitimately be invalid (that is why it was moved aside). So when the
/// quarantine holds `*.wshard` files, each episode directory is verified instead (in one
/// run); the quarantine is listed separately by [`quarantine_files`].
#[must_use]
pub fn verify_data_dir(data_dir: &Path) -> VerifyRun {
    let quarantined_shards = quarantine_files(data_dir)
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "wshard"));
    if quarantined_shards {
        let dirs: Vec<PathBuf> = episode_ids(data_dir)
            .iter()
            .map(|id| data_dir.join(id))
            .collect();
        run_verify(&dirs)
    } else {
        run_verify(&[data_dir.to_path_buf()])
    }
}

/// [`verify_data_dir`], panicking with its output unless it exits 0.
pub fn assert_verify_ok(data_dir: &Path) -> VerifyRun {
    let run = verify_data_dir(data_dir);
    assert!(run.ok(), "{run}");
    run
}

/// A finished command's exit code, stdout and stderr, for assertion messages.
#[must_use]
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
