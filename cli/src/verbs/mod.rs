//! The verbs of `wshard`: one module per top-level command, named for it.
//!
//! Each may call the rooms below it ([`crate::control_socket`], [`crate::store`],
//! [`crate::shard_view`], [`crate::output`], [`crate::exit_status`]) and the workspace's
//! libraries; no verb imports another.

pub mod annotate;
pub mod bridge;
pub mod cache;
pub mod cat;
pub mod close;
pub mod dataset;
pub mod doctor;
pub mod episodes;
pub mod export;
pub mod import;
pub mod inspect;
pub mod metrics;
pub mod publish;
pub mod query;
pub mod recover;
pub mod status;
pub mod verify;
