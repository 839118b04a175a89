//! The operator CLI `wshard`: inspect, verify, recover and read what the daemon wrote, talk
//! to a running daemon or ROS bridge, and publish, query, export and import episodes. It
//! calls the daemon library `wshard_recorder` (`control::protocol` for the requests,
//! `runtime::lock`, `recovery`, `journal`) and `wshard-storage` (`layout`, `fsio`), and never the reverse.
//!
//! The rooms, from the top down; each calls only those below it, never one above:
//!
//! - [`verbs`]: one module per top-level command of `wshard` (`status`, `episodes`, `close`,
//!   `metrics`, `annotate`, `bridge`, `export`, `import`, `publish`, `query`, `cache`,
//!   `dataset`, `doctor`, `inspect`, `verify`, `recover`, `cat`), each with its arguments,
//!   its help and its run; [`verbs::Command`] lists them for `main.rs` and runs the one
//!   parsed. No verb imports another.
//! - [`control_socket`]: a running `wshardd`'s control socket: its flags, one request and
//!   its reply, why connecting failed, the replies as text.
//! - [`store`]: the object store: its flags and variables, reads of `s3://` URLs through
//!   the blob cache, the exit codes of store errors.
//! - [`shard_view`]: what a shard's header numbers and an episode's meta blocks say.
//! - [`output`]: plain-text tables, and stdout that ends the process quietly on a closed
//!   pipe.
//! - [`python`]: the Python interpreter of the verbs that run Python.
//! - [`exit_status`]: the exit status shared by the verbs that check files, and the exit
//!   codes of the verbs that ask a server or run a program.

pub mod control_socket;
pub mod exit_status;
pub mod output;
pub mod python;
pub mod shard_view;
pub mod store;
pub mod verbs;
