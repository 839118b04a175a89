//! Direct batches (`FrameDecoder::direct_batches`): a large `TIMESTEP_BATCH` is read
//! straight into its records buffer. The decoder must yield exactly what it yields without
//! them (same frames, same errors, same order), however the stream is split into reads,
//! never hand out an empty or oversized room, and never let bytes of a lent buffer's earlier
//! use into a batch.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use wshard_ingest_proto::{
    encode, ErrorCode, Frame, FrameDecoder, ProtoError, TimestepBatch, MIN_READ_BYTES,
};

/// Records bytes from which the tests' decoders read a batch directly: the sample batches
/// of 5 steps (345 bytes of records) and more qualify, the every-frame stream's 4-step one
/// (276 bytes) does not.
const MIN: usize = 300;

type Got = Vec<Result<Frame, ProtoError>>;

/// Every frame and error of `stream`, read by a decoder without direct batches, fed whole.
fn reference(stream: &[u8], max: u32) -> Got {
    let mut dec = FrameDecoder::new(max);
    dec.feed(stream);
    drain(&mut dec)
}

fn drain(dec: &mut FrameDecoder) -> Got {
    let mut got = Vec::new();
    loop {
        match dec.next_frame() {
            Ok(Some(f)) => got.push(Ok(f)),
            Ok(None) => return got,
            Err(e) => {
                let fatal = e.is_fatal();
                got.push(Err(e));
                if fatal {
                    return got;
                }
            }
        }
    }
}

/// What a socket read does: copy as much of `data` as the room takes, commit it. Returns
/// the bytes taken; checks the room is never empty.
fn read_into(dec: &mut FrameDecoder, data: &[u8]) -> usize {
    let room = dec.buffer_mut();
    assert!(!room.is_empty(), "an empty room reads as EOF");
    let n = room.len().min(data.len());
    room[..n].copy_from_slice(&data[..n]);
    dec.commit(n);
    n
}

/// Deliver `stream` in reads of at most the sizes `sizes` yields (a socket may return less
/// than asked, the room may take less than offered), draining frames after every read.
fn decode_in_reads(dec: &mut FrameDecoder, stream: &[u8], mut sizes: impl FnMut() -> usize) -> Got {
    let mut got = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let want = sizes().clamp(1, stream.len() - at);
        at += read_into(dec, &stream[at..at + want]);
        let more = drain(dec);
        let fatal = more
            .last()
            .is_some_and(|r| r.as_ref().is_err_and(ProtoError::is_fatal));
        got.extend(more);
        if fatal {
            break;
        }
    }
    got
}

fn direct(max: u32) -> FrameDecoder {
    FrameDecoder::new(max).direct_batches(MIN)
}

/// HELLO, a large batch, FLUSH, a small batch, a large batch, CLOSE.
fn mixed_stream() -> Vec<u8> {
    let mut s = Vec::new();
    for f in [
        Frame::Hello {
            version: 1,
            client_name: "t".into(),
        },
        Frame::TimestepBatch(sample_batch(0, 6)),
        Frame::Flush,
        Frame::TimestepBatch(sample_batch(6, 2)),
        Frame::TimestepBatch(sample_batch(8, 9)),
        Frame::Close {
            outcome: wshard_ingest_proto::Outcome::Completed,
        },
    ] {
        encode(&f, &mut s).unwrap();
    }
    s
}

#[test]
fn proto_direct_batch_split_at_every_byte_boundary() {
    let s = mixed_stream();
    let want = reference(&s, 1 << 20);
    assert_eq!(want.len(), 6);
    // Two reads, cut anywhere (the room itself splits them further).
    for cut in 0..=s.len() {
        let mut dec = direct(1 << 20);
        let mut got = Vec::new();
        let mut at = 0;
        for end in [cut, s.len()] {
            while at < end {
                at += read_into(&mut dec, &s[at..end]);
                got.extend(drain(&mut dec));
            }
        }
        assert_eq!(got, want, "cut at {cut}");
        assert_eq!(dec.buffered(), 0);
    }
    // One byte per read, and odd read sizes.
    let mut dec = direct(1 << 20);
    assert_eq!(decode_in_reads(&mut dec, &s, || 1), want);
    for seed in 1..40 {
        let mut step = seed;
        let mut dec = direct(1 << 20);
        let got = decode_in_reads(&mut dec, &s, || {
            step = step * 7 % 131 + 1;
            step
        });
        assert_eq!(got, want, "seed {seed}");
    }
}

