//! The ingest protocol decoder (`wshard_ingest_proto`), fed arbitrary bytes.
//!
//! Input: `limit_sel u8 | split_seed u8 | stream...`. `limit_sel` picks `max_frame_bytes`
//! (tiny to `u32::MAX`); `split_seed` drives the sizes (1 byte up to 8 KiB) in which the
//! stream reaches a `FrameDecoder`, alternately through `feed` and `buffer_mut`/`commit`,
//! with `next_frame` drained after every piece. Bit 1 of `split_seed` turns on direct
//! batches (records received straight into the batch's buffer, from a small threshold up),
//! with stale buffers of arbitrary length lent to the decoder before every piece.
//!
//! - Nothing panics.
//! - The decoder yields exactly what a one-pass reference built on `check` and `parse` yields
//!   for the whole stream (same frames, same errors, in order), however the bytes were split:
//!   `check()` agrees with `next_frame`. After a fatal error it repeats that error.
//! - Every parsed frame encodes, to the same length as the bytes it came from, and parses
//!   back to the same frame (its encoding is then stable).
//! - Every error maps to an `ERROR` frame that encodes.
//! - `TimestepBatch::steps` / `validate` with arbitrary step sizes never panic; when they
//!   succeed the steps are `count` consecutive seqs of exactly that size.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wshard_ingest_proto::{
    check, encode_to_vec, parse, Frame, FrameDecoder, FrameStatus, ProtoError, ProtocolVersion,
    SchemaLimits, TimestepBatch, DEFAULT_MAX_EVENT_BYTES, RECORD_HEADER_BYTES,
};

/// A `Result` in a comparable form: `Debug` text (NaN rewards compare equal to themselves).
fn key(r: &Result<Frame, ProtoError>) -> String {
    format!("{r:?}")
}

fn reference(stream: &[u8], max: u32) -> (Vec<Result<Frame, ProtoError>>, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        match check(&stream[pos..], max) {
            Ok(FrameStatus::Complete { len }) => {
                assert!(len >= 5 && pos + len <= stream.len());
                let r = parse(&stream[pos..pos + len]);
                if let Err(e) = &r {
                    assert!(!e.is_fatal(), "check passed but parse is fatal: {e}");
                }
                if let Ok(f) = &r {
                    round_trip(f, len);
                }
                out.push(r);
                pos += len;
            }
            Ok(FrameStatus::Incomplete { need }) => {
                assert!(need > stream.len() - pos);
                return (out, pos);
            }
            Err(e) => {
                assert!(e.is_fatal(), "check errors are fatal: {e}");
                out.push(Err(e));
                return (out, stream.len());
            }
        }
    }
}

fn round_trip(f: &Frame, len: usize) {
    let wire = encode_to_vec(f).expect("a parsed frame must encode");
    // Parsing canonicalises values (e.g. a codec level for a codec without levels), never
    // the layout.
    assert_eq!(wire.len(), len, "re-encoding changed the frame length");
    assert_eq!(check(&wire, u32::MAX), Ok(FrameStatus::Complete { len }));
    let back = parse(&wire).expect("a re-encoded frame must parse");
    assert_eq!(
        format!("{back:?}"),
        format!("{f:?}"),
        "frame changed by a round trip"
    );
    assert_eq!(
        encode_to_vec(&back).expect("encodes"),
        wire,
        "encoding not stable"
    );
    match f {
        Frame::Open(open) => {
            for max_channels in [1, 256, 65535] {
                let _ = open.validate(&SchemaLimits {
                    max_channels,
                    max_frame_bytes: 64 << 20,
                    max_episode_id_bytes: 128,
                });
            }
            let _ = open.timebase.to_wshard();
        }
        Frame::Timestep(t) => {
            let _ = t.validate(t.payload.len());
            let _ = t.validate(0);
        }
        Frame::TimestepBatch(b) => batch_steps(b, &[0, 1, 16, 233]),
        Frame::EpisodeOpen(e) => {
            let _ = e.validate(&SchemaLimits::default());
        }
        Frame::StreamOpen(s) => {
            let _ = s.validate(&SchemaLimits::default());
            let _ = s.schema.schema_difference(&s.schema);
        }
        Frame::Event(e) => {
            let _ = e.validate(DEFAULT_MAX_EVENT_BYTES);
            let _ = e.validate(0);
        }
        Frame::Counters(c) => {
            // A parsed COUNTERS frame is valid, and its payload length is exact.
            assert!(c.validate().is_ok(), "a parsed COUNTERS frame must validate");
            assert_eq!(c.payload_len() + 5, len, "COUNTERS payload_len");
        }
        _ => {}
    }
}

