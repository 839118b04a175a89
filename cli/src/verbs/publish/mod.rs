//! `wshard publish`: [`new_version`] publishes a data directory's finished episodes as a
//! new dataset version; [`append`] (`--append`) adds them to the latest version.
//! `append` uses `new_version`, never the reverse.

pub mod append;
pub mod new_version;
