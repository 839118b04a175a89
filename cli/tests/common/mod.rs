//! Helpers shared by the CLI integration tests: running the real `wshard` binary, finding
//! the upstream goldens, and writing small episodes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use wshard::episode::{Channel, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::{write_episode_chunked, Manifest};
use wshard::read::ShardReader;

/// The six upstream golden episodes.
pub const GOLDENS: [&str; 6] = [
    "simple_episode.wshard",
    "dtype_zoo.wshard",
    "per_block_compressed.wshard",
    "omen_uncert.wshard",
    "multimodal.wshard",
    "latent_action.wshard",
];

/// The upstream golden directory: `WSHARD_UPSTREAM_GOLDEN`, else `shared/golden-upstream`
/// beside the workspace. `None` (skip) when it is missing, unless `CI=true`, where a missing
/// directory fails the test.
pub fn upstream_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WSHARD_UPSTREAM_GOLDEN").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/golden-upstream"
            ))
        },
        PathBuf::from,
    );
    if GOLDENS.iter().all(|g| dir.join(g).is_file()) {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "upstream golden directory {} is missing or incomplete (set WSHARD_UPSTREAM_GOLDEN)",
        dir.display()
    );
    eprintln!(
        "skipping: upstream golden directory {} not found",
        dir.display()
    );
    None
}

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout and stderr together, for messages that may go to either.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Run `wshard` with `args`.
pub fn wshard<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(env!("CARGO_BIN_EXE_wshard"))
        .args(args)
        .output()
        .expect("run the wshard binary");
    Run {
        code: out.status.code().expect("wshard exited by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The data offset of block `name` in the shard at `path`.
pub fn block_offset(path: &Path, name: &str) -> u64 {
    let r = ShardReader::open(path).expect("open shard");
    r.entry(name).expect("block exists").1.data_offset
}

/// Write a copy of `src` to `dst` with the byte at `offset` inverted.
pub fn copy_flipped(src: &Path, dst: &Path, offset: u64) {
    let mut bytes = std::fs::read(src).expect("read source");
    let i = usize::try_from(offset).expect("offset fits");
    bytes[i] ^= 0xFF;
    std::fs::write(dst, bytes).expect("write copy");
}

/// Invert the byte at `offset` of `path` in place.
pub fn flip_in_place(path: &Path, offset: u64) {
    let src = path.to_path_buf();
    copy_flipped(&src, path, offset);
}

/// A 20-step episode with one f32 [3] signal and one f32 [2] action.
pub fn small_episode(id: &str) -> Episode {
    let t = 20usize;
    let mut ep = Episode::new(id, "SimEnv-v0", Timebase::ticks(50.0));
    #[allow(clippy::cast_precision_loss)]
    let obs: Vec<f32> = (0..t * 3).map(|i| i as f32 * 0.5).collect();
    ep.push_channel(Channel::from_f32("obs", Lane::Signal, vec![3], &obs).expect("obs channel"));
    #[allow(clippy::cast_precision_loss)]
    let act: Vec<f32> = (0..t * 2).map(|i| (i % 5) as f32).collect();
    ep.push_channel(Channel::from_f32("ctrl", Lane::Action, vec![2], &act).expect("ctrl channel"));
    ep.set_reward(vec![1.0; t]);
    ep.set_done((0..t).map(|i| i + 1 == t).collect());
    ep
}

/// Write `small_episode(id)` as chunks of 8 steps (3 chunks) plus a manifest into `dir`.
pub fn write_chunked(dir: &Path, id: &str) -> Manifest {
    std::fs::create_dir_all(dir).expect("create episode dir");
    write_episode_chunked(&small_episode(id), dir, 8, &EpisodeWriteOptions::default())
        .expect("write chunked episode")
}

/// Write a role-5 shard block by block, bypassing the episode model's own validation, so
/// tests can make files whose structure is wrong while every CRC is right.
pub fn write_raw_episode(path: &Path, blocks: &[(&str, &[u8])]) {
    use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};
    let file = std::fs::File::create(path).expect("create shard");
    let mut w = ShardWriter::new(
        file,
        ShardOptions::wshard(),
        &Reserve::names(blocks.iter().map(|(n, _)| *n)),
    )
    .expect("start shard");
    for (name, data) in blocks {
        let ct = if name.starts_with("meta/") {
            wshard::entry::content_type::JSON
        } else {
            0
        };
        w.write_block(name, data, BlockOptions::raw(ct))
            .expect("write block");
    }
    w.finish().expect("finish shard");
}
