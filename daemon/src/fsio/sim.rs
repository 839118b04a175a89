//! [`SimFs`]: an in-memory [`Fs`] that models what survives a power cut, counts every
//! operation that changes state, can lose power after any of them, and can make chosen
//! operations fail. Compiled into the library (not `cfg(test)`) so that integration tests,
//! benches and tools can drive the real write path over it.
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

/// A fault waiting for its occurrence.
#[derive(Clone, Debug)]
struct Fault {
    op: OpKind,
    path_contains: Option<String>,
    nth: u64,
    seen: u64,
    kind: FaultKind,
    fired: bool,
}

#[derive(Clone, Debug, Default)]
struct FileNode {
    data: Vec<u8>,
    synced: Vec<u8>,
    poisoned: bool,
    /// The largest length preallocated (bookkeeping only: content and size never change).
    reserved: u64,
}

#[derive(Clone, Debug, Default)]
struct DirNode {
    live: BTreeMap<OsString, u64>,
    durable: BTreeMap<OsString, u64>,
}

#[derive(Clone, Debug)]
enum Node {
    File(FileNode),
    Dir(DirNode),
}

const ROOT: u64 = 0;

#[derive(Debug)]
struct State {
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    ops: u64,
    /// Power is lost at the operation with this number.
    crash_at: Option<u64>,
    crashed: bool,
    faults: Vec<Fault>,
    log: Vec<OpRecord>,
}

impl State {
    fn new() -> Self {
        let mut nodes = HashMap::new();
        nodes.insert(ROOT, Node::Dir(DirNode::default()));
        Self {
            nodes,
            next_ino: ROOT + 1,
            ops: 0,
            crash_at: None,
            crashed: false,
            faults: Vec::new(),
            log: Vec::new(),
        }
    }

