//! The per-episode journal of accepted timesteps.
//! It may call `episode`, `fsio` and `error`; `session` writes it, `recovery` reads it.

pub mod format;
pub mod record;
pub(crate) mod resync;
pub mod scan;
pub mod segment;
