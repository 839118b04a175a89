//! The data directory of the benchmark: complete single-stream episodes (one `u8`
//! `[480, 640, 3]` camera channel of pseudo-random bytes, distinct per episode so no two
//! chunk files share a blob), written as chunk files plus a manifest by the wshard
//! library, as the recorder leaves them.

use std::path::{Path, PathBuf};

use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::write_episode_chunked;

use crate::error::Result;

const FRAME: [u64; 3] = [480, 640, 3];
const FRAME_BYTES: u64 = 480 * 640 * 3;
const FPS: f64 = 30.0;

/// One file of the data directory.
#[derive(Clone, Debug)]
pub struct DataFile {
    pub path: PathBuf,
    pub size: u64,
}

fn fill(buf: &mut [u8], seed: u64) {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in buf.chunks_mut(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let b = s.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// Episodes of about `episode_bytes` each, `total_bytes` in all, chunks of about
/// `chunk_bytes`, in `dir`; returns every file (chunks and manifests).
pub fn build(
    dir: &Path,
    total_bytes: u64,
    episode_bytes: u64,
    chunk_bytes: u64,
) -> Result<Vec<DataFile>> {
    let steps_per_episode = (episode_bytes / FRAME_BYTES).max(1);
    let chunk_steps = (chunk_bytes / FRAME_BYTES).max(1);
    let per_episode = steps_per_episode * FRAME_BYTES;
    let episodes = ((total_bytes + per_episode / 2) / per_episode).max(1);
    let mut files = Vec::new();
    for i in 0..episodes {
        let id = format!("bench-{i:04}");
        let t = steps_per_episode as usize;
        let mut cam = vec![0_u8; t * FRAME_BYTES as usize];
        fill(&mut cam, i + 1);
        let mut ep = Episode::new(&id, "wshard-bench/upload", Timebase::Ticks { tick_hz: FPS });
        ep.push_channel(Channel::new(
            "cam0",
            Lane::Signal,
            DType::U8,
            FRAME.to_vec(),
            cam,
        ));
        ep.set_reward(vec![0.0; t]);
        let mut done = vec![false; t];
        if let Some(last) = done.last_mut() {
            *last = true;
        }
        ep.set_done(done);
        ep.validate()?;
        let ep_dir = dir.join(&id);
        std::fs::create_dir_all(&ep_dir)?;
        write_episode_chunked(&ep, &ep_dir, chunk_steps, &EpisodeWriteOptions::default())?;
        let mut names: Vec<PathBuf> = std::fs::read_dir(&ep_dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        names.sort();
        for path in names {
            let size = std::fs::metadata(&path)?.len();
            files.push(DataFile { path, size });
        }
    }
    Ok(files)
}