    fn names(path: &Path) -> io::Result<Vec<OsString>> {
        let mut out = Vec::new();
        let mut comps = path.components();
        if comps.next() != Some(Component::RootDir) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("SimFs needs absolute paths, not {}", path.display()),
            ));
        }
        for c in comps {
            match c {
                Component::Normal(n) => out.push(n.to_owned()),
                Component::CurDir => {}
                _ => return Err(os(EINVAL)),
            }
        }
        Ok(out)
    }

    fn dir(&self, ino: u64) -> io::Result<&DirNode> {
        match self.nodes.get(&ino) {
            Some(Node::Dir(d)) => Ok(d),
            Some(Node::File(_)) => Err(os(ENOTDIR)),
            None => Err(os(ENOENT)),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> io::Result<&mut DirNode> {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(d)) => Ok(d),
            Some(Node::File(_)) => Err(os(ENOTDIR)),
            None => Err(os(ENOENT)),
        }
    }

    fn file_mut(&mut self, ino: u64) -> io::Result<&mut FileNode> {
        match self.nodes.get_mut(&ino) {
            Some(Node::File(f)) => Ok(f),
            Some(Node::Dir(_)) => Err(os(EISDIR)),
            None => Err(os(ENOENT)),
        }
    }

    fn resolve(&self, path: &Path) -> io::Result<u64> {
        let mut ino = ROOT;
        for n in Self::names(path)? {
            ino = *self.dir(ino)?.live.get(&n).ok_or_else(|| os(ENOENT))?;
        }
        Ok(ino)
    }

    /// The parent directory's inode and the last name.
    fn parent(&self, path: &Path) -> io::Result<(u64, OsString)> {
        let mut names = Self::names(path)?;
        let last = names.pop().ok_or_else(|| os(EINVAL))?;
        let mut ino = ROOT;
        for n in names {
            ino = *self.dir(ino)?.live.get(&n).ok_or_else(|| os(ENOENT))?;
        }
        self.dir(ino)?;
        Ok((ino, last))
    }

    fn new_node(&mut self, node: Node) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(ino, node);
        ino
    }

    /// Start a call: count it if it is an operation, lose power if its number is reached,
    /// and find the injected fault (if any) that fires on it. `Err` when the call must fail
    /// without doing anything.
    fn begin(&mut self, kind: OpKind, path: &Path) -> Result<(u64, Option<FaultKind>), io::Error> {
        if self.crashed {
            return Err(os(EIO));
        }
        let mut n = 0;
        if kind.changes_state() {
            self.ops += 1;
            n = self.ops;
            if self.crash_at.is_some_and(|c| n >= c) {
                self.crashed = true;
                self.log.push(OpRecord {
                    n,
                    kind,
                    path: path.to_path_buf(),
                    to: None,
                    outcome: Outcome::Failed("power lost".into()),
                    injected: false,
                });
                return Err(os(EIO));
            }
        }
        let text = path.to_string_lossy();
        let mut fired = None;
        for f in &mut self.faults {
            if f.fired || f.op != kind {
                continue;
            }
            if f.path_contains
                .as_deref()
                .is_some_and(|s| !text.contains(s))
            {
                continue;
            }
            f.seen += 1;
            if f.seen == f.nth && fired.is_none() {
                f.fired = true;
                fired = Some(f.kind);
            }
        }
        Ok((n, fired))
    }

    fn record(
        &mut self,
        n: u64,
        kind: OpKind,
        path: &Path,
        to: Option<&Path>,
        outcome: Outcome,
        injected: bool,
    ) {
        self.log.push(OpRecord {
            n,
            kind,
            path: path.to_path_buf(),
            to: to.map(Path::to_path_buf),
            outcome,
            injected,
        });
    }

    /// Run operation `kind` on `path`: power loss, faults and logging around `f`.
    /// A fault other than a short write makes the call fail before `f` runs.
    fn op<T>(
        &mut self,
        kind: OpKind,
        path: &Path,
        to: Option<&Path>,
        f: impl FnOnce(&mut Self) -> io::Result<T>,
    ) -> io::Result<T> {
        let (n, fault) = self.begin(kind, path)?;
        if let Some(fault) = fault {
            let e = match fault {
                FaultKind::Enospc => os(ENOSPC),
                _ => os(EIO),
            };
            self.record(n, kind, path, to, Outcome::Failed(e.to_string()), true);
            return Err(e);
        }
        let r = f(self);
        let outcome = match &r {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Failed(e.to_string()),
        };
        self.record(n, kind, path, to, outcome, false);
        r
    }

    fn create_file(&mut self, path: &Path, exclusive: bool) -> io::Result<u64> {
        let (dir, name) = self.parent(path)?;
        if let Some(&ino) = self.dir(dir)?.live.get(&name) {
            if exclusive {
                return Err(os(EEXIST));
            }
            let f = self.file_mut(ino)?;
            f.data.clear();
            return Ok(ino);
        }
        let ino = self.new_node(Node::File(FileNode::default()));
        self.dir_mut(dir)?.live.insert(name, ino);
        Ok(ino)
    }

    fn mkdir(&mut self, path: &Path, exclusive: bool) -> io::Result<()> {
        let (dir, name) = self.parent(path)?;
        match self.dir(dir)?.live.get(&name) {
            Some(&ino) => {
                if exclusive {
                    Err(os(EEXIST))
                } else {
                    self.dir(ino).map(|_| ())
                }
            }
            None => {
                let ino = self.new_node(Node::Dir(DirNode::default()));
                self.dir_mut(dir)?.live.insert(name, ino);
                Ok(())
            }
        }
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let (fdir, fname) = self.parent(from)?;
        let ino = *self.dir(fdir)?.live.get(&fname).ok_or_else(|| os(ENOENT))?;
        let (tdir, tname) = self.parent(to)?;
        if fdir == tdir && fname == tname {
            return Ok(());
        }
        let moving_dir = matches!(self.nodes.get(&ino), Some(Node::Dir(_)));
        if let Some(&old) = self.dir(tdir)?.live.get(&tname) {
            match (self.nodes.get(&old), moving_dir) {
                (Some(Node::Dir(d)), true) if !d.live.is_empty() => return Err(os(ENOTEMPTY)),
                (Some(Node::Dir(_)), false) => return Err(os(EISDIR)),
                (Some(Node::File(_)), true) => return Err(os(ENOTDIR)),
                _ => {}
            }
        }
        self.dir_mut(fdir)?.live.remove(&fname);
        self.dir_mut(tdir)?.live.insert(tname, ino);
        Ok(())
    }

    fn write_at(&mut self, ino: u64, pos: u64, buf: &[u8]) -> io::Result<()> {
        let f = self.file_mut(ino)?;
        let pos = usize::try_from(pos).map_err(|_| os(EINVAL))?;
        let end = pos + buf.len();
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        f.data[pos..end].copy_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self, ino: u64, path: &Path) -> io::Result<()> {
        let (n, fault) = self.begin(OpKind::Sync, path)?;
        if fault.is_some() {
            // Whatever the fault: the sync fails, nothing is persisted, and the dirty data
            // is dropped from the writeback queue (a later sync does not persist it).
            let e = match fault {
                Some(FaultKind::Enospc) => os(ENOSPC),
                _ => os(EIO),
            };
            if let Ok(f) = self.file_mut(ino) {
                f.poisoned = true;
            }
            self.record(
                n,
                OpKind::Sync,
                path,
                None,
                Outcome::Failed(e.to_string()),
                true,
            );
            return Err(e);
        }
        let f = self.file_mut(ino)?;
        if !f.poisoned {
            f.synced.clone_from(&f.data);
        }
        self.record(n, OpKind::Sync, path, None, Outcome::Ok, false);
        Ok(())
    }

    /// The durable image as a fresh state.
    fn power_cut(&self, mode: PowerLoss) -> Self {
        let mut rng = match mode {
            PowerLoss::DropUnsynced => SplitMix64(0),
            PowerLoss::KeepTailPrefix { seed } | PowerLoss::KeepTailGarbage { seed } => {
                SplitMix64(seed)
            }
        };
        let mut out = Self::new();
        out.next_ino = self.next_ino;
        // Inodes reachable through durable entries, in a deterministic order.
        let mut todo = vec![ROOT];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(ino) = todo.pop() {
            if !seen.insert(ino) {
                continue;
            }
            let node = match self.nodes.get(&ino) {
                Some(Node::Dir(d)) => {
                    todo.extend(d.durable.values().rev().copied());
                    Node::Dir(DirNode {
                        live: d.durable.clone(),
                        durable: d.durable.clone(),
                    })
                }
                Some(Node::File(f)) => {
                    let data = torn(f, mode, &mut rng);
                    Node::File(FileNode {
                        data: data.clone(),
                        synced: data,
                        poisoned: false,
                        reserved: 0,
                    })
                }
                None => continue,
            };
            out.nodes.insert(ino, node);
        }
        out
    }
}

