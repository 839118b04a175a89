//! Where the daemon's log goes.
//!
//! - Under systemd, when stderr is the journal stream systemd connected (`JOURNAL_STREAM`
//!   names stderr's device and inode), events go to journald natively: one entry per event,
//!   `PRIORITY` from the level, and every structured field as a journal field of its own
//!   (`episode` becomes `EPISODE=`, `peer` becomes `PEER=`), so
//!   `journalctl -u wshardd EPISODE=demo` finds one episode's lines.
//! - Otherwise plain text on stderr, with colour escapes only when stderr is a terminal
//!   (and `NO_COLOR` is unset): a pipe, a file or a journal that could not be reached natively
//!   never gets an escape byte.

use std::ffi::OsStr;
use std::io::IsTerminal;
use std::os::unix::fs::MetadataExt;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// The `SYSLOG_IDENTIFIER` of native journal entries (what `journalctl -t` matches).
pub(crate) const SYSLOG_IDENTIFIER: &str = "wshardd";

/// The variable systemd sets to `DEVICE:INODE` of the stream it connected to stdout/stderr.
const JOURNAL_STREAM_VAR: &str = "JOURNAL_STREAM";

/// Where log events are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSink {
    /// journald's native protocol, structured fields kept.
    Journal,
    /// Text on stderr with ANSI colours (stderr is a terminal).
    TerminalText,
    /// Text on stderr without any escape byte (a pipe, a file, or the journal's stream).
    PlainText,
}

/// The device and inode of a file descriptor's open file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamId {
    /// `st_dev`.
    pub(crate) dev: u64,
    /// `st_ino`.
    pub(crate) ino: u64,
}

/// `JOURNAL_STREAM`'s `DEVICE:INODE`, if it parses.
#[must_use]
pub(crate) fn parse_journal_stream(value: &OsStr) -> Option<StreamId> {
    let (dev, ino) = value.to_str()?.split_once(':')?;
    Some(StreamId {
        dev: dev.parse().ok()?,
        ino: ino.parse().ok()?,
    })
}

/// Choose the sink: the journal only when `JOURNAL_STREAM` names exactly the stream stderr
/// is (systemd's documented check: a child that inherited the variable but writes elsewhere
/// must not log natively); colour only on a terminal without `NO_COLOR`.
#[must_use]
pub(crate) fn choose_sink(
    journal_stream: Option<&OsStr>,
    stderr: Option<StreamId>,
    stderr_is_terminal: bool,
    no_color: bool,
) -> LogSink {
    let journal = journal_stream.and_then(parse_journal_stream);
    if journal.is_some() && journal == stderr {
        return LogSink::Journal;
    }
    if stderr_is_terminal && !no_color {
        LogSink::TerminalText
    } else {
        LogSink::PlainText
    }
}

fn stderr_stream_id() -> Option<StreamId> {
    // The magic link resolves to the open file itself (a pipe, a socket, a file).
    let meta = std::fs::metadata("/proc/self/fd/2").ok()?;
    Some(StreamId {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Install the process-wide subscriber at `level` (`RUST_LOG` overrides it) and return the
/// sink in use. If journald cannot be reached although stderr is its stream, logs go to
/// stderr as plain text, and the first line says why.
pub fn init(level: &str) -> LogSink {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let wanted = choose_sink(
        std::env::var_os(JOURNAL_STREAM_VAR).as_deref(),
        stderr_stream_id(),
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
    );
    let mut journal_error = None;
    if wanted == LogSink::Journal {
        match tracing_journald::layer() {
            Ok(layer) => {
                let layer = layer
                    .with_field_prefix(None)
                    .with_syslog_identifier(SYSLOG_IDENTIFIER.to_owned());
                let _ = tracing_subscriber::registry()
                    .with(filter())
                    .with(layer)
                    .try_init();
                return LogSink::Journal;
            }
            Err(e) => journal_error = Some(e),
        }
    }
    let sink = if wanted == LogSink::TerminalText {
        LogSink::TerminalText
    } else {
        LogSink::PlainText
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(sink == LogSink::TerminalText)
        .try_init();
    if let Some(e) = journal_error {
        tracing::warn!("journald not reachable natively ({e}); logging plain text to stderr");
    }
    sink
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: StreamId = StreamId { dev: 8, ino: 42 };

    #[test]
    fn log_journal_only_when_the_stream_is_stderr() {
        let v = OsStr::new("8:42");
        assert_eq!(
            choose_sink(Some(v), Some(ID), false, false),
            LogSink::Journal
        );
        let other = OsStr::new("8:43");
        assert_eq!(
            choose_sink(Some(other), Some(ID), false, false),
            LogSink::PlainText
        );
        assert_eq!(choose_sink(Some(v), None, false, false), LogSink::PlainText);
    }

    #[test]
    fn log_colour_only_on_a_terminal_without_no_color() {
        assert_eq!(
            choose_sink(None, Some(ID), true, false),
            LogSink::TerminalText
        );
        assert_eq!(choose_sink(None, Some(ID), true, true), LogSink::PlainText);
        assert_eq!(
            choose_sink(None, Some(ID), false, false),
            LogSink::PlainText
        );
    }

    #[test]
    fn log_journal_stream_values_that_do_not_parse_are_ignored() {
        for bad in ["", "8", "8:", ":42", "x:42", "8:42:1", "-1:42"] {
            assert_eq!(parse_journal_stream(OsStr::new(bad)), None, "{bad:?}");
        }
        assert_eq!(parse_journal_stream(OsStr::new("8:42")), Some(ID));
    }
}
