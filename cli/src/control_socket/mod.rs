//! A running `wshardd`'s control socket, for the verbs `status`, `episodes`, `close`,
//! `metrics` and `annotate`: [`args`] are the flags that find it, [`call`] sends one
//! request and prints the reply or the refusal, [`client`] finds the socket and exchanges
//! one request and reply, [`connect`] says why connecting failed (no daemon, stale socket,
//! refused user), [`render`] prints the replies as text.
//!
//! It may call the daemon library's control protocol, the config crate, [`crate::output`]
//! and [`crate::exit_status`]; never a verb. `args` uses `call`, `call` uses `client`,
//! `client` uses `connect`, never the reverse; `render` uses none of them.

pub mod args;
pub mod call;
pub mod client;
pub mod connect;
pub mod render;
pub mod render_parts;
