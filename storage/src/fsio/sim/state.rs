//! The simulated file system's state: the node tree with its volatile and durable images,
//! the operation counter, faults and the log, and the torn-write model of a power cut.

use super::*;

/// A fault waiting for its occurrence.
#[derive(Clone, Debug)]
pub(super) struct Fault {
    pub(super) op: OpKind,
    pub(super) path_contains: Option<String>,
    pub(super) nth: u64,
    pub(super) seen: u64,
    pub(super) kind: FaultKind,
    pub(super) fired: bool,
}

#[derive(Clone, Debug, Default)]
pub(super) struct FileNode {
    pub(super) data: Vec<u8>,
    pub(super) synced: Vec<u8>,
    pub(super) poisoned: bool,
    /// The largest length preallocated (bookkeeping only: content and size never change).
    pub(super) reserved: u64,
}

#[derive(Clone, Debug, Default)]
pub(super) struct DirNode {
    pub(super) live: BTreeMap<OsString, u64>,
    pub(super) durable: BTreeMap<OsString, u64>,
}

#[derive(Clone, Debug)]
pub(super) enum Node {
    File(FileNode),
    Dir(DirNode),
}

pub(super) const ROOT: u64 = 0;

#[derive(Debug)]
pub(super) struct State {
    pub(super) nodes: HashMap<u64, Node>,
    pub(super) next_ino: u64,
    pub(super) ops: u64,
    /// Power is lost at the operation with this number.
    pub(super) crash_at: Option<u64>,
    pub(super) crashed: bool,
    pub(super) faults: Vec<Fault>,
    pub(super) log: Vec<OpRecord>,
}

impl State {
    pub(super) fn new() -> Self {
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

    pub(super) fn names(path: &Path) -> io::Result<Vec<OsString>> {
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

    pub(super) fn dir(&self, ino: u64) -> io::Result<&DirNode> {
        match self.nodes.get(&ino) {
            Some(Node::Dir(d)) => Ok(d),
            Some(Node::File(_)) => Err(os(ENOTDIR)),
            None => Err(os(ENOENT)),
        }
    }

    pub(super) fn dir_mut(&mut self, ino: u64) -> io::Result<&mut DirNode> {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(d)) => Ok(d),
            Some(Node::File(_)) => Err(os(ENOTDIR)),
            None => Err(os(ENOENT)),
        }
    }

    pub(super) fn file_mut(&mut self, ino: u64) -> io::Result<&mut FileNode> {
        match self.nodes.get_mut(&ino) {
            Some(Node::File(f)) => Ok(f),
            Some(Node::Dir(_)) => Err(os(EISDIR)),
            None => Err(os(ENOENT)),
        }
    }

    pub(super) fn resolve(&self, path: &Path) -> io::Result<u64> {
        let mut ino = ROOT;
        for n in Self::names(path)? {
            ino = *self.dir(ino)?.live.get(&n).ok_or_else(|| os(ENOENT))?;
        }
        Ok(ino)
    }

    /// The parent directory's inode and the last name.
    pub(super) fn parent(&self, path: &Path) -> io::Result<(u64, OsString)> {
        let mut names = Self::names(path)?;
        let last = names.pop().ok_or_else(|| os(EINVAL))?;
        let mut ino = ROOT;
        for n in names {
            ino = *self.dir(ino)?.live.get(&n).ok_or_else(|| os(ENOENT))?;
        }
        self.dir(ino)?;
        Ok((ino, last))
    }

    pub(super) fn new_node(&mut self, node: Node) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(ino, node);
        ino
    }

    /// Start a call: count it if it is an operation, lose power if its number is reached,
    /// and find the injected fault (if any) that fires on it. `Err` when the call must fail
    /// without doing anything.
    pub(super) fn begin(
        &mut self,
        kind: OpKind,
        path: &Path,
    ) -> Result<(u64, Option<FaultKind>), io::Error> {
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

    pub(super) fn record(
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
    pub(super) fn op<T>(
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

    pub(super) fn create_file(&mut self, path: &Path, exclusive: bool) -> io::Result<u64> {
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

    pub(super) fn mkdir(&mut self, path: &Path, exclusive: bool) -> io::Result<()> {
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

    pub(super) fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
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

    pub(super) fn write_at(&mut self, ino: u64, pos: u64, buf: &[u8]) -> io::Result<()> {
        let f = self.file_mut(ino)?;
        let pos = usize::try_from(pos).map_err(|_| os(EINVAL))?;
        let end = pos + buf.len();
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        f.data[pos..end].copy_from_slice(buf);
        Ok(())
    }

    pub(super) fn sync(&mut self, ino: u64, path: &Path) -> io::Result<()> {
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
    pub(super) fn power_cut(&self, mode: PowerLoss) -> Self {
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
pub(super) fn torn(f: &FileNode, mode: PowerLoss, rng: &mut SplitMix64) -> Vec<u8> {
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
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}
