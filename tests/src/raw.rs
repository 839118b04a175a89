//! [`RawConn`]: a bare Unix socket speaking frames through `wshard-ingest-proto`, with no
//! client-side checks, for sending the daemon everything a real client never would.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use wshard_ingest_proto::{
    encode, AcceptedWhat, ChannelSpec, ErrorCode, Frame, FrameDecoder, OpenEpisode,
    PROTOCOL_VERSION,
};

use crate::data;

/// What the next read produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Recv {
    Frame(Frame),
    /// The daemon closed the connection (EOF, or a reset after it dropped unread bytes).
    Closed,
    /// Nothing within the timeout.
    Timeout,
}

/// A raw protocol connection.
#[derive(Debug)]
pub struct RawConn {
    stream: UnixStream,
    dec: FrameDecoder,
    closed: bool,
    /// Highest `DURABLE.up_to_seq` received (checked never to decrease).
    durable: u64,
}

impl RawConn {
    /// Connect, without sending anything.
    #[must_use]
    pub fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
        stream
            .set_write_timeout(Some(crate::TIMEOUT))
            .expect("set_write_timeout");
        Self {
            stream,
            dec: FrameDecoder::new(1 << 20),
            closed: false,
            durable: 0,
        }
    }

    /// Connect and complete the handshake; returns `HELLO_OK.max_frame_bytes`.
    #[must_use]
    pub fn hello(socket: &Path) -> Self {
        let mut c = Self::connect(socket);
        c.send(&Frame::Hello {
            version: PROTOCOL_VERSION,
            client_name: "wshard-e2e/raw".into(),
        });
        match c.recv_skip_durable() {
            Recv::Frame(Frame::HelloOk { version, .. }) => assert_eq!(version, PROTOCOL_VERSION),
            other => panic!("expected HELLO_OK, got {other:?}"),
        }
        c
    }

    /// Connect and complete the handshake asking for protocol `version`; the decoder then
    /// speaks the version `HELLO_OK` answers with, which is returned beside.
    #[must_use]
    pub fn hello_version(socket: &Path, version: u16) -> (Self, u16) {
        let mut c = Self::connect(socket);
        c.send(&Frame::Hello {
            version,
            client_name: "wshard-e2e/raw".into(),
        });
        let spoken = match c.recv_skip_durable() {
            Recv::Frame(Frame::HelloOk { version, .. }) => version,
            other => panic!("expected HELLO_OK, got {other:?}"),
        };
        if let Some(v) = wshard_ingest_proto::ProtocolVersion::from_code(spoken) {
            c.dec.set_protocol_version(v);
        }
        (c, spoken)
    }

    /// Write raw bytes. Errors (the daemon may have closed already) are returned.
    ///
    /// # Errors
    /// The socket error.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Encode and send a frame with `fds` attached to its first byte (`SCM_RIGHTS`), as
    /// `SHM_ATTACH` travels; panics if the write fails.
    pub fn send_with_fds(&mut self, frame: &Frame, fds: &[std::os::fd::RawFd]) {
        use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
        use std::os::fd::AsRawFd;
        let mut buf = Vec::new();
        encode(frame, &mut buf).expect("encode");
        let cmsg = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &cmsg };
        let n = sendmsg::<()>(
            self.stream.as_raw_fd(),
            &[std::io::IoSlice::new(&buf)],
            cmsgs,
            MsgFlags::empty(),
            None,
        )
        .unwrap_or_else(|e| {
            panic!(
                "sendmsg {:?} with {} fds: {e}",
                frame.frame_type(),
                fds.len()
            )
        });
        self.send_bytes(&buf[n..])
            .unwrap_or_else(|e| panic!("sending {:?}: {e}", frame.frame_type()));
    }

    /// Encode and send a frame; panics if the write fails.
    pub fn send(&mut self, frame: &Frame) {
        let mut buf = Vec::new();
        encode(frame, &mut buf).expect("encode");
        self.send_bytes(&buf)
            .unwrap_or_else(|e| panic!("sending {:?}: {e}", frame.frame_type()));
    }

    /// A second handle on the socket, e.g. for writing from another thread while this one
    /// does not read.
    #[must_use]
    pub fn stream_clone(&self) -> UnixStream {
        self.stream.try_clone().expect("cannot clone the socket")
    }

    /// Shut down the write half (the daemon sees EOF).
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }

    /// The next frame from the daemon, waiting at most `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Recv {
        let deadline = Instant::now() + timeout;
        loop {
            match self.dec.next_frame() {
                Ok(Some(Frame::Durable { up_to_seq })) => {
                    assert!(
                        up_to_seq >= self.durable,
                        "DURABLE went backwards: {up_to_seq} after {}",
                        self.durable
                    );
                    self.durable = up_to_seq;
                    return Recv::Frame(Frame::Durable { up_to_seq });
                }
                Ok(Some(f)) => return Recv::Frame(f),
                Ok(None) => {}
                Err(e) => panic!("the daemon sent bytes that do not parse: {e}"),
            }
            if self.closed {
                return Recv::Closed;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Recv::Timeout;
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("set_read_timeout");
            match self.stream.read(self.dec.buffer_mut()) {
                Ok(0) => self.closed = true,
                Ok(n) => self.dec.commit(n),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    self.closed = true;
                }
                Err(e) => panic!("reading from the daemon: {e}"),
            }
        }
    }

    /// The next frame that is not a `DURABLE` (10 s).
    pub fn recv_skip_durable(&mut self) -> Recv {
        loop {
            match self.recv(crate::TIMEOUT) {
                Recv::Frame(Frame::Durable { .. }) => {}
                other => return other,
            }
        }
    }

    /// Expect an `ERROR` with `code` (skipping `DURABLE`s); returns its message.
    pub fn expect_error(&mut self, code: ErrorCode) -> String {
        match self.recv_skip_durable() {
            Recv::Frame(Frame::Error { code: got, message }) => {
                assert_eq!(got, code, "ERROR {got} (expected {code}): {message}");
                message
            }
            other => panic!("expected ERROR {code}, got {other:?}"),
        }
    }

    /// Expect the daemon to close the connection (within 10 s) with nothing but `DURABLE`s
    /// before.
    pub fn expect_closed(&mut self) {
        match self.recv_skip_durable() {
            Recv::Closed => {}
            other => panic!("expected the daemon to close the connection, got {other:?}"),
        }
    }

    /// Expect `ACCEPTED{what}` (skipping `DURABLE`s); returns its `up_to_seq`.
    pub fn expect_accepted(&mut self, what: AcceptedWhat) -> u64 {
        match self.recv_skip_durable() {
            Recv::Frame(Frame::Accepted { what: w, up_to_seq }) if w == what => up_to_seq,
            other => panic!("expected ACCEPTED{{{what:?}}}, got {other:?}"),
        }
    }

    /// Expect nothing at all for `quiet`: the connection stays open and silent.
    pub fn expect_silence(&mut self, quiet: Duration) {
        match self.recv(quiet) {
            Recv::Timeout => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// Send `OPEN` and expect `ACCEPTED{OPEN}`.
    pub fn open(&mut self, spec: &OpenEpisode) {
        self.durable = 0;
        self.send(&Frame::Open(spec.clone()));
        assert_eq!(self.expect_accepted(AcceptedWhat::Open), 0);
    }

    /// Send generator timesteps `seqs` as single `TIMESTEP` frames.
    pub fn timesteps(&mut self, channels: &[ChannelSpec], seqs: std::ops::Range<u64>) {
        for seq in seqs {
            self.send(&timestep_frame(seq, channels));
        }
    }

    /// Send `FLUSH` and wait for a `DURABLE` with `up_to_seq >= n`; returns it.
    pub fn flush_until(&mut self, n: u64) -> u64 {
        self.send(&Frame::Flush);
        let deadline = Instant::now() + crate::TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left) {
                Recv::Frame(Frame::Durable { up_to_seq }) if up_to_seq >= n => return up_to_seq,
                Recv::Frame(Frame::Durable { .. }) => {}
                other => panic!("expected DURABLE >= {n}, got {other:?}"),
            }
        }
    }

    /// Highest `DURABLE.up_to_seq` received so far.
    #[must_use]
    pub fn durable(&self) -> u64 {
        self.durable
    }

    /// Send `CLOSE{outcome}`; expect `ACCEPTED{CLOSE, n}`, with every timestep covered by a
    /// `DURABLE` before it.
    pub fn close(&mut self, outcome: wshard_ingest_proto::Outcome, n: u64) {
        self.send(&Frame::Close { outcome });
        assert_eq!(self.expect_accepted(AcceptedWhat::Close), n);
        assert_eq!(self.durable, n, "DURABLE before ACCEPTED{{CLOSE}}");
        self.durable = 0; // the next episode starts over
    }
}

/// The bytes of a frame of type `frame_type` with `payload`, however wrong they are.
#[must_use]
pub fn raw_frame(frame_type: u8, payload: &[u8]) -> Vec<u8> {
    let body = u32::try_from(payload.len() + 1).expect("frame body fits u32");
    let mut out = body.to_le_bytes().to_vec();
    out.push(frame_type);
    out.extend_from_slice(payload);
    out
}

/// A `TIMESTEP` frame of generator timestep `seq`.
#[must_use]
pub fn timestep_frame(seq: u64, channels: &[ChannelSpec]) -> Frame {
    Frame::Timestep(wshard_ingest_proto::Timestep {
        seq,
        t_ns: data::t_ns(seq),
        reward: data::reward(seq),
        done: data::done(seq),
        payload: data::packed_payload(seq, channels),
    })
}
