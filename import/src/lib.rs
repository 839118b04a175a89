//! Converters into WShard episodes: DreamerV3 episode NPZ files, Minari datasets (HDF5)
//! and D4RL HDF5 files. Each source episode becomes one episode directory in a data
//! directory, in the single-stream layout the daemon writes, written crash-safely.
//!
//! - [`sink`]: the episode sink (staging directory, syncs, rename into place);
//!   [`pipeline`]: reading, encoding and committing on three threads.
//! - [`npy`], [`npz`]: NumPy arrays and archives; [`hdf5_read`]: HDF5 files;
//!   [`chunked`]: deflate-only HDF5 datasets read and inflated in parallel.
//! - [`array`](mod@array): a decoded source array; [`build`]: one episode from source arrays.
//! - [`dreamer`], [`minari`], [`d4rl`]: one module per source format.
//! - [`options`]: the options every importer takes; [`error`]: [`ImportError`].
//!
//! See docs/EXPORT.md, "Imports".

pub mod array;
pub mod build;
pub mod chunked;
pub mod d4rl;
pub mod dreamer;
pub mod error;
pub mod hdf5_read;
pub mod minari;
pub mod npy;
pub mod npz;
pub mod options;
pub mod pipeline;
pub mod sink;

pub use error::{ImportError, Result};
pub use options::ImportOptions;
pub use sink::{EpisodeSink, SinkOptions, WrittenEpisode};
