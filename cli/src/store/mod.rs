//! The object store, for the verbs that publish to it or read from it (`publish`, `doctor`,
//! `query`, `dataset`, `export webdataset --upload`, and `inspect`/`cat` on `s3://` URLs):
//! [`args`], the store flags and the variables behind them; [`remote`], reading an
//! `s3://` URL's shard through the blob cache; [`exit_code`], the exit codes of `publish`
//! and `dataset` and the one a store error deserves.
//!
//! It may call `wshard_publish`, [`crate::output`] and [`crate::exit_status`]; never a
//! verb. `remote` uses `args`, never the reverse.

pub mod args;
pub mod exit_code;
pub mod remote;
