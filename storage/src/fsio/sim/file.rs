//! Files opened on a [`SimFs`]: [`SimFile`] for writing (a [`DurableFile`]) and
//! [`SimReader`] for reading.

use super::*;

/// A file opened for writing on a [`SimFs`].
#[derive(Debug)]
pub(super) struct SimFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) ino: u64,
    pub(super) path: PathBuf,
    pub(super) pos: u64,
}

impl SimFile {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
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
pub(super) struct SimReader {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) ino: u64,
    pub(super) pos: usize,
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
