//! Chunked episodes and their manifest (role 0x04, spec 14).

mod chunked;
mod io;
mod model;

pub use chunked::{read_episode_chunked, split_episode, write_episode_chunked};
pub use io::ChunkFileCheck;
pub use model::{
    chunk_file_name, manifest_file_name, validate_uri, ChunkRef, Manifest, MANIFEST_BLOCK,
    MANIFEST_FILE_SUFFIX, RING_START_KEY,
};