fn batch_steps(b: &TimestepBatch, extra_sizes: &[usize]) {
    let count = b.count() as usize;
    let per = b.records().len() / count.max(1);
    let mut sizes = vec![
        per.saturating_sub(RECORD_HEADER_BYTES),
        per.saturating_sub(RECORD_HEADER_BYTES) + 1,
        usize::MAX,
        usize::MAX - RECORD_HEADER_BYTES,
        usize::MAX / 2,
        usize::MAX / count.max(1),
    ];
    sizes.extend_from_slice(extra_sizes);
    let _ = b.first_seq();
    let _ = b.end_seq();
    let _ = b.check_sequence(b.first_seq());
    for sz in sizes {
        let _ = b.validate(sz);
        match b.steps(sz) {
            Ok(steps) => {
                assert_eq!(steps.len(), count);
                let mut n = 0u64;
                for s in steps {
                    assert_eq!(s.payload.len(), sz);
                    assert_eq!(Some(s.seq), b.first_seq().checked_add(n));
                    n += 1;
                }
                assert_eq!(n, u64::from(b.count()));
            }
            Err(e) => {
                let _ = e.to_string();
                assert!(!e.is_fatal());
            }
        }
    }
}

/// `split_seed`-driven piece sizes: 1..=8192 bytes, mostly small.
struct Splits(u64);

impl Splits {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = (self.0 >> 33) as usize;
        match r % 4 {
            0 => 1,
            1 => 1 + r / 4 % 16,
            2 => 1 + r / 4 % 512,
            _ => 1 + r / 4 % 8192,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let max = match data[0] % 6 {
        0 => 64,
        1 => 1024,
        2 => 65_536,
        3 => 1 << 20,
        4 => 64 << 20,
        _ => u32::MAX,
    };
    let stream = &data[2..];
    let mut splits = Splits(u64::from(data[1]) | u64::from(data[0]) << 8);

    // The arbitrary bytes as a raw batch, too.
    if stream.len() >= 4 {
        let count = u32::from_le_bytes([stream[0], stream[1], stream[2], stream[3]]);
        if let Ok(b) = TimestepBatch::from_records(count, stream[4..].to_vec()) {
            let sizes: Vec<usize> = stream
                .chunks(2)
                .take(4)
                .map(|c| usize::from(c[0]) | usize::from(*c.get(1).unwrap_or(&0)) << 8)
                .collect();
            batch_steps(&b, &sizes);
        }
    }

    let (want, consumed) = reference(stream, max);
    for r in &want {
        if let Err(e) = r {
            let ef = e.to_error_frame();
            let wire = encode_to_vec(&ef).expect("an ERROR frame always encodes");
            assert!(parse(&wire).is_ok());
        }
    }

    let direct = data[1] & 2 != 0;
    // The reference's `check` knows every frame type of the newest version.
    let newest = FrameDecoder::new(max).with_protocol_version(ProtocolVersion::NEWEST);
    let mut dec = if direct {
        newest.direct_batches(1 + usize::from(data[1] >> 2) * 16)
    } else {
        newest
    };
    let mut got: Vec<Result<Frame, ProtoError>> = Vec::new();
    let mut fatal: Option<ProtoError> = None;
    let mut at = 0;
    let mut via_feed = data[1] & 1 == 0;
    while at < stream.len() && fatal.is_none() {
        if direct && dec.needs_records_buffer() {
            // A reused buffer: longer or shorter than the next batch, never zeroed.
            dec.give_records_buffer(vec![0xAB; splits.next()]);
        }
        let n = splits.next().min(stream.len() - at);
        if via_feed {
            dec.feed(&stream[at..at + n]);
            at += n;
        } else {
            let buf = dec.buffer_mut();
            assert!(!buf.is_empty());
            let n = n.min(buf.len());
            buf[..n].copy_from_slice(&stream[at..at + n]);
            dec.commit(n);
            at += n;
        }
        via_feed = !via_feed;
        loop {
            match dec.next_frame() {
                Ok(Some(f)) => got.push(Ok(f)),
                Ok(None) => break,
                Err(e) => {
                    let is_fatal = e.is_fatal();
                    got.push(Err(e.clone()));
                    if is_fatal {
                        fatal = Some(e);
                        break;
                    }
                }
            }
        }
    }
    match &fatal {
        Some(e) => {
            // It stays failed, whatever comes next.
            dec.feed(&[1, 0, 0, 0, 0x06]);
            assert_eq!(dec.next_frame().as_ref(), Err(e));
        }
        None => {
            assert_eq!(dec.next_frame().ok(), Some(None));
            assert_eq!(dec.buffered(), stream.len() - consumed);
        }
    }
    let want_keys: Vec<String> = want.iter().map(key).collect();
    let got_keys: Vec<String> = got.iter().map(key).collect();
    assert_eq!(
        got_keys, want_keys,
        "the decoder disagrees with check + parse"
    );
});
