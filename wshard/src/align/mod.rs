//! The aligned view of a multi-stream episode: every chosen channel resampled onto one
//! clock (a stream's timestamps or a fixed rate), each value with its validity and the
//! source timestamp(s) it came from.
//!
//! - [`options`](AlignOptions): the clock, per-channel [`Policy`] (`hold` default,
//!   `nearest`, `linear`), `max_staleness_ns`, mask or drop invalid rows.
//! - [`pick_rows`]: which source sample(s) each row takes (pure, on timestamps).
//! - [`linear_output_dtype`]: `linear` gives f32 for f32/f16/bf16, f64 for f64 and integers.
//! - [`align_episode`] / [`align_streams`]: the [`AlignedTable`].
//!
//! Semantics are written out in `docs/FORMAT-NOTES.md`, "Reading multi-stream episodes".

mod clock;
mod error;
mod options;
mod pick;
mod select;
mod table;
mod values;

pub use clock::{rate_clock, MAX_CLOCK_ROWS};
pub use error::AlignError;
pub use options::{AlignOptions, Clock, InvalidRows, Policy};
pub use pick::{pick_rows, Picks, NO_ROW, NO_SAMPLE_T_NS};
pub use table::{align_episode, align_streams, AlignedColumn, AlignedTable};
pub use values::linear_output_dtype;
