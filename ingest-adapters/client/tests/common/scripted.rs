//! A scripted FAKE wshardd for the protocol version 2 client tests: one connection; every
//! frame received is recorded and handed to a handler, whose replies are written back in
//! one write (so frames answered together arrive together). Its decoder knows every
//! frame type, so whatever the client sends is recorded.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::thread::JoinHandle;

use wshard_ingest_proto::{encode, Frame, FrameDecoder, ProtocolVersion};

pub struct Scripted {
    pub path: PathBuf,
    _dir: tempfile::TempDir,
    handle: JoinHandle<Vec<Frame>>,
}

impl Scripted {
    /// Serve one connection: `reply` gets each frame and returns the frames to answer.
    pub fn start(mut reply: impl FnMut(&Frame) -> Vec<Frame> + Send + 'static) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ingest.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let handle = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut dec = FrameDecoder::new(1 << 24).with_protocol_version(ProtocolVersion::NEWEST);
            let mut got = Vec::new();
            loop {
                let n = match stream.read(dec.buffer_mut()) {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => n,
                };
                dec.commit(n);
                while let Some(frame) = dec.next_frame().unwrap() {
                    let mut out = Vec::new();
                    for r in reply(&frame) {
                        encode(&r, &mut out).unwrap();
                    }
                    got.push(frame);
                    // The client may be gone already; that is its business.
                    let _ = stream.write_all(&out);
                }
            }
        });
        Self {
            path,
            _dir: dir,
            handle,
        }
    }

    /// Wait for the connection to end; every frame received, in order.
    pub fn join(self) -> Vec<Frame> {
        self.handle.join().unwrap()
    }
}
