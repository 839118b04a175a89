//! Rust client for wshardd.
