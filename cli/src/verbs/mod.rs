//! The verbs of `wshard`: one module per top-level command, named for it.
//!
//! Each may call the rooms below it ([`crate::control_socket`], [`crate::store`],
//! [`crate::shard_view`], [`crate::output`], [`crate::exit_status`]) and the workspace's
//! libraries; no verb imports another.

pub mod annotate;
pub mod bridge;
pub mod cache;
pub mod cat;
pub mod dataset;
pub mod doctor;
pub mod export;
pub mod import;
pub mod inspect;
pub mod publish;
pub mod query;
pub mod recover;
pub mod verify;
