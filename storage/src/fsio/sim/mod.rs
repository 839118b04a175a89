//! The simulated file system of the tests (feature `sim`): power cuts and injected faults.
//! It calls only its parent, [`crate::fsio`] (the [`Fs`] trait it implements).
//!
//! [`SimFs`]: an in-memory [`Fs`] that models what survives a power cut, counts every
//! operation that changes state, can lose power after any of them, and can make chosen
//! operations fail. Compiled into the library only with the `sim` feature (the daemon's own
//! tests enable it; release binaries do not), so integration tests can drive the real write
//! path over it.
//!
//! ## Model
//!
//! Two images are kept side by side:
//!
//! - the **volatile** image is what every read sees now (the page cache);
//! - the **durable** image is what is left after power is lost.
//!
//! A file's *content* becomes durable only when `sync_data` / `sync_all` on that file
//! succeeds (both persist data and size; the sim keeps no other metadata, so they are the
//! same here). A directory's *entry set* (names created, renamed or removed in it) becomes
//! durable only when `sync_dir` of that directory succeeds: it then copies the volatile
//! entry set of that directory, and only that one, into the durable image. So a file whose
//! data was synced but whose directory never was is gone after a power cut, a rename not
//! followed by `sync_dir` may be undone, and a removal may be undone. A rename between two
//! directories is durable in each of them separately (after a power cut the file can be in
//! both, or in neither).
//!
//! A failed sync (injected) never persists anything, and poisons the file: a later sync of
//! it returns `Ok` without persisting what was written before the failure, as Linux does
//! after a writeback error ("fsyncgate"). Code that retries a failed fsync therefore
//! acknowledges data that is not durable, which the crash tests detect.
//!
//! [`SimFs::power_cut_image`] builds the file system that a reboot would find: the durable
//! image, reached from the root through durable directory entries only, where each file holds
//! its synced content, optionally followed by part of what was written after the last sync
//! (see [`PowerLoss`]).
//!
//! ## Crashes and faults
//!
//! Every call that changes state (create, write, `set_len`, sync, `sync_dir`, rename,
//! remove, directory creation) is one *operation* and gets the next number. After
//! [`SimFs::crash_after`]`(n)` the next `n` operations succeed and the one after them loses
//! power: from then on every call, reads included, fails with `EIO`. Reads, opens, seeks and
//! `exists` are not operations.
//!
//! [`SimFs::inject`] / [`SimFs::inject_on`] make the n-th occurrence of an operation kind
//! (optionally only on paths containing a string) fail with `EIO` or `ENOSPC`, write only a
//! prefix (a short write: `write` returns `Ok(k)` with `k < len`, as the kernel does when
//! the disk fills mid-write; `write_all` then continues with the rest), or fail a sync.
//!
//! Every call is also kept in an in-memory log ([`SimFs::log`]) for assertions such as
//! "no sync of this file after its failed sync". A power-cut image of a power-cut image is
//! an exact copy, which is how a test runs several recoveries from one crash image.
//!
//! Paths must be absolute; `..` is not supported. Error codes are Linux's.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{DurableFile, Fs};

const ENOENT: i32 = 2;
const EIO: i32 = 5;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const EINVAL: i32 = 22;
const ENOSPC: i32 = 28;
const ENOTEMPTY: i32 = 39;

fn os(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// The kinds of calls, for counting, logging and fault injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `create`, `create_new`, `create_dir`, `create_dir_all` (an operation).
    Create,
    /// `Write::write` on a file (an operation).
    Write,
    /// `DurableFile::set_len` (an operation).
    SetLen,
    /// `DurableFile::preallocate` (an operation: it changes allocation, not content).
    Preallocate,
    /// `sync_data` / `sync_all` (an operation).
    Sync,
    /// `sync_dir` (an operation).
    SyncDir,
    /// `rename` / `move_aside` (an operation).
    Rename,
    /// `remove_file` (an operation).
    Remove,
    /// `open_read`, `open_append`, `read`, `read_dir` (not an operation: changes nothing).
    Read,
}

impl OpKind {
    /// True for the kinds that change state and are counted.
    #[must_use]
    pub fn changes_state(self) -> bool {
        !matches!(self, Self::Read)
    }
}

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The call fails with `EIO` and changes nothing (a sync also poisons the file).
    Eio,
    /// The call fails with `ENOSPC` and changes nothing.
    Enospc,
    /// On a write: only the first half of the buffer (at least one byte) is written and
    /// `Ok(k)` is returned. On other calls: as [`FaultKind::Eio`].
    ShortWrite,
    /// On a sync: `EIO`, nothing persisted, the file poisoned (a later sync of it lies).
    /// On other calls: as [`FaultKind::Eio`].
    FsyncFails,
}

