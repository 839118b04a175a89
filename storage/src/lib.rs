//! `wshard-storage`: how the recorder's files reach the disk and where they live. Shared by
//! the daemon (`wshardd`), the native imports (`wshard-import`) and the operator CLI, so that
//! none of them needs the daemon to write an episode.
//!
//! - [`fsio`]: the only code that calls fsync / rename / fsync(dir), behind the [`fsio::Fs`]
//!   trait; `fsio::sim` (feature `sim`) is the simulated filesystem of the crash-point,
//!   fault and torn-file tests.
//! - [`layout`]: an episode's directory and file names under the data directory, and the
//!   episode id rule.
//! - [`keep`]: the keep mark (`data_dir/.keep/EP`) that exempts an episode from eviction.
//!
//! A leaf of the recorder: it uses only the format library and the wire protocol's limits.

pub mod fsio;
pub mod keep;
pub mod layout;
