//! [`Client`]: one connection to `wshardd`: the handshake, sending frames, waiting for the
//! answers the reader thread collects. Episodes are opened on it by `open_episode` and
//! `multistream`, which build on this module.

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use wshard_ingest_proto::{encode, Frame, FrameType, ProtocolVersion, SchemaLimits};

use crate::error::{ClientError, Result};
use crate::reader::{self, end_error, ServerInfo, Shared, State};
use crate::socket_write::{send_all_parts, send_with_fds};

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
        match send_with_fds(&mut self.stream, &buf, fds) {
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

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
    }
}
