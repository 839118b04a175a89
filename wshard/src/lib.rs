//! # wshard
//!
//! The Shard v2 container and its WShard episode profile, byte-compatible with the public
//! WShard reference implementation (Go / Python / TypeScript).
//!
//! ```
//! use wshard::episode::{Channel, Episode, Lane, Timebase, DType};
//!
//! let mut ep = Episode::new("demo", "SimEnv-v0", Timebase::ticks(30.0));
//! ep.push_channel(Channel::from_f32("state", Lane::Signal, vec![2], &[0.0, 1.0, 2.0, 3.0]).unwrap());
//! ep.set_reward(vec![0.0, 1.0]);
//! ep.set_done(vec![false, true]);
//! let bytes = ep.to_bytes(&Default::default()).unwrap();
//! let back = wshard::episode::Episode::from_bytes(bytes).unwrap();
//! assert_eq!(back.channels[0].dtype, DType::F32);
//! assert_eq!(back.length, 2);
//! ```
//!
//! ## Layout
//! - [`consts`]: magic, sizes, flag bits, roles and limits of the format.
//! - [`header`], [`entry`]: the 64-byte header and 48-byte index entry, encode/decode.
//! - [`codec`]: none / zstd / LZ4 raw block, and when a block is worth compressing.
//! - [`hash`]: CRC32C and the xxHash64 name hash.
//! - [`digest`]: lowercase hex and SHA-256 (of bytes, a reader, a file).
//! - [`read`]: one validating index parser over files, byte buffers and memory maps.
//! - [`write`](mod@write): the reserve-write-finalize writer, generic over `Write + Seek`.
//! - [`episode`]: the WShard profile (role 0x05): episodes, channels, meta JSON, residuals.
//! - [`manifest`]: chunked episodes and the manifest (role 0x04).
//! - [`episode_dir`]: episode directories (single- and multi-stream): index, events,
//!   annotations, and reading every stream through its manifest.
//! - [`align`]: the aligned view of an episode's streams on one clock.
//! - [`IoError`]: a failed file-system call with its path, which the errors of the
//!   library and of its users wrap.
//!
//! The library never fsyncs; durability belongs to the caller.

#![deny(unsafe_code)]

pub mod align;
pub mod codec;
pub mod consts;
pub mod digest;
pub mod entry;
pub mod episode;
pub mod episode_dir;
mod error;
pub mod hash;
pub mod header;
mod io_error;
mod le;
pub mod manifest;
pub mod read;
pub mod write;

pub use error::{FormatError, Result};
pub use io_error::IoError;
