//! The per-episode journal of accepted timesteps.

pub mod format;