/// What a power cut leaves of one file.
fn torn(f: &FileNode, mode: PowerLoss, rng: &mut SplitMix64) -> Vec<u8> {
    let s = &f.synced;
    let tail = match f.data.strip_prefix(s.as_slice()) {
        Some(t) if !t.is_empty() && !f.poisoned => t,
        _ => return s.clone(),
    };
    let keep = match mode {
        PowerLoss::DropUnsynced => return s.clone(),
        PowerLoss::KeepTailPrefix { .. } | PowerLoss::KeepTailGarbage { .. } => {
            rng.below(tail.len() as u64 + 1) as usize
        }
    };
    let mut out = s.clone();
    out.extend_from_slice(&tail[..keep]);
    if matches!(mode, PowerLoss::KeepTailGarbage { .. }) && keep > 0 {
        let bad = (rng.below(512) as usize + 1).min(keep);
        let start = out.len() - bad;
        let zeros = rng.below(2) == 0;
        for b in &mut out[start..] {
            *b = if zeros { 0 } else { rng.next() as u8 };
        }
    }
    out
}

/// SplitMix64: a tiny deterministic generator for the torn-write modes.
#[derive(Clone, Copy, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

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

    /// Lose power now.
    pub fn crash_now(&self) {
        self.lock().crashed = true;
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

/// A file opened for writing on a [`SimFs`].
#[derive(Debug)]
struct SimFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    path: PathBuf,
    pos: u64,
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let (ino, pos) = (self.ino, self.pos);
        let path = self.path.clone();
        let mut st = self.lock();
        let (n, fault) = st.begin(OpKind::Write, &path)?;
        let (len, outcome, injected) = match fault {
            None => (buf.len(), Outcome::Ok, false),
            Some(FaultKind::ShortWrite) => {
                let k = (buf.len() / 2).max(1);
                (k, Outcome::Short(k), true)
            }
            Some(f) => {
                let e = os(if f == FaultKind::Enospc { ENOSPC } else { EIO });
                st.record(
                    n,
                    OpKind::Write,
                    &path,
                    None,
                    Outcome::Failed(e.to_string()),
                    true,
                );
                return Err(e);
            }
        };
        let r = st.write_at(ino, pos, &buf[..len]);
        let outcome = match &r {
            Ok(()) => outcome,
            Err(e) => Outcome::Failed(e.to_string()),
        };
        st.record(n, OpKind::Write, &path, None, outcome, injected);
        drop(st);
        r?;
        self.pos += len as u64;
        Ok(len)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.lock().crashed {
            return Err(os(EIO));
        }
        Ok(())
    }
}

