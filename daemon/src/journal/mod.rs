//! The per-episode journal of accepted timesteps.

pub mod format;
pub mod record;
pub mod resync;
pub mod scan;
pub mod segment;
