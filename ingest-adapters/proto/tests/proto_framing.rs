//! Framing: incomplete at every split point, limits decided from the header alone, fatal
//! errors.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use wshard_ingest_proto::{
    check, encode, parse, ErrorCode, Frame, FrameDecoder, FrameStatus, ProtoError,
};

fn stream() -> Vec<u8> {
    let mut s = Vec::new();
    for f in every_frame() {
        encode(&f, &mut s).unwrap();
    }
    s
}

#[test]
fn proto_check_incomplete_at_every_split_point() {
    for f in every_frame() {
        let bytes = wire(&f);
        for cut in 0..bytes.len() {
            let want = if cut < 4 { 4 } else { bytes.len() };
            assert_eq!(
                check(&bytes[..cut], 1 << 20).unwrap(),
                FrameStatus::Incomplete { need: want },
                "{:?} cut at {cut}",
                f.frame_type()
            );
        }
        assert_eq!(
            check(&bytes, 1 << 20).unwrap(),
            FrameStatus::Complete { len: bytes.len() }
        );
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0x05, 0, 0]);
        assert_eq!(
            check(&longer, 1 << 20).unwrap(),
            FrameStatus::Complete { len: bytes.len() }
        );
    }
}

#[test]
fn proto_decoder_fed_byte_by_byte() {
    let s = stream();
    let mut dec = FrameDecoder::new(1 << 20);
    let mut got = Vec::new();
    for b in &s {
        dec.feed(std::slice::from_ref(b));
        while let Some(f) = dec.next_frame().unwrap() {
            got.push(f);
        }
    }
    assert_eq!(got, every_frame());
}

#[test]
fn proto_decoder_buffer_mut_commit_in_odd_reads() {
    let s = stream();
    let mut dec = FrameDecoder::new(1 << 20);
    let mut got = Vec::new();
    let mut at = 0;
    let mut step = 1;
    while at < s.len() {
        let buf = dec.buffer_mut();
        assert!(buf.len() >= wshard_ingest_proto::MIN_READ_BYTES);
        let n = step.min(s.len() - at).min(buf.len());
        buf[..n].copy_from_slice(&s[at..at + n]);
        dec.commit(n);
        at += n;
        step = step * 3 % 97 + 1;
        while let Some(f) = dec.next_frame().unwrap() {
            got.push(f);
        }
    }
    assert_eq!(got, every_frame());
}

#[test]
fn proto_decoder_room_doubles_as_a_large_frame_arrives() {
    let big = 300_000usize;
    let mut wire = (big as u32).to_le_bytes().to_vec();
    wire.push(0x02); // OPEN: any payload parses far enough to be returned or refused
    wire.resize(big + 4, 0xAB);
    let mut dec = FrameDecoder::new(1 << 20);
    let mut at = 0;
    let mut reads = 0;
    while at < wire.len() {
        let buf = dec.buffer_mut();
        assert!(buf.len() >= wshard_ingest_proto::MIN_READ_BYTES);
        // Never more room than twice what arrived, plus one minimum read.
        assert!(
            at + buf.len() <= 2 * at + wshard_ingest_proto::MIN_READ_BYTES,
            "{} bytes of room with {at} received",
            buf.len()
        );
        let n = buf.len().min(wire.len() - at);
        buf[..n].copy_from_slice(&wire[at..at + n]);
        dec.commit(n);
        at += n;
        reads += 1;
    }
    assert!(reads <= 4, "{reads} reads");
    assert!(dec.next_frame().is_err()); // the payload is not a valid OPEN
    assert_eq!(dec.buffered(), 0);
}

