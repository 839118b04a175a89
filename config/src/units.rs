//! Byte units of the configuration's sizes. A leaf: every section's defaults use it.

/// 1 MiB.
pub const MIB: u64 = 1 << 20;
/// 1 GiB.
pub const GIB: u64 = 1 << 30;
/// 1 TiB.
pub const TIB: u64 = 1 << 40;