impl Seek for SimFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let len = self.file_len()?;
        let new = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = new.ok_or_else(|| os(EINVAL))?;
        Ok(self.pos)
    }
}

impl DurableFile for SimFile {
    fn sync_data(&mut self) -> io::Result<()> {
        let (ino, path) = (self.ino, self.path.clone());
        self.lock().sync(ino, &path)
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn file_len(&mut self) -> io::Result<u64> {
        let ino = self.ino;
        let mut st = self.lock();
        if st.crashed {
            return Err(os(EIO));
        }
        Ok(st.file_mut(ino)?.data.len() as u64)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let (ino, path) = (self.ino, self.path.clone());
        let len = usize::try_from(len).map_err(|_| os(EINVAL))?;
        self.lock().op(OpKind::SetLen, &path, None, |st| {
            st.file_mut(ino)?.data.resize(len, 0);
            Ok(())
        })
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        let (ino, path) = (self.ino, self.path.clone());
        self.lock().op(OpKind::Preallocate, &path, None, |st| {
            let f = st.file_mut(ino)?;
            f.reserved = f.reserved.max(len);
            Ok(())
        })
    }
}

/// A file opened for reading on a [`SimFs`]: sees the volatile content as it is at each
/// read; fails once power is lost.
#[derive(Debug)]
struct SimReader {
    state: Arc<Mutex<State>>,
    ino: u64,
    pos: usize,
}

impl Read for SimReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.crashed {
            return Err(os(EIO));
        }
        let data = &st.file_mut(self.ino)?.data;
        let rest = data.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::fsio::replace_atomically;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn write(fs: &SimFs, path: &str, bytes: &[u8], sync: bool) {
        let mut f = fs.create(&p(path)).unwrap();
        f.write_all(bytes).unwrap();
        if sync {
            f.sync_data().unwrap();
        }
    }

    #[test]
    fn sim_unsynced_data_and_entries_are_lost() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        write(&fs, "/d/synced_no_dir", b"a", true);
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert!(!img.exists(&p("/d/synced_no_dir")), "dir never synced");