#[test]
fn proto_direct_batch_fed_byte_by_byte_after_its_header() {
    // `feed` after the decoder went direct (through `buffer_mut`) goes to the batch too.
    let s = mixed_stream();
    let want = reference(&s, 1 << 20);
    for cut in 0..s.len() {
        let mut dec = direct(1 << 20);
        let mut got = Vec::new();
        let mut at = 0;
        while at < cut {
            at += read_into(&mut dec, &s[at..cut]);
            got.extend(drain(&mut dec));
        }
        for b in &s[cut..] {
            dec.feed(std::slice::from_ref(b));
            got.extend(drain(&mut dec));
        }
        assert_eq!(got, want, "cut at {cut}");
    }
}

#[test]
fn proto_direct_several_frames_in_one_read() {
    let s = mixed_stream();
    let want = reference(&s, 1 << 20);
    // Whole frames already buffered are parsed in place, large batches included.
    let mut dec = direct(1 << 20);
    assert_eq!(read_into(&mut dec, &s), s.len());
    assert_eq!(drain(&mut dec), want);
    // Reads that each end inside a large batch: the room ends where that batch ends, and
    // the frames after it arrive with the next read.
    let mut dec = direct(1 << 20);
    assert_eq!(decode_in_reads(&mut dec, &s, || 50), want);
}

#[test]
fn proto_direct_room_ends_at_the_batch_then_control_frame_follows() {
    let big = sample_batch(0, 2_000); // 2000 x 69 B = 138,000 B of records
    let mut s = wire(&Frame::TimestepBatch(big.clone()));
    let batch_len = s.len();
    encode(&Frame::Flush, &mut s).unwrap();
    encode(&Frame::Durable { up_to_seq: 3 }, &mut s).unwrap();
    let mut dec = FrameDecoder::new(1 << 20).direct_batches(64 * 1024);
    // The first read takes a minimum read: the header and the start of the records.
    let mut at = read_into(&mut dec, &s);
    assert_eq!(at, MIN_READ_BYTES);
    assert_eq!(dec.next_frame().unwrap(), None);
    // From now on the room is the batch's own buffer, ending exactly at its last byte,
    // although the "socket" has the control frames right behind it.
    while at < batch_len {
        let room = dec.buffer_mut().len();
        assert!(
            at + room <= batch_len,
            "room {room} at {at} runs past the batch"
        );
        at += read_into(&mut dec, &s[at..]);
    }
    assert_eq!(at, batch_len);
    assert_eq!(dec.buffered(), batch_len - 4 + 4);
    // The next read is a normal one, into the receive buffer.
    assert!(dec.buffer_mut().len() >= MIN_READ_BYTES);
    at += read_into(&mut dec, &s[at..]);
    assert_eq!(at, s.len());
    assert_eq!(
        drain(&mut dec),
        vec![
            Ok(Frame::TimestepBatch(big)),
            Ok(Frame::Flush),
            Ok(Frame::Durable { up_to_seq: 3 })
        ]
    );
    assert_eq!(dec.buffered(), 0);
}

