//! `wshard verify PATH...`: check files, walk directories, and follow manifests to their
//! chunks. Each file is checked and printed once, however often it is reached.
//!
//! [`check`] checks one file on its own (with [`deep`] for `--deep`) into a
//! [`report::FileReport`]; this module walks the paths and follows manifests. `check` uses
//! `deep` and `report`, never this module.

pub mod check;
pub mod deep;
pub mod report;

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use wshard::manifest::{validate_uri, ChunkFileCheck, ChunkRef, Manifest};

use crate::exit_status::Status;
use check::{check_file, Checked, EpisodeFacts};
use report::FileReport;

/// Check files: every block's CRC, episode and manifest structure, chunk hashes
///
/// Decode every block and check every CRC; check episode structure, manifests and the
/// SHA-256 of their chunks. Directories are searched recursively for *.wshard files.
///
/// Exit codes: 0 all good, 1 a file is corrupt, 2 usage or I/O error (also when other files
/// are corrupt).
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object per file per line.
    #[arg(long)]
    pub json: bool,
    /// Also check every block's length against meta/channels and T, `done` values,
    /// timestamps, and a manifest's chunks against its entries and each other.
    #[arg(long)]
    pub deep: bool,
}

/// How `wshard verify` checks and prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// One JSON object per file per line instead of text.
    pub json: bool,
    /// Also check every block against the meta blocks, and a manifest's chunks against
    /// its entries and each other (timestep ranges, one channel schema).
    pub deep: bool,
}

/// Every `*.wshard` file under `dir`, sorted by path, recursing into subdirectories (but not
/// through symbolic links to directories, which could loop). Directories that cannot be
/// listed go to `failures`.
fn collect(dir: &Path, files: &mut Vec<PathBuf>, failures: &mut Vec<(PathBuf, io::Error)>) {
    let entries = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            failures.push((dir.to_path_buf(), e));
            return;
        }
    };
    let mut paths = Vec::new();
    for entry in entries {
        match entry {
            Ok(en) => paths.push(en.path()),
            Err(e) => failures.push((dir.to_path_buf(), e)),
        }
    }
    paths.sort();
    for p in paths {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => collect(&p, files, failures),
            Ok(_) if p.extension().is_some_and(|e| e == "wshard") => files.push(p),
            Ok(_) => {}
            Err(e) => failures.push((p, e)),
        }
    }
}

/// Walks the paths, checks each file once and prints one line per file.
pub struct Verifier<'a> {
    opts: VerifyOptions,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Files already checked (by canonical path) and, for good episodes, their facts.
    done: HashMap<PathBuf, Option<EpisodeFacts>>,
    status: Status,
}

impl<'a> Verifier<'a> {
    /// A verifier printing results to `out` and I/O failures to `err`.
    pub fn new(opts: VerifyOptions, out: &'a mut dyn Write, err: &'a mut dyn Write) -> Self {
        Self {
            opts,
            out,
            err,
            done: HashMap::new(),
            status: Status::Ok,
        }
    }

    /// The worst outcome so far.
    #[must_use]
    pub fn status(&self) -> Status {
        self.status
    }

    fn emit(&mut self, report: &FileReport) -> io::Result<()> {
        self.status = self.status.worst(report.status());
        if self.opts.json {
            report.write_json(self.out)?;
            if !report.io_errors.is_empty() {
                let _ = writeln!(
                    self.err,
                    "ERROR {}: {}",
                    report.path.display(),
                    report.messages().join("; ")
                );
            }
            Ok(())
        } else {
            report.write_text(self.out, self.err)
        }
    }

    /// Verify a file, or every `*.wshard` file under a directory.
    ///
    /// # Errors
    /// Only errors writing the output; everything wrong with the files is reported.
    pub fn verify_path(&mut self, path: &Path) -> io::Result<()> {
        match fs::metadata(path) {
            Err(e) => {
                let mut report = FileReport::new(path);
                report.io_error(format!("cannot access: {e}"));
                self.emit(&report)
            }
            Ok(m) if m.is_dir() => self.verify_dir(path),
            Ok(_) => self.verify_file(path).map(|_| ()),
        }
    }

    fn verify_dir(&mut self, dir: &Path) -> io::Result<()> {
        let mut files = Vec::new();
        let mut failures = Vec::new();
        collect(dir, &mut files, &mut failures);
        for (p, e) in failures {
            let mut report = FileReport::new(&p);
            report.io_error(format!("cannot list: {e}"));
            self.emit(&report)?;
        }
        if files.is_empty() {
            let _ = writeln!(
                self.err,
                "wshard verify: {}: no .wshard files found",
                dir.display()
            );
        }
        for f in files {
            self.verify_file(&f)?;
        }
        Ok(())
    }

    /// Check one file (and, for a manifest, its chunks first), print its line, and return
    /// its facts when it is a good episode. A file already checked is not printed again.
    fn verify_file(&mut self, path: &Path) -> io::Result<Option<EpisodeFacts>> {
        let key = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(facts) = self.done.get(&key) {
            return Ok(facts.clone());
        }
        // Mark before following a manifest, so a manifest listing itself cannot loop.
        self.done.insert(key.clone(), None);
        let Checked {
            mut report,
            episode,
            manifest,
        } = check_file(path, self.opts.deep);
        if let Some(m) = &manifest {
            self.check_manifest(path, m, &mut report)?;
        }
        self.done.insert(key, episode.clone());
        self.emit(&report)?;
        Ok(episode)
    }

