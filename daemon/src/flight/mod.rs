//! The flight recorder: streams recorded in flight mode keep a bounded ring of chunks
//! (`session::flight_ring`, evicted by each stream's finisher), and triggers persist a
//! window `[t - pre, t + post]` of every flight stream as a new multi-stream episode.
//!
//! - [`options`]: how an open asks for flight mode and `latched`;
//! - [`field_error`]: a trigger argument that is wrong, naming the field;
//! - [`mod@trigger`]: the one entry every front end calls ([`trigger()`]);
//! - [`pending`]: the durable record of a window until its episode is in place;
//! - [`window`]: the window thread (retries, the post-window's wall-clock deadline);
//!   `copy`: copying one stream out of its ring; [`finalize`]: committing a built window
//!   into place; `give_up`: a window whose retries failed ([`failure`]: why, and the
//!   retry policy);
//! - [`resume`]: at start, windows a crash left pending are built from the rings' files;
//! - [`registry`]: the flight streams and pending windows ([`FlightRegistry`]);
//!   [`shared`]: what the window threads need of it ([`FlightShared`]).
//!
//! No two of these modules use each other: `registry` uses `window`, which uses
//! `give_up`, `finalize` and `shared`; `give_up` uses `finalize`.
//!
//! It may call `session`, `episode_files`, `chunk`, `error` and `fsio`.

pub(crate) mod copy;
pub mod failure;
pub mod field_error;
pub mod finalize;
pub(crate) mod give_up;
pub mod options;
pub mod pending;
pub mod registry;
pub mod resume;
pub mod shared;
pub mod trigger;
pub mod window;

pub use failure::{FailedWindowKept, WindowFailure, WindowPolicy};
pub use finalize::{CUT_SHORT_KEY, WINDOW_FAILURE_KEY};
pub use options::{flight_options, FlightOptionError, FlightOptions};
pub use registry::FlightRegistry;
pub use shared::{FlightCounters, FlightShared};
pub use trigger::{trigger, TriggerError, TriggerReply, TriggerRequest};
pub use window::{ORIGIN_FLIGHT_WINDOW, ORIGIN_KEY};