/// Found by `fuzz/fuzz_targets/protocol_decoder.rs` (an out-of-memory): a 5-byte header
/// announcing a ~4 GiB frame made `buffer_mut` allocate the whole frame before a byte of it
/// arrived. The daemon's limit is at most 1 GiB, but every connection could claim that
/// much (64 connections x 64 MiB by default) with a few bytes each.
#[test]
fn proto_decoder_announced_size_allocates_nothing_up_front() {
    // The fuzzer's stream: limit u32::MAX, a HELLO with body_len 0xFFFF_3F01, 7 more bytes.
    let mut dec = FrameDecoder::new(u32::MAX);
    dec.feed(&[0x01, 0x3f, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0x0c]);
    assert_eq!(dec.next_frame().unwrap(), None);
    assert!(dec.buffer_mut().len() <= wshard_ingest_proto::MIN_READ_BYTES);
    for max in [64 << 20, 1 << 30] {
        let mut dec = FrameDecoder::new(max);
        dec.feed(&max.to_le_bytes());
        dec.feed(&[0x04]);
        assert_eq!(dec.next_frame().unwrap(), None);
        assert!(dec.buffer_mut().len() <= wshard_ingest_proto::MIN_READ_BYTES);
    }
}

#[test]
fn proto_oversized_header_rejected_from_first_four_bytes() {
    let max = 1000;
    let header = 1001u32.to_le_bytes();
    let err = check(&header, max).unwrap_err();
    assert_eq!(
        err,
        ProtoError::FrameTooLarge {
            len: 1001,
            max: 1000
        }
    );
    assert!(err.is_fatal());
    assert_eq!(err.error_code(), ErrorCode::FrameTooLarge);
    assert_eq!(err.error_code().code(), 3);
    // exactly at the limit is fine
    assert_eq!(
        check(&1000u32.to_le_bytes(), max).unwrap(),
        FrameStatus::Incomplete { need: 1004 }
    );
    // the decoder refuses before buffering anything more, and stays failed
    let mut dec = FrameDecoder::new(max);
    dec.feed(&header);
    assert!(dec.next_frame().unwrap_err().is_fatal());
    dec.feed(&wire(&Frame::Flush));
    assert_eq!(
        dec.next_frame().unwrap_err(),
        ProtoError::FrameTooLarge {
            len: 1001,
            max: 1000
        }
    );
    // u32::MAX announced: still refused, no overflow
    assert!(check(&u32::MAX.to_le_bytes(), u32::MAX - 1).is_err());
}

#[test]
fn proto_zero_length_is_fatal_malformed() {
    let err = check(&[0, 0, 0, 0], 1 << 20).unwrap_err();
    assert_eq!(err, ProtoError::ZeroLength);
    assert!(err.is_fatal());
    assert_eq!(err.error_code(), ErrorCode::MalformedFrame);
    assert!(parse(&[0, 0, 0, 0]).is_err());
}

#[test]
fn proto_unknown_type_is_fatal_from_fifth_byte() {
    for t in [0x00u8, 0x0E, 0x80, 0x86, 0xFF] {
        // body not buffered yet: decided from the type byte alone
        let err = check(&[100, 0, 0, 0, t], 1 << 20).unwrap_err();
        assert_eq!(err, ProtoError::UnknownFrame { frame_type: t });
        assert!(err.is_fatal());
        assert_eq!(err.error_code(), ErrorCode::UnknownFrame);
        assert!(err.to_string().contains(&format!("0x{t:02x}")));
    }
}

#[test]
fn proto_parse_refuses_slice_not_exactly_one_frame() {
    let mut bytes = wire(&Frame::Durable { up_to_seq: 1 });
    bytes.push(0);
    assert!(matches!(
        parse(&bytes).unwrap_err(),
        ProtoError::FrameLength {
            announced: 9,
            actual: 10
        }
    ));
    assert!(parse(&bytes[..bytes.len() - 2]).unwrap_err().is_fatal());
}

#[test]
fn proto_payload_error_skips_one_frame_and_stream_continues() {
    let mut s = raw_frame(0x05, &[9]); // CLOSE with outcome 9
    s.extend_from_slice(&wire(&Frame::Flush));
    let mut dec = FrameDecoder::new(1 << 20);
    dec.feed(&s);
    let err = dec.next_frame().unwrap_err();
    assert!(!err.is_fatal());
    assert_eq!(err.error_code(), ErrorCode::MalformedFrame);
    assert_eq!(dec.next_frame().unwrap(), Some(Frame::Flush));
}
