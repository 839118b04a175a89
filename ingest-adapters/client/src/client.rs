//! [`Client`]: one connection to `wshardd`.

use std::io::{self, IoSlice, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::socket::{sendmsg, MsgFlags};
use wshard_ingest_proto::{
    encode, Frame, FrameType, OpenEpisode, ProtocolVersion, RingPolicy, SchemaLimits,
};

use crate::episode::EpisodeWriter;
use crate::error::{ClientError, Result};
use crate::reader::{self, end_error, ServerInfo, Shared, State};
use crate::shm;

/// How an episode's timesteps travel to the server (chosen at
/// [`Client::open_episode_with`]); control frames always use the socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// `TIMESTEP_BATCH` frames on the socket.
    #[default]
    Socket,
    /// A shared-memory ring (docs/PROTOCOL.md, "Shared-memory transport"): a sealed memfd
    /// of `slots` slots of `slot_bytes` bytes, one batch per slot.
    Shm {
        /// Bytes per slot (a multiple of 64, at least 64 + one timestep record, at most
        /// the server's `max_frame_bytes`); 0 = from the schema: room for
        /// `max(1, 256 KiB / record)` timesteps, rounded up to 64.
        slot_bytes: u32,
        /// Slots in the ring (2..=65536); 0 = 64.
        slots: u32,
        /// What a push does when the ring is full: wait for the server
        /// ([`RingPolicy::Block`], nothing is ever lost), or drop timesteps and carry on
        /// ([`RingPolicy::DropNewest`]: the batch being sent; [`RingPolicy::DropOldest`]:
        /// the oldest batch the server has not taken yet). Dropped timesteps keep their
        /// seqs (the server records the gaps); see [`EpisodeWriter::dropped_steps`].
        policy: RingPolicy,
    },
}

impl Transport {
    /// The shared-memory ring with the default geometry and [`RingPolicy::Block`].
    #[must_use]
    pub const fn shm() -> Self {
        Self::Shm {
            slot_bytes: 0,
            slots: 0,
            policy: RingPolicy::Block,
        }
    }

    /// The shared-memory ring with the default geometry and `policy`.
    #[must_use]
    pub const fn shm_with(policy: RingPolicy) -> Self {
        Self::Shm {
            slot_bytes: 0,
            slots: 0,
            policy,
        }
    }
}

/// Tuning of a [`Client`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOptions {
    /// Send the pending batch once its frame reaches this many bytes (default 256 KiB).
    /// Batches never exceed the server's `max_frame_bytes`.
    pub batch_bytes: usize,
    /// Send the pending batch once it holds this many steps (default 4096).
    pub batch_steps: usize,
    /// Send the pending batch on the next `push` once its oldest step has waited this
    /// long (default 10 ms), so slow loops do not sit on data; `None` = sizes only.
    pub batch_delay: Option<Duration>,
    /// How long to wait for the server: handshake, `OPEN`, `CLOSE`, `flush`,
    /// `wait_durable`, and each socket write (default 60 s); `None` = forever.
    pub timeout: Option<Duration>,
    /// The protocol version `HELLO` asks for (default [`ProtocolVersion::V1`], what every
    /// client before version 2 speaks). [`ProtocolVersion::V2`] is needed for multi-stream
    /// episodes and events ([`Client::open_multistream_episode`], [`Client::join_stream`],
    /// `send_event`); the connection speaks what `HELLO_OK` answers
    /// ([`Client::protocol_version`]).
    pub protocol_version: ProtocolVersion,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            batch_bytes: 256 * 1024,
            batch_steps: 4096,
            batch_delay: Some(Duration::from_millis(10)),
            timeout: Some(Duration::from_secs(60)),
            protocol_version: ProtocolVersion::V1,
        }
    }
}

/// A blocking connection to `wshardd` speaking protocol version 1, or 2 when
/// [`ClientOptions::protocol_version`] asks for it.
///
/// A background thread reads the server's frames (`DURABLE`, `ERROR`, `ACCEPTED`) as
/// they come and keeps the latest state; calls on this side only write and, when they
/// must, wait on that state. An `ERROR` from the server is returned by the next call as
/// [`ClientError::Server`].
///
/// SIGPIPE: Rust programs ignore it by default, so a write to a closed connection is an
/// error, not a signal. A non-Rust host process embedding this client must do the same.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    info: ServerInfo,
    /// What `HELLO_OK` answered.
    version: ProtocolVersion,
    options: ClientOptions,
    /// Scratch buffer for control frames.
    scratch: Vec<u8>,
    /// A write failed: the stream may hold half a frame, nothing more can be sent.
    broken: bool,
}

