//! Multi-stream episode directories: the names of their files, the episode index, events and
//! annotations (pure models: JSON bytes in and out, no I/O).
//!
//! See `docs/FORMAT-NOTES.md`, "Reading multi-stream episodes".

pub mod annotations;
pub mod events;
pub mod index;
mod json;
pub mod names;