        fs.sync_dir(&p("/d")).unwrap();
        write(&fs, "/d/later", b"b", true);
        let mut f = fs.open_append(&p("/d/synced_no_dir")).unwrap();
        f.write_all(b"unsynced").unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/d/synced_no_dir")).unwrap(), b"a");
        assert!(!img.exists(&p("/d/later")));
        // The live image is untouched by a power-cut image.
        assert_eq!(fs.read(&p("/d/synced_no_dir")).unwrap(), b"aunsynced");
    }

    #[test]
    fn sim_rename_between_directories_is_durable_per_directory() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/a")).unwrap();
        fs.mkdir_durable(&p("/b")).unwrap();
        write(&fs, "/a/f", b"1", true);
        fs.sync_dir(&p("/a")).unwrap();
        fs.rename(&p("/a/f"), &p("/b/f")).unwrap();
        fs.sync_dir(&p("/a")).unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert!(
            !img.exists(&p("/a/f")) && !img.exists(&p("/b/f")),
            "in neither"
        );
        fs.sync_dir(&p("/b")).unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/b/f")).unwrap(), b"1");
    }

    #[test]
    fn sim_rename_is_undone_without_sync_dir() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        replace_atomically(&fs, &p("/d/m"), b"one").unwrap();
        write(&fs, "/d/m.tmp", b"two", true);
        fs.rename(&p("/d/m.tmp"), &p("/d/m")).unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/d/m")).unwrap(), b"one");
        fs.sync_dir(&p("/d")).unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/d/m")).unwrap(), b"two");
        assert_eq!(img.read_dir(&p("/d")).unwrap(), vec![p("/d/m")]);
        fs.remove_file(&p("/d/m")).unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/d/m")).unwrap(), b"two", "removal not synced");
    }

    #[test]
    fn sim_crash_after_n_operations() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        fs.crash_after(2);
        let mut f = fs.create(&p("/d/f")).unwrap(); // 1
        f.write_all(b"x").unwrap(); // 2
        assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(EIO)); // 3: power lost
        assert!(fs.is_crashed());
        assert!(fs.read(&p("/d/f")).is_err());
        assert!(fs.create(&p("/d/g")).is_err());
        assert_eq!(fs.ops(), 3);
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert!(!img.exists(&p("/d/f")));
        assert!(img.create(&p("/d/g")).is_ok());
    }

    #[test]
    fn sim_short_write_then_write_all_completes() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        fs.inject(OpKind::Write, 1, FaultKind::ShortWrite);
        let mut f = fs.create(&p("/d/f")).unwrap();
        assert_eq!(f.write(b"abcdef").unwrap(), 3);
        f.write_all(b"def").unwrap();
        assert_eq!(fs.read(&p("/d/f")).unwrap(), b"abcdef");
        assert_eq!(fs.faults_fired(), 1);
        let log = fs.log();
        assert!(log.iter().any(|r| r.outcome == Outcome::Short(3)));
    }

    #[test]
    fn sim_failed_fsync_poisons_the_file() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        fs.inject_on(OpKind::Sync, "/d/f", 1, FaultKind::FsyncFails);
        let mut f = fs.create(&p("/d/f")).unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        f.write_all(b"lost").unwrap();
        assert!(f.sync_data().is_err());
        // A retry "succeeds" but persists nothing: the kernel dropped the dirty pages.
        f.sync_data().unwrap();
        let img = fs.power_cut_image(PowerLoss::DropUnsynced);
        assert_eq!(img.read(&p("/d/f")).unwrap(), b"");
    }

    #[test]
    fn sim_enospc_and_eio_faults() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        fs.inject_on(OpKind::Write, "b", 2, FaultKind::Enospc);
        fs.inject(OpKind::Rename, 1, FaultKind::Eio);
        let mut a = fs.create(&p("/d/a")).unwrap();
        let mut b = fs.create(&p("/d/b")).unwrap();
        a.write_all(b"1").unwrap();
        b.write_all(b"1").unwrap();
        a.write_all(b"2").unwrap();
        let e = b.write_all(b"2").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(ENOSPC));
        assert_eq!(
            fs.rename(&p("/d/a"), &p("/d/c"))
                .unwrap_err()
                .raw_os_error(),
            Some(EIO)
        );
        assert!(fs.exists(&p("/d/a")));
    }

    #[test]
    fn sim_torn_tails_keep_a_prefix() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/d")).unwrap();
        let mut f = fs.create(&p("/d/f")).unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        f.write_all(b"synced|").unwrap();
        f.sync_data().unwrap();
        f.write_all(&[7u8; 4000]).unwrap();
        let mut lens = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let img = fs.power_cut_image(PowerLoss::KeepTailPrefix { seed });
            let got = img.read(&p("/d/f")).unwrap();
            assert!(got.starts_with(b"synced|"));
            assert!(got[7..].iter().all(|&b| b == 7));
            lens.insert(got.len());
            let img = fs.power_cut_image(PowerLoss::KeepTailGarbage { seed });
            let got = img.read(&p("/d/f")).unwrap();
            assert!(got.starts_with(b"synced|"));
        }
        assert!(lens.len() > 5, "{lens:?}");
    }

    #[test]
    fn sim_export_copies_the_tree() {
        let fs = SimFs::new();
        fs.mkdir_durable(&p("/data/ep")).unwrap();
        write(&fs, "/data/ep/x", b"xx", false);
        let dir = tempfile::tempdir().unwrap();
        fs.export_to(&p("/data"), dir.path()).unwrap();
        assert_eq!(std::fs::read(dir.path().join("ep/x")).unwrap(), b"xx");
    }
}
