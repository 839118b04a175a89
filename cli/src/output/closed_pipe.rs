//! `wshard`'s stdout when its reader goes away (`wshard cat ... | head`): the command ends
//! at once and quietly, as Unix tools end, killed by SIGPIPE (a shell shows status 141),
//! with nothing on stderr. Rust ignores SIGPIPE, so a write to a closed pipe fails with
//! `EPIPE` instead, and a verb would report it (a CSV writer or a buffer even wraps it
//! into another error). [`EndOnClosedPipe`] wraps stdout for every verb: the first write or
//! flush that finds the pipe closed takes SIGPIPE's default action.

use std::io::{self, Write};

/// The exit status when the signal could not end the process: what a shell shows for a
/// process SIGPIPE killed (128 + 13).
pub const EXIT_CLOSED_PIPE: i32 = 128 + signal_hook::consts::SIGPIPE;

/// A writer (stdout) that ends the process as SIGPIPE would when its reader has gone.
#[derive(Debug)]
pub struct EndOnClosedPipe<W>(pub W);

impl<W: Write> Write for EndOnClosedPipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(end_if_closed)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(end_if_closed)
    }
}

/// Pass `e` on, unless it says the reader closed the pipe: then end the process.
fn end_if_closed(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        end_as_sigpipe();
    }
    e
}

/// SIGPIPE's default action (terminate): the handler is set back to the default and the
/// signal raised; the exit status of [`EXIT_CLOSED_PIPE`] should that not end the process.
fn end_as_sigpipe() -> ! {
    let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    std::process::exit(EXIT_CLOSED_PIPE)
}