#[test]
fn proto_direct_malformed_frames_after_a_large_batch() {
    let mut s = wire(&Frame::TimestepBatch(sample_batch(0, 6)));
    s.extend_from_slice(&raw_frame(0x05, &[9])); // CLOSE with outcome 9: skipped
                                                 // A large batch whose count is 0 (does not parse), one whose count needs more records
                                                 // than it has (PAYLOAD_SIZE): payload errors, each skips its frame.
    let records = sample_batch(10, 6).records().to_vec();
    for count in [0u32, 1_000] {
        let mut payload = count.to_le_bytes().to_vec();
        payload.extend_from_slice(&records);
        s.extend_from_slice(&raw_frame(0x04, &payload));
    }
    s.extend_from_slice(&wire(&Frame::TimestepBatch(sample_batch(6, 6))));
    s.extend_from_slice(&wire(&Frame::Flush));
    let ok_len = s.len();
    // Then fatal ones: a zero length, in one stream; an oversized batch, in another.
    let mut zero = s.clone();
    zero.extend_from_slice(&[0, 0, 0, 0, 0x06]);
    let mut oversized = s.clone();
    oversized.extend_from_slice(&1_000_000u32.to_le_bytes());
    oversized.extend_from_slice(&[0x04, 1, 0, 0, 0]);
    oversized.extend_from_slice(&records);
    let max = 100_000;
    for stream in [&s, &zero, &oversized] {
        let want = reference(stream, max);
        let codes: Vec<_> = want
            .iter()
            .map(|r| r.as_ref().err().map(ProtoError::error_code))
            .collect();
        assert_eq!(
            codes[..6],
            [
                None,
                Some(ErrorCode::MalformedFrame),
                Some(ErrorCode::MalformedFrame),
                Some(ErrorCode::PayloadSize),
                None,
                None
            ]
        );
        assert!(want[1..4]
            .iter()
            .all(|r| !r.as_ref().unwrap_err().is_fatal()));
        if stream.len() > ok_len {
            assert!(want[6].as_ref().unwrap_err().is_fatal());
        }
        for cut in 0..stream.len() {
            let mut dec = direct(max);
            let mut got = decode_in_reads(&mut dec, &stream[..cut], || 97);
            let fatal = got
                .last()
                .is_some_and(|r| r.as_ref().is_err_and(ProtoError::is_fatal));
            if !fatal {
                got.extend(decode_in_reads(&mut dec, &stream[cut..], || 97));
            }
            assert_eq!(got, want, "cut at {cut}");
            if let Some(Err(e)) = want.last() {
                if e.is_fatal() {
                    // Stays failed.
                    dec.feed(&wire(&Frame::Flush));
                    assert_eq!(dec.next_frame().as_ref(), Err(e));
                }
            }
        }
    }
}

#[test]
fn proto_direct_stalled_peer_costs_what_it_sent() {
    // A batch announcing the largest frame, then a trickle: the room (the memory the records
    // buffer grows to) stays within twice what arrived plus one minimum read.
    for max in [64u32 << 20, 1 << 30] {
        let mut dec = FrameDecoder::new(max).direct_batches(64 * 1024);
        dec.feed(&max.to_le_bytes());
        dec.feed(&[0x04, 1, 0, 0, 0]);
        assert_eq!(dec.next_frame().unwrap(), None);
        let mut received = 9usize;
        for _ in 0..6 {
            let room = dec.buffer_mut().len();
            assert!(
                room <= received.max(MIN_READ_BYTES),
                "room {room} after {received}"
            );
            // the peer sends all it was offered room for, then stalls
            received += read_into(&mut dec, &vec![0xAB; room]);
            assert_eq!(dec.next_frame().unwrap(), None);
            assert_eq!(dec.buffered(), received);
        }
    }
}

