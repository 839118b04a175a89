//! How every verb writes: [`table`], a plain-text column table; [`closed_pipe`], stdout
//! that ends the process quietly, as SIGPIPE ends Unix tools, when its reader has gone.
//!
//! It may call only the standard library and its table layout crate; never a verb.

pub mod closed_pipe;
pub mod table;