    /// The manifest's continuity, then every listed chunk: present, SHA-256 as listed, a good
    /// episode of the listed length and index. Problems go into the manifest's report; each
    /// chunk also gets its own line.
    fn check_manifest(
        &mut self,
        path: &Path,
        m: &Manifest,
        report: &mut FileReport,
    ) -> io::Result<()> {
        if let Err(e) = m.validate_continuity() {
            report.error(&e);
        }
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let mut chain = ChunkChain::default();
        for (c, hash) in m.chunks.iter().zip(m.check_chunk_files(&dir)) {
            if let Some(facts) = self.check_chunk(&dir, c, &hash, report)? {
                if self.opts.deep {
                    deep_chunk_checks(c, &facts, &mut chain, report);
                }
            }
        }
        Ok(())
    }

    /// Check one listed chunk; its facts when it is a good episode.
    fn check_chunk(
        &mut self,
        dir: &Path,
        c: &ChunkRef,
        hash: &ChunkFileCheck,
        report: &mut FileReport,
    ) -> io::Result<Option<EpisodeFacts>> {
        let label = format!("chunk {} `{}`", c.chunk_index, c.uri);
        if let Err(e) = validate_uri(&c.uri) {
            report.problem(e.to_string());
            return Ok(None);
        }
        let chunk_path = dir.join(&c.uri);
        match fs::metadata(&chunk_path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                report.problem(format!("{label}: file missing ({})", chunk_path.display()));
                return Ok(None);
            }
            Err(e) => {
                report.io_error(format!("{label}: {}: {e}", chunk_path.display()));
                return Ok(None);
            }
            Ok(md) if md.is_dir() => {
                report.problem(format!("{label}: {} is a directory", chunk_path.display()));
                return Ok(None);
            }
            Ok(_) => {}
        }
        match (&hash.error, &hash.computed_sha256) {
            (Some(e), Some(_)) => report.problem(e.clone()),
            (Some(e), None) => report.io_error(format!("{label}: {e}")),
            (None, _) => {}
        }
        let facts = self.verify_file(&chunk_path)?;
        match &facts {
            None => report.problem(format!("{label}: not a valid episode (see its own report)")),
            Some(facts) => {
                if facts.length != c.length_t {
                    report.problem(format!(
                        "{label}: holds {} steps, manifest says length_T {}",
                        facts.length, c.length_t
                    ));
                }
                if let Some(k) = facts.chunk_index.filter(|&k| k != c.chunk_index) {
                    report.problem(format!("{label}: its meta/episode says chunk_index {k}"));
                }
            }
        }
        Ok(facts)
    }
}

/// What `--deep` carries from one good chunk of a manifest to the next.
#[derive(Debug, Default)]
struct ChunkChain {
    /// The first good chunk's index and channel schema.
    first: Option<(u64, Vec<String>)>,
    /// The index and last timestamp of the latest good chunk with timestamps.
    last_timestamp: Option<(u64, i64)>,
}

/// `--deep` for one good chunk of a manifest: its `meta/episode` must have the entry's
/// chunk index and timestep range, its channels must be those of the first good chunk, and
/// its timestamps must not start below where the previous chunk's ended.
fn deep_chunk_checks(
    c: &ChunkRef,
    facts: &EpisodeFacts,
    chain: &mut ChunkChain,
    report: &mut FileReport,
) {
    let label = format!("chunk {} `{}`", c.chunk_index, c.uri);
    if facts.chunk_index.is_none() {
        report.warning(format!("{label}: its meta/episode has no chunk_index"));
    }
    match facts.timestep_range {
        Some(r) if r != c.timestep_range => report.problem(format!(
            "{label}: its meta/episode says timestep_range [{}, {}], manifest says [{}, {}]",
            r[0], r[1], c.timestep_range[0], c.timestep_range[1]
        )),
        Some(_) => {}
        None => report.warning(format!("{label}: its meta/episode has no timestep_range")),
    }
    if let Some([start, end]) = facts.timestamps {
        if let Some((k, prev)) = chain.last_timestamp.filter(|&(_, prev)| start < prev) {
            report.problem(format!(
                "{label}: time/timestamps_ns starts at {start}, below {prev} at the end of chunk {k}"
            ));
        }
        chain.last_timestamp = Some((c.chunk_index, end));
    }
    match &mut chain.first {
        None => chain.first = Some((c.chunk_index, facts.channels.clone())),
        Some((k0, schema)) if *schema != facts.channels => report.problem(format!(
            "{label}: channel schema differs from chunk {k0}: [{}] vs [{}]",
            facts.channels.join(", "),
            schema.join(", ")
        )),
        Some(_) => {}
    }
}

/// Run `wshard verify` over `paths`.
///
/// Exit status: [`Status::Ok`] when every file is good, [`Status::Corrupt`] when any is
/// corrupt, [`Status::Error`] when any I/O failed (even if others are corrupt).
pub fn run(
    paths: &[PathBuf],
    opts: VerifyOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Status {
    let mut written = Ok(());
    let status = {
        let mut v = Verifier::new(opts, out, &mut *err);
        for p in paths {
            written = v.verify_path(p);
            if written.is_err() {
                break;
            }
        }
        v.status()
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(e) => {
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "wshard verify: writing output: {e}");
            }
            Status::Error
        }
    }
}
