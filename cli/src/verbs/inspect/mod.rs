//! `wshard inspect`: [`shard`] shows a shard file, [`episode_dir`] an episode directory,
//! [`journal`] a journal (`--peek`, `*.wal`), [`remote`] an `s3://` URL. `remote` prints a
//! shard with `shard`'s printing; nothing else is shared, and nothing uses `remote`.

pub mod episode_dir;
pub mod journal;
pub mod remote;
pub mod shard;
