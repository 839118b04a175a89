//! Helpers for the end-to-end tests: find the built binaries, run a daemon in a temporary
//! directory, kill it, restart it.
