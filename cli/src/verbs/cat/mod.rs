//! `wshard cat`: [`block`] writes one block of a shard as raw bytes, `.npy` or CSV (the
//! CSV rows are [`csv`]'s); [`aligned`] writes an episode directory's channels aligned on
//! one clock; [`remote`] writes one block of an `s3://` URL through [`block`].

pub mod aligned;
pub mod block;
pub mod csv;
pub mod remote;