/// What an unsynced write leaves after a power cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerLoss {
    /// Exactly the synced content survives.
    DropUnsynced,
    /// When a file was only appended to since its last sync, a random prefix of the
    /// appended bytes survives as well (the rest of its changes are lost).
    KeepTailPrefix { seed: u64 },
    /// As `KeepTailPrefix`, but the last bytes (up to a 512-byte sector) of the surviving
    /// tail are zeros or garbage.
    KeepTailGarbage { seed: u64 },
}

/// How a logged call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A write that wrote only this many bytes.
    Short(usize),
    /// Failed (injected fault, power lost, or a file system error such as `ENOENT`).
    Failed(String),
}

/// One call as the sim saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// The operation number (1-based), or 0 for calls that are not operations.
    pub n: u64,
    pub kind: OpKind,
    pub path: PathBuf,
    /// For renames: the target.
    pub to: Option<PathBuf>,
    pub outcome: Outcome,
    /// True when this call failed because of an injected fault.
    pub injected: bool,
}

mod file;
mod state;
#[cfg(test)]
mod tests;

use file::{SimFile, SimReader};
use state::{DirNode, Fault, Node, State, ROOT};

/// The simulated file system. Cloning gives another handle to the same state.
#[derive(Clone, Debug)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl Default for SimFs {
    fn default() -> Self {
        Self::new()
    }
}

impl SimFs {
    /// An empty file system (only `/`, durable).
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Create `dir` and its parents and make them durable, without counting operations
    /// (test setup).
    ///
    /// # Errors
    /// A component exists and is a file.
    pub fn mkdir_durable(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        let mut ino = ROOT;
        for n in State::names(dir)? {
            let next = match st.dir(ino)?.live.get(&n) {
                Some(&i) => i,
                None => st.new_node(Node::Dir(DirNode::default())),
            };
            let d = st.dir_mut(ino)?;
            d.live.insert(n.clone(), next);
            d.durable.insert(n, next);
            st.dir(next)?;
            ino = next;
        }
        Ok(())
    }

    /// Lose power after the next `n` operations: they succeed, the one after them and
    /// every later call fail with `EIO`. `crash_after(0)` fails the very next operation.
    pub fn crash_after(&self, n: u64) {
        let mut st = self.lock();
        st.crash_at = Some(st.ops + n + 1);
    }

    /// True once power was lost.
    #[must_use]
    pub fn is_crashed(&self) -> bool {
        self.lock().crashed
    }

    /// Operations counted so far.
    #[must_use]
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Make the `nth` (1-based) occurrence of `op` fail as `fault`.
    pub fn inject(&self, op: OpKind, nth: u64, fault: FaultKind) {
        self.push_fault(op, None, nth, fault);
    }

    /// Make the `nth` (1-based) occurrence of `op` on a path containing `path_contains`
    /// fail as `fault`.
    pub fn inject_on(&self, op: OpKind, path_contains: &str, nth: u64, fault: FaultKind) {
        self.push_fault(op, Some(path_contains.to_owned()), nth, fault);
    }

    fn push_fault(&self, op: OpKind, path_contains: Option<String>, nth: u64, kind: FaultKind) {
        self.lock().faults.push(Fault {
            op,
            path_contains,
            nth,
            seen: 0,
            kind,
            fired: false,
        });
    }

    /// How many injected faults have fired.
    #[must_use]
    pub fn faults_fired(&self) -> usize {
        self.lock().faults.iter().filter(|f| f.fired).count()
    }

    /// Every call so far, in order (operations and the reads that were attempted).
    #[must_use]
    pub fn log(&self) -> Vec<OpRecord> {
        self.lock().log.clone()
    }

    /// The largest length preallocated for the file at `path` (0 when none was).
    #[must_use]
    pub fn preallocated(&self, path: &Path) -> u64 {
        let mut st = self.lock();
        st.resolve(path)
            .and_then(|ino| st.file_mut(ino).map(|f| f.reserved))
            .unwrap_or(0)
    }

    /// How many calls of `kind` on `path` were made (whatever their outcome).
    #[must_use]
    pub fn attempts(&self, kind: OpKind, path: &Path) -> usize {
        self.lock()
            .log
            .iter()
            .filter(|r| r.kind == kind && r.path == path)
            .count()
    }

    /// The file system a reboot would find now: the durable image, as a fresh `SimFs`
    /// whose volatile and durable images are equal, with no crash or fault pending.
    #[must_use]
    pub fn power_cut_image(&self, mode: PowerLoss) -> Self {
        let st = self.lock().power_cut(mode);
        Self {
            state: Arc::new(Mutex::new(st)),
        }
    }

