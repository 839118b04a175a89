//! `wshard publish`: [`new_version`] publishes a data directory's finished episodes as a
//! new dataset version, and holds the arguments and the report pieces both ways share;
//! [`append`] (`--append`) adds them to the latest version instead. `append` uses
//! `new_version`, never the reverse; this module only chooses between them.

pub mod append;
pub mod new_version;

use std::io::Write;

pub use new_version::PublishArgs;

/// Run `wshard publish`, with or without `--append`; returns the exit code.
pub fn run(args: &PublishArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if args.append {
        append::run(args, out, err)
    } else {
        new_version::run(args, out, err)
    }
}
