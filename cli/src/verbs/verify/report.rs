//! The result of verifying one file, and its one line of output.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use wshard::FormatError;

use crate::exit_status::Status;
use crate::shard_view::describe::{error_about, Kind};

/// What verifying one file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReport {
    pub path: PathBuf,
    pub kind: Kind,
    /// Number of index entries (0 when the index could not be read).
    pub blocks: usize,
    /// Corruption: bad CRCs, truncation, inconsistent structure, hash mismatches.
    pub problems: Vec<String>,
    /// I/O failures: the file or a chunk could not be opened or read.
    pub io_errors: Vec<String>,
    /// Suspicious but not corrupt (from `--deep`): printed, never changing the status.
    pub warnings: Vec<String>,
}

impl FileReport {
    /// An empty (good) report for `path`.
    #[must_use]
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            kind: Kind::Shard,
            blocks: 0,
            problems: Vec::new(),
            io_errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Record a warning, once.
    pub fn warning(&mut self, message: String) {
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }

    /// Record a corruption problem, once.
    pub fn problem(&mut self, message: String) {
        if !self.problems.contains(&message) {
            self.problems.push(message);
        }
    }

    /// Record an I/O failure, once.
    pub fn io_error(&mut self, message: String) {
        if !self.io_errors.contains(&message) {
            self.io_errors.push(message);
        }
    }

    /// Record a library error as I/O or corruption, by [`FormatError::is_io`].
    pub fn error(&mut self, e: &FormatError) {
        let message = error_about(&self.path, e);
        if e.is_io() {
            self.io_error(message);
        } else {
            self.problem(message);
        }
    }

    /// True when nothing was found wrong.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.io_errors.is_empty()
    }

    /// [`Status::Error`] if any I/O failed, else [`Status::Corrupt`] if any problem, else OK.
    #[must_use]
    pub fn status(&self) -> Status {
        if !self.io_errors.is_empty() {
            Status::Error
        } else if !self.problems.is_empty() {
            Status::Corrupt
        } else {
            Status::Ok
        }
    }

    /// Every message, problems first.
    #[must_use]
    pub fn messages(&self) -> Vec<String> {
        self.problems
            .iter()
            .chain(&self.io_errors)
            .cloned()
            .collect()
    }

    /// The text line: `OK path (N blocks)` or `CORRUPT path: p1; p2` on `out`, or
    /// `ERROR path: ...` on `err` when an I/O error happened; then `WARN path: w1; w2` on
    /// `out` when there are warnings.
    ///
    /// # Errors
    /// Errors writing to `out` or `err`.
    pub fn write_text(&self, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
        self.write_status_line(out, err)?;
        if self.warnings.is_empty() {
            Ok(())
        } else {
            writeln!(
                out,
                "WARN {}: {}",
                self.path.display(),
                self.warnings.join("; ")
            )
        }
    }

    fn write_status_line(&self, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
        let path = self.path.display();
        match self.status() {
            Status::Ok => {
                let s = if self.blocks == 1 { "" } else { "s" };
                writeln!(out, "OK {path} ({} block{s})", self.blocks)
            }
            Status::Corrupt => writeln!(out, "CORRUPT {path}: {}", self.problems.join("; ")),
            Status::Error => writeln!(err, "ERROR {path}: {}", self.messages().join("; ")),
        }
    }

    /// One JSON object on one line: `path`, `ok`, `kind`, `blocks`, `errors`, `io_error`,
    /// `warnings`.
    ///
    /// # Errors
    /// Errors writing to `out`.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let doc = json!({
            "path": self.path.display().to_string(),
            "ok": self.ok(),
            "kind": self.kind.as_str(),
            "blocks": self.blocks,
            "errors": self.messages(),
            "io_error": !self.io_errors.is_empty(),
            "warnings": self.warnings,
        });
        serde_json::to_writer(&mut *out, &doc)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &FileReport) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        r.write_text(&mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn lines() {
        let mut r = FileReport::new(Path::new("a.wshard"));
        r.blocks = 7;
        assert_eq!(text(&r).0, "OK a.wshard (7 blocks)\n");
        r.problem("x".into());
        r.problem("y".into());
        r.problem("x".into());
        assert_eq!(text(&r).0, "CORRUPT a.wshard: x; y\n");
        assert_eq!(r.status(), Status::Corrupt);
        r.io_error("open: denied".into());
        assert_eq!(text(&r).1, "ERROR a.wshard: x; y; open: denied\n");
        assert_eq!(r.status(), Status::Error);
        r.warning("w".into());
        assert_eq!(r.status(), Status::Error);
        assert!(text(&r).0.ends_with("WARN a.wshard: w\n"));
    }
}
