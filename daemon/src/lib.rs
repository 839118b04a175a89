//! `wshard-recorder`: the daemon `wshardd` and the operator CLI `wshard`.
//!
//! ## Layout
//! - [`cli`]: the `wshard` operator verbs (`inspect`, `verify`).
//! - [`fsio`]: the only module that calls fsync / rename / fsync(dir), behind the [`fsio::Fs`] trait.
//! - [`journal`]: the per-episode journal (LevelDB-log framing with CRC32C).

pub mod chunk;
pub mod cli;
pub mod episode;
pub mod error;
pub mod fsio;
pub mod journal;
pub mod recovery;
pub mod session;