impl Client {
    /// Connect to the socket at `path`, send `HELLO` (protocol version 1) and wait for
    /// `HELLO_OK`.
    ///
    /// # Errors
    /// [`ClientError::Io`] when the socket cannot be reached; [`ClientError::Server`] when
    /// the server refuses the handshake (e.g. `OVERLOADED`); [`ClientError::Unexpected`]
    /// when it answers another protocol version; [`ClientError::Timeout`].
    pub fn connect(path: impl AsRef<Path>, client_name: &str) -> Result<Self> {
        Self::connect_with(path, client_name, ClientOptions::default())
    }

    /// [`Client::connect`] asking for protocol version 2 (multi-stream episodes, events),
    /// with the default options otherwise.
    ///
    /// # Errors
    /// As [`Client::connect`]; a server that speaks only version 1 refuses the `HELLO`
    /// (`UNSUPPORTED_VERSION`).
    pub fn connect_v2(path: impl AsRef<Path>, client_name: &str) -> Result<Self> {
        let options = ClientOptions {
            protocol_version: ProtocolVersion::V2,
            ..ClientOptions::default()
        };
        Self::connect_with(path, client_name, options)
    }

    /// [`Client::connect`] with explicit options.
    ///
    /// # Errors
    /// As [`Client::connect`].
    pub fn connect_with(
        path: impl AsRef<Path>,
        client_name: &str,
        options: ClientOptions,
    ) -> Result<Self> {
        let stream = UnixStream::connect(path)?;
        stream.set_write_timeout(options.timeout)?;
        let read_half = stream.try_clone()?;
        let shared = Arc::new(Shared::default());
        let reader = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("wshard-client-reader".into())
                .spawn(move || reader::run(read_half, shared))?
        };
        let mut client = Self {
            stream,
            shared,
            reader: Some(reader),
            info: ServerInfo {
                version: 0,
                server_name: String::new(),
                max_frame_bytes: 0,
            },
            version: ProtocolVersion::V1,
            options,
            scratch: Vec::new(),
            broken: false,
        };
        let asked = client.options.protocol_version;
        client.send(&Frame::Hello {
            version: asked.code(),
            client_name: client_name.to_owned(),
        })?;
        let info = client
            .shared
            .wait("HELLO_OK", client.options.timeout, |st| st.hello.clone())?;
        // The server answers the version the connection speaks: at most the one asked for.
        client.version = ProtocolVersion::from_code(info.version)
            .filter(|v| *v <= asked)
            .ok_or_else(|| {
                ClientError::Unexpected(format!(
                    "HELLO_OK protocol_version {} (this client asked for {asked})",
                    info.version
                ))
            })?;
        client.info = info;
        Ok(client)
    }

    /// The protocol version the connection speaks (what `HELLO_OK` answered).
    #[must_use]
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// Fail client-side, before anything is sent, when the connection does not speak the
    /// version that defines `frame` (the server would close the connection).
    pub(crate) fn require_version(&self, frame: FrameType) -> Result<()> {
        let needs = ProtocolVersion::introducing(frame);
        if self.version >= needs {
            Ok(())
        } else {
            Err(ClientError::NeedsVersion {
                frame: frame.name(),
                needs: needs.code(),
                speaks: self.version.code(),
            })
        }
    }

    /// The limits a schema is checked against before it is sent: what any server accepts,
    /// with this server's `max_frame_bytes` (the server checks its own limits on channels
    /// and ids).
    pub(crate) fn schema_limits(&self) -> SchemaLimits {
        SchemaLimits {
            max_frame_bytes: self.info.max_frame_bytes,
            ..SchemaLimits::default()
        }
    }

    /// Send `frame` and wait for its `ACCEPTED` (`what` names it in a timeout error): until
    /// the counter `accepted` of the reader's state has moved. Returns the state's value
    /// `answer` read then.
    pub(crate) fn request<T>(
        &mut self,
        frame: &Frame,
        what: &'static str,
        accepted: fn(&State) -> u64,
        answer: fn(&State) -> T,
    ) -> Result<T> {
        let before = accepted(&self.shared.lock());
        self.send(frame)?;
        let timeout = self.options.timeout;
        self.shared.wait(what, timeout, |st| {
            (accepted(st) > before).then(|| answer(st))
        })
    }

    /// What the server announced in `HELLO_OK`.
    #[must_use]
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// The options in use.
    #[must_use]
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Open an episode: check the schema locally, send `OPEN`, wait for `ACCEPTED`.
    ///
    /// # Errors
    /// [`ClientError::Schema`] when the schema breaks the protocol's rules (nothing sent);
    /// [`ClientError::Server`] when the server refuses it (`BAD_SCHEMA`, `EPISODE_EXISTS`,
    /// ...) or for an earlier unreported `ERROR`; [`ClientError::Closed`],
    /// [`ClientError::Io`], [`ClientError::Timeout`].
    pub fn open_episode(&mut self, spec: OpenEpisode) -> Result<EpisodeWriter<'_>> {
        self.open_episode_with(spec, Transport::Socket)
    }

    /// [`Client::open_episode`] with the timesteps' transport chosen. With
    /// [`Transport::Shm`] the ring is created and attached (`SHM_ATTACH`) right after
    /// `ACCEPTED{OPEN}`; if that fails the episode is closed `aborted` and the error
    /// returned.
    ///
    /// # Errors
    /// As [`Client::open_episode`]; [`ClientError::Shm`] when the ring cannot be set up
    /// here, [`ClientError::Server`] (`BAD_SHM`) when the server refuses it.
    pub fn open_episode_with(
        &mut self,
        spec: OpenEpisode,
        transport: Transport,
    ) -> Result<EpisodeWriter<'_>> {
        self.check_usable()?;
        spec.validate(&self.schema_limits())
            .map_err(ClientError::Schema)?;
        let frame = Frame::Open(spec);
        self.request(&frame, "ACCEPTED{OPEN}", |st| st.opens, |_| ())?;
        let Frame::Open(spec) = frame else {
            return Err(ClientError::Unexpected("OPEN frame changed".into()));
        };
        self.writer(spec, transport)
    }

    /// The writer of an episode or stream the server just accepted, with its ring attached
    /// when `transport` asks for one (if that fails, the writer's drop closes it
    /// `aborted` and the error is returned).
    pub(crate) fn writer(
        &mut self,
        spec: OpenEpisode,
        transport: Transport,
    ) -> Result<EpisodeWriter<'_>> {
        let mut writer = EpisodeWriter::new(self, spec)?;
        if let Transport::Shm {
            slot_bytes,
            slots,
            policy,
        } = transport
        {
            // On error the writer's Drop closes the episode as `aborted`.
            writer.attach_shm(slot_bytes, slots, policy)?;
        }
        Ok(writer)
    }

    /// Fail fast on a broken connection or a pending server `ERROR`.
    pub(crate) fn check_usable(&mut self) -> Result<()> {
        if let Some(e) = self.shared.take_error() {
            return Err(e);
        }
        if self.broken {
            return Err(ClientError::Closed);
        }
        if self.shared.ended.load(Ordering::Acquire) {
            if let Some(end) = &self.shared.lock().ended {
                return Err(end_error(end));
            }
        }
        Ok(())
    }

    /// Encode and send one frame.
    pub(crate) fn send(&mut self, frame: &Frame) -> Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let result = encode(frame, &mut buf)
            .map_err(ClientError::from)
            .and_then(|()| self.write_all(&buf));
        self.scratch = buf;
        result
    }

    /// Encode and send one frame with `fds` attached (`SCM_RIGHTS`).
    pub(crate) fn send_with_fds(
        &mut self,
        frame: &Frame,
        fds: &[std::os::fd::RawFd],
    ) -> Result<()> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        let buf = wshard_ingest_proto::encode_to_vec(frame)?;
        match shm::send_with_fds(&mut self.stream, &buf, fds) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.broken = true;
                let _ = self.stream.shutdown(std::net::Shutdown::Write);
                self.shared.wait_end(Duration::from_secs(1));
                Err(self.shared.take_error().unwrap_or(ClientError::Io(e)))
            }
        }
    }

    /// Write already-encoded frames.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        match self.stream.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.write_failed(e)),
        }
    }

    /// Write `parts` back to back, as if concatenated (one frame, or several, whose pieces
    /// live in different buffers), with vectored writes and no copy; `parts` is consumed
    /// from the front as the kernel takes bytes.
    pub(crate) fn write_all_parts(&mut self, parts: &mut [&[u8]]) -> Result<()> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        match send_all_parts(&self.stream, parts) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.write_failed(e)),
        }
    }

    /// A write failed: the stream may hold part of a frame, so the connection is unusable.
    fn write_failed(&mut self, e: io::Error) -> ClientError {
        self.broken = true;
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        // The server usually said why before closing: report that.
        self.shared.wait_end(Duration::from_secs(1));
        self.shared.take_error().unwrap_or(ClientError::Io(e))
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

/// Most slices one `sendmsg` takes (Linux's `UIO_MAXIOV`); longer lists take several calls.
const MAX_IOV: usize = 1024;

/// Send every byte of `parts`, in order, with `sendmsg(MSG_NOSIGNAL)`: vectored like
/// `writev`, and like std's `UnixStream::write` (which `write_all` uses) a closed peer is
/// an `EPIPE` error, never a `SIGPIPE`.
fn send_all_parts(stream: &UnixStream, parts: &mut [&[u8]]) -> io::Result<()> {
    let fd = stream.as_raw_fd();
    write_all_parts_with(parts, |iov| {
        sendmsg::<()>(fd, iov, &[], MsgFlags::MSG_NOSIGNAL, None).map_err(io::Error::from)
    })
}

/// Write every byte of `parts`, in order, with `write_vectored` (up to [`MAX_IOV`] slices a
/// call): short writes (the socket's write timeout ended with part of the data taken, a
/// signal) continue where they stopped, `Interrupted` retries, a write of 0 is `WriteZero`.
fn write_all_parts_with(
    mut parts: &mut [&[u8]],
    mut write_vectored: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
) -> io::Result<()> {
    advance(&mut parts, 0);
    let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(parts.len().min(MAX_IOV));
    while !parts.is_empty() {
        iov.clear();
        iov.extend(parts.iter().take(MAX_IOV).map(|p| IoSlice::new(p)));
        match write_vectored(&iov) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => advance(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Drop the first `n` bytes of `parts`: the slices they cover entirely (and empty ones),
/// then the front of the next. What `IoSlice::advance_slices` does, which needs Rust 1.81
/// (this workspace's `rust-version` is 1.80).
fn advance<'a>(parts: &mut &mut [&'a [u8]], mut n: usize) {
    let mut whole = 0;
    for p in parts.iter() {
        if p.len() > n {
            break;
        }
        n -= p.len();
        whole += 1;
    }
    let rest = std::mem::take(parts);
    *parts = rest.get_mut(whole..).unwrap_or_default();
    if let Some(first) = parts.first_mut() {
        let s: &'a [u8] = first;
        *first = s.get(n..).unwrap_or_default();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `write_all_parts_with` on `parts` with a writer that takes at most `max` bytes a
    /// call and fails with `Interrupted` every third call; returns the bytes and the calls.
    fn gather(parts: &[&[u8]], max: usize) -> (Vec<u8>, usize) {
        let mut parts = parts.to_vec();
        let mut out = Vec::new();
        let mut calls = 0;
        write_all_parts_with(&mut parts, |iov| {
            calls += 1;
            assert!(iov.len() <= MAX_IOV);
            assert!(
                !iov.first().is_some_and(|s| s.is_empty()),
                "leading empty slice"
            );
            if calls % 3 == 0 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut left = max;
            for s in iov {
                let n = s.len().min(left);
                out.extend_from_slice(&s[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Ok(max - left)
        })
        .unwrap();
        (out, calls)
    }

    #[test]
    fn proto_write_all_parts_survives_short_and_interrupted_writes() {
        let a: Vec<u8> = (0..100u8).collect();
        let b: Vec<u8> = (100..=255u8).collect();
        let parts: [&[u8]; 6] = [&[], &a, &[], &[], &b, &[7]];
        let want = [&a[..], &b[..], &[7]].concat();
        for max in [1, 2, 3, 7, 99, 100, 101, 156, 256, 257, 1000] {
            let (got, _) = gather(&parts, max);
            assert_eq!(got, want, "max {max}");
        }
        let (got, calls) = gather(&[&[], &[]], 5);
        assert!(got.is_empty());
        assert_eq!(calls, 0, "nothing to write: no call");
    }

    #[test]
    fn proto_write_all_parts_more_slices_than_one_call_takes() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let parts: Vec<&[u8]> = bytes.chunks(1).collect();
        let (got, calls) = gather(&parts, usize::MAX);
        assert_eq!(got, bytes);
        assert_eq!(calls, 4, "1024 + 1024 + (Interrupted) + 952 slices");
    }

    #[test]
    fn proto_write_all_parts_write_zero_and_errors() {
        let mut parts: [&[u8]; 1] = [b"abc"];
        let e = write_all_parts_with(&mut parts, |_| Ok(0)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
        let mut parts: [&[u8]; 1] = [b"abc"];
        let e = write_all_parts_with(&mut parts, |_| Err(io::ErrorKind::BrokenPipe.into()))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn proto_advance_drops_whole_then_partial_slices() {
        let (a, b, c): (&[u8], &[u8], &[u8]) = (b"abc", b"", b"defg");
        let mut store = [a, b, c];
        let mut parts: &mut [&[u8]] = &mut store;
        advance(&mut parts, 3);
        assert_eq!(
            parts,
            [b"defg" as &[u8]],
            "a whole slice and the empty one after it"
        );
        advance(&mut parts, 1);
        assert_eq!(parts, [b"efg" as &[u8]]);
        advance(&mut parts, 3);
        assert!(parts.is_empty());
        advance(&mut parts, 0);
        assert!(parts.is_empty());
    }
}