#[test]
fn proto_direct_reused_buffer_shorter_frame_yields_exactly_its_records() {
    let long = sample_batch(0, 40);
    let short = sample_batch(40, 6);
    let mut s = wire(&Frame::TimestepBatch(long.clone()));
    s.extend_from_slice(&wire(&Frame::TimestepBatch(short.clone())));
    // Received directly, the short batch into the long one's buffer.
    let mut dec = direct(1 << 20);
    let mut got = Vec::new();
    let mut at = 0;
    while at < s.len() {
        if dec.needs_records_buffer() {
            // What the daemon lends: a buffer the writer is done with, contents left as is.
            if let Some(Ok(Frame::TimestepBatch(b))) = got.last() {
                let b: &TimestepBatch = b;
                dec.give_records_buffer(b.clone().into_records());
            }
        }
        at += read_into(&mut dec, &s[at..(at + 100).min(s.len())]);
        got.extend(drain(&mut dec));
    }
    assert_eq!(
        got,
        vec![
            Ok(Frame::TimestepBatch(long.clone())),
            Ok(Frame::TimestepBatch(short.clone()))
        ]
    );
    let Ok(Frame::TimestepBatch(b)) = &got[1] else {
        panic!()
    };
    assert_eq!(b.records(), short.records());
    assert_eq!(b.records().len(), 6 * (21 + STEP_BYTES));

    // Parsed in place (whole frame buffered, or direct batches off), with a longer lent
    // buffer full of stale bytes: exactly the records too.
    for mut dec in [direct(1 << 20), FrameDecoder::new(1 << 20)] {
        dec.give_records_buffer(vec![0xEE; 10_000]);
        assert!(!dec.needs_records_buffer());
        dec.feed(&wire(&Frame::TimestepBatch(short.clone())));
        let Some(Frame::TimestepBatch(b)) = dec.next_frame().unwrap() else {
            panic!()
        };
        assert_eq!(b.records(), short.records());
        assert!(dec.needs_records_buffer());
    }

    // A lent buffer is not taken by other frames, and an extra one is dropped.
    let mut dec = direct(1 << 20);
    dec.give_records_buffer(vec![1; 8]);
    dec.give_records_buffer(vec![2; 8]);
    dec.feed(&wire(&Frame::Flush));
    assert_eq!(dec.next_frame().unwrap(), Some(Frame::Flush));
    assert!(!dec.needs_records_buffer());
}

#[test]
fn proto_direct_lent_buffer_shorter_than_the_batch_grows() {
    let big = sample_batch(0, 30);
    let s = wire(&Frame::TimestepBatch(big.clone()));
    let mut dec = direct(1 << 20);
    dec.give_records_buffer(vec![0xEE; 50]);
    assert_eq!(
        decode_in_reads(&mut dec, &s, || 40),
        vec![Ok(Frame::TimestepBatch(big))]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random sequences of frames (batches of random sizes, control frames, a payload error
    /// here and there), random read sizes, random lent buffers: the same as the reference.
    #[test]
    fn proto_direct_prop_same_frames_as_without(
        kinds in proptest::collection::vec(0u8..5, 1..12),
        sizes in proptest::collection::vec(0u64..12, 12),
        reads in proptest::collection::vec(1usize..400, 1..20),
        lend in proptest::collection::vec(0usize..1200, 1..8),
    ) {
        let mut s = Vec::new();
        let mut seq = 0;
        for (i, k) in kinds.iter().enumerate() {
            match k {
                0 | 1 => {
                    let n = sizes[i] + 1;
                    encode(&Frame::TimestepBatch(sample_batch(seq, n)), &mut s).unwrap();
                    seq += n;
                }
                2 => encode(&Frame::Flush, &mut s).unwrap(),
                3 => s.extend_from_slice(&raw_frame(0x05, &[7])),
                _ => {
                    let mut payload = 0u32.to_le_bytes().to_vec();
                    payload.resize(4 + 69 * (sizes[i] as usize + 1), 3);
                    s.extend_from_slice(&raw_frame(0x04, &payload));
                }
            }
        }
        let want = reference(&s, 1 << 20);
        let mut dec = direct(1 << 20);
        let mut got = Vec::new();
        let mut at = 0;
        let mut r = 0;
        while at < s.len() {
            if dec.needs_records_buffer() {
                dec.give_records_buffer(vec![0xEE; lend[r % lend.len()]]);
            }
            let n = reads[r % reads.len()].min(s.len() - at);
            r += 1;
            at += read_into(&mut dec, &s[at..at + n]);
            got.extend(drain(&mut dec));
        }
        prop_assert_eq!(got, want);
        prop_assert_eq!(dec.buffered(), 0);
    }
}
