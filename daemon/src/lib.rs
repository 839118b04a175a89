//! `wshard-recorder`: the durable WShard recorder daemon (`wshardd`) and its operator CLI
//! (`wshard`).
//!
//! - [`cli`]: the `wshard inspect` and `wshard verify` verbs; the binary only parses
//!   arguments and dispatches here.

pub mod cli;
