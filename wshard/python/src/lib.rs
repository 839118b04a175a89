//! `wshard_reader._native`: the Rust half of the `wshard_reader` Python package.
//!
//! It opens episode directories with the `wshard` crate, validates every file, and hands
//! Python either the place of a raw block (which `wshard_reader` views in place through a
//! memory map, without a copy) or decoded bytes as a numpy array. The Python API lives in
//! `python/wshard_reader/`; see `README.md`.

use pyo3::prelude::*;

mod aligned;
mod episode;
mod errors;
mod errors_dir;
mod fixtures;
mod layout;
mod pylayout;
mod remote;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(episode::open_episode, m)?)?;
    m.add_class::<episode::NativeEpisode>()?;
    m.add_function(wrap_pyfunction!(remote::open_ranged_shard, m)?)?;
    m.add_class::<remote::NativeRangedShard>()?;
    m.add_function(wrap_pyfunction!(fixtures::_write_chunked_stream, m)?)?;
    m.add_function(wrap_pyfunction!(fixtures::_rehash_manifest, m)?)?;
    m.add("WSHARD_CRATE_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
