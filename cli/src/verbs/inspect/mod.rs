//! `wshard inspect`: [`shard`] shows a shard file, [`episode_dir`] an episode directory,
//! [`journal`] a journal (`--peek`, `*.wal`).

pub mod episode_dir;
pub mod journal;
pub mod shard;
