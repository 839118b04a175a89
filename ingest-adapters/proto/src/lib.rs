//! Wire protocol v1 (see docs/PROTOCOL.md).