    /// Every file under `dir` in the volatile image, by path.
    ///
    /// # Errors
    /// `dir` does not exist or is not a directory.
    pub fn files(&self, dir: &Path) -> io::Result<BTreeMap<PathBuf, Vec<u8>>> {
        let st = self.lock();
        let mut out = BTreeMap::new();
        let mut todo = vec![(dir.to_path_buf(), st.resolve(dir)?)];
        while let Some((p, ino)) = todo.pop() {
            match st.nodes.get(&ino) {
                Some(Node::Dir(d)) => {
                    todo.extend(d.live.iter().map(|(n, &i)| (p.join(n), i)));
                }
                Some(Node::File(f)) => {
                    out.insert(p, f.data.clone());
                }
                None => {}
            }
        }
        Ok(out)
    }

    /// Copy the volatile tree under `dir` into the real directory `to` (created), so that
    /// code reading real files can inspect it.
    ///
    /// # Errors
    /// Reading the sim or writing the real files.
    pub fn export_to(&self, dir: &Path, to: &Path) -> io::Result<()> {
        std::fs::create_dir_all(to)?;
        let dirs: Vec<PathBuf> = {
            let st = self.lock();
            let mut out = Vec::new();
            let mut todo = vec![(PathBuf::new(), st.resolve(dir)?)];
            while let Some((rel, ino)) = todo.pop() {
                if let Some(Node::Dir(d)) = st.nodes.get(&ino) {
                    out.push(rel.clone());
                    todo.extend(d.live.iter().map(|(n, &i)| (rel.join(n), i)));
                }
            }
            out
        };
        for rel in dirs {
            std::fs::create_dir_all(to.join(rel))?;
        }
        for (p, bytes) in self.files(dir)? {
            let rel = p.strip_prefix(dir).map_err(|_| os(EINVAL))?;
            std::fs::write(to.join(rel), bytes)?;
        }
        Ok(())
    }

    fn handle(&self, ino: u64, path: &Path, pos: u64) -> Box<dyn DurableFile> {
        Box::new(SimFile {
            state: self.state.clone(),
            ino,
            path: path.to_path_buf(),
            pos,
        })
    }
}

impl Fs for SimFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let ino = self
            .lock()
            .op(OpKind::Create, path, None, |st| st.create_file(path, true))?;
        Ok(self.handle(ino, path, 0))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let ino = self
            .lock()
            .op(OpKind::Create, path, None, |st| st.create_file(path, false))?;
        Ok(self.handle(ino, path, 0))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let (ino, len) = self.lock().op(OpKind::Read, path, None, |st| {
            let ino = st.resolve(path)?;
            let len = st.file_mut(ino)?.data.len() as u64;
            Ok((ino, len))
        })?;
        Ok(self.handle(ino, path, len))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        let ino = self.lock().op(OpKind::Read, path, None, |st| {
            let ino = st.resolve(path)?;
            st.file_mut(ino)?;
            Ok(ino)
        })?;
        Ok(Box::new(SimReader {
            state: self.state.clone(),
            ino,
            pos: 0,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.lock().op(OpKind::Read, path, None, |st| {
            let ino = st.resolve(path)?;
            Ok(st.file_mut(ino)?.data.clone())
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.lock()
            .op(OpKind::Rename, from, Some(to), |st| st.rename(from, to))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.lock().op(OpKind::SyncDir, dir, None, |st| {
            let ino = st.resolve(dir)?;
            let d = st.dir_mut(ino)?;
            d.durable.clone_from(&d.live);
            Ok(())
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.lock().op(OpKind::Remove, path, None, |st| {
            let (dir, name) = st.parent(path)?;
            let ino = *st.dir(dir)?.live.get(&name).ok_or_else(|| os(ENOENT))?;
            st.file_mut(ino)?;
            st.dir_mut(dir)?.live.remove(&name);
            Ok(())
        })
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.lock().op(OpKind::Remove, path, None, |st| {
            let (dir, name) = st.parent(path)?;
            let ino = *st.dir(dir)?.live.get(&name).ok_or_else(|| os(ENOENT))?;
            if !st.dir(ino)?.live.is_empty() {
                return Err(os(ENOTEMPTY));
            }
            st.dir_mut(dir)?.live.remove(&name);
            Ok(())
        })
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.lock()
            .op(OpKind::Create, path, None, |st| st.mkdir(path, true))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.lock().op(OpKind::Create, path, None, |st| {
            let names = State::names(path)?;
            let mut p = PathBuf::from("/");
            for n in names {
                p.push(n);
                st.mkdir(&p, false)?;
            }
            Ok(())
        })
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.lock().op(OpKind::Read, dir, None, |st| {
            let ino = st.resolve(dir)?;
            Ok(st.dir(ino)?.live.keys().map(|n| dir.join(n)).collect())
        })
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.lock();
        !st.crashed && st.resolve(path).is_ok()
    }
}
