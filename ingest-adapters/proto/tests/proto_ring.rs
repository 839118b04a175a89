//! The shared-memory ring: `SHM_ATTACH` frames, geometry rules, header encodings and the
//! slot-header checks, with the values named in every message.
#![allow(clippy::unwrap_used)]

mod common;

use common::raw_frame;
use wshard_ingest_proto::ring::{
    self, min_slot_size, ring_bytes, slot_offset, validate_geometry, RingHeader, RingPolicy,
    SlotHeader, RING_HEADER_BYTES, RING_IDENT_BYTES, RING_MAGIC,
};
use wshard_ingest_proto::{encode_to_vec, parse, ErrorCode, Frame, FrameType, ProtoError};

fn bad_shm(r: Result<impl std::fmt::Debug, ProtoError>) -> String {
    let e = r.unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::BadShm, "{e}");
    assert!(!e.is_fatal());
    assert!(!e.error_code().closes_connection());
    e.to_string()
}

#[test]
fn proto_ring_shm_attach_frame() {
    assert_eq!(FrameType::from_code(0x07), Some(FrameType::ShmAttach));
    assert_eq!(FrameType::ShmAttach.name(), "SHM_ATTACH");
    assert!(FrameType::ShmAttach.is_client_to_server());
    let f = parse(&raw_frame(0x07, &[0, 16, 0, 0, 8, 0, 0, 0])).unwrap();
    assert_eq!(
        f,
        Frame::ShmAttach {
            slot_size: 4096,
            slot_count: 8,
            policy: None,
        }
    );
    let e = parse(&raw_frame(0x07, &[0, 16, 0, 0, 8, 0])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "SHM_ATTACH: field slot_count truncated: needs 4 bytes, 2 left"
    );
    let e = parse(&raw_frame(0x07, &[0; 10])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "SHM_ATTACH: 1 trailing bytes after the last field"
    );
    assert_eq!(ErrorCode::from_u16(18), Some(ErrorCode::BadShm));
    assert_eq!(ErrorCode::BadShm.name(), "BAD_SHM");
}

#[test]
fn proto_ring_shm_attach_policy_byte() {
    // The trailing policy byte is optional; each value parses and encodes back exactly.
    for (byte, policy) in [
        (0u8, RingPolicy::Block),
        (1, RingPolicy::DropNewest),
        (2, RingPolicy::DropOldest),
    ] {
        let wire = raw_frame(0x07, &[0, 16, 0, 0, 8, 0, 0, 0, byte]);
        let f = parse(&wire).unwrap();
        assert_eq!(
            f,
            Frame::ShmAttach {
                slot_size: 4096,
                slot_count: 8,
                policy: Some(policy),
            }
        );
        assert_eq!(encode_to_vec(&f).unwrap(), wire);
        assert_eq!(RingPolicy::from_code(byte), Some(policy));
        assert_eq!(policy.code(), byte);
    }
    // Without the byte: `None`, i.e. block, and encoded without it.
    let f = Frame::ShmAttach {
        slot_size: 4096,
        slot_count: 8,
        policy: None,
    };
    assert_eq!(encode_to_vec(&f).unwrap().len(), 4 + 1 + 8);
    let e = parse(&raw_frame(0x07, &[0, 16, 0, 0, 8, 0, 0, 0, 3])).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::MalformedFrame);
    assert!(!e.is_fatal());
    assert_eq!(
        e.to_string(),
        "SHM_ATTACH: field policy has value 3, expected 0 (block), 1 (drop_newest) or 2 (drop_oldest)"
    );
    assert_eq!(
        RingPolicy::ALL.map(RingPolicy::name),
        ["block", "drop_newest", "drop_oldest"]
    );
    assert!(!RingPolicy::Block.drops());
    assert!(RingPolicy::DropNewest.drops());
}

#[test]
fn proto_ring_layout_constants() {
    assert_eq!(&RING_MAGIC, b"WSHRING1");
    assert_eq!(RING_HEADER_BYTES, 4096);
    assert_eq!(
        [
            ring::OFFSET_MAGIC,
            ring::OFFSET_VERSION,
            ring::OFFSET_SLOT_SIZE,
            ring::OFFSET_SLOT_COUNT,
            ring::OFFSET_HEAD,
            ring::OFFSET_TAIL,
            ring::OFFSET_CONSUMER_SLEEPING,
            ring::OFFSET_PRODUCER_SLEEPING,
            ring::OFFSET_DROPPED_STEPS,
            ring::OFFSET_DROPPED_BATCHES
        ],
        [0, 8, 12, 16, 64, 128, 192, 256, 320, 384]
    );
    assert_eq!(ring_bytes(64, 2), Some(4096 + 128));
    // any u32 geometry fits u64
    assert_eq!(
        ring_bytes(u32::MAX, u32::MAX),
        Some(u64::from(u32::MAX) * u64::from(u32::MAX) + 4096)
    );
    assert_eq!(slot_offset(0, 128, 4), Some(4096));
    assert_eq!(slot_offset(5, 128, 4), Some(4096 + 128));
    assert_eq!(slot_offset(u64::MAX, 128, 4), Some(4096 + 3 * 128));
    assert_eq!(slot_offset(1, 128, 0), None);
    assert_eq!(min_slot_size(21), Some(128));
    assert_eq!(min_slot_size(21 + 43), Some(128));
    assert_eq!(min_slot_size(21 + 44), Some(192));
    assert_eq!(min_slot_size(usize::MAX), None);
}

#[test]
fn proto_ring_geometry_rules_name_the_values() {
    let rec = 21 + 100; // 121 -> minimum 185, rounded 192
    validate_geometry(192, 2, rec, 1 << 20).unwrap();
    validate_geometry(1 << 20, 65536, rec, 1 << 20).unwrap();
    let cases: [(u32, u32, u32, &str); 6] = [
        (192, 1, 1 << 20, "slot_count 1 is outside 2..=65536"),
        (192, 65537, 1 << 20, "slot_count 65537 is outside 2..=65536"),
        (200, 4, 1 << 20, "slot_size 200 is not a multiple of 64"),
        (
            128,
            4,
            1 << 20,
            "slot_size 128 is smaller than 64 + one timestep record (121 bytes) = 185",
        ),
        (0, 4, 1 << 20, "slot_size 0 is smaller than"),
        (4096, 4, 4032, "slot_size 4096 exceeds max_frame_bytes 4032"),
    ];
    for (size, count, max, want) in cases {
        let msg = bad_shm(validate_geometry(size, count, rec, max));
        assert!(msg.starts_with("SHM_ATTACH slot_"), "{msg}");
        assert!(msg.contains(want), "{msg:?} should contain {want:?}");
    }
}

#[test]
fn proto_ring_header_encode_parse() {
    let h = RingHeader {
        slot_size: 4096,
        slot_count: 64,
    };
    let bytes = h.encode();
    assert_eq!(bytes.len(), RING_IDENT_BYTES);
    assert_eq!(&bytes[..8], b"WSHRING1");
    assert_eq!(bytes[8..12], [1, 0, 0, 0]);
    assert_eq!(RingHeader::parse(&bytes).unwrap(), h);
    h.check_matches(4096, 64).unwrap();
    let msg = bad_shm(h.check_matches(8192, 64));
    assert!(msg.contains("slot_size 4096 differs from SHM_ATTACH slot_size 8192"));
    let msg = bad_shm(h.check_matches(4096, 4));
    assert!(msg.contains("slot_count 64 differs from SHM_ATTACH slot_count 4"));

    let mut garbage = bytes;
    garbage[..8].copy_from_slice(b"GARBAGE!");
    let msg = bad_shm(RingHeader::parse(&garbage));
    assert!(msg.contains("ring magic is \"GARBAGE!\""), "{msg}");
    assert!(msg.contains("expected \"WSHRING1\""), "{msg}");
    let mut v2 = bytes;
    v2[8] = 2;
    assert!(bad_shm(RingHeader::parse(&v2)).contains("ring version is 2, expected 1"));
    assert!(bad_shm(RingHeader::parse(&bytes[..10])).contains("ring header is 10 bytes"));
}

#[test]
fn proto_ring_slot_header_checks() {
    let rec = 21 + 16;
    let h = SlotHeader {
        len: 3 * 37,
        count: 3,
    };
    assert_eq!(SlotHeader::decode(h.encode()), h);
    assert_eq!(h.encode(), [111, 0, 0, 0, 3, 0, 0, 0]);
    assert_eq!(h.check(5, 128, rec).unwrap(), 111);
    let too_long = SlotHeader {
        len: 99_999,
        count: 3,
    };
    let msg = bad_shm(too_long.check(5, 4096, rec));
    assert!(
        msg.contains("ring slot 5: len 99999 exceeds slot_size 4096"),
        "{msg}"
    );
    // 8 + len must fit: 121 + 8 > 128
    let msg = bad_shm(SlotHeader { len: 121, count: 3 }.check(0, 128, rec));
    assert!(
        msg.contains("ring slot 0: len 121 exceeds slot_size 128"),
        "{msg}"
    );
    let msg = bad_shm(SlotHeader { len: 0, count: 0 }.check(7, 128, rec));
    assert!(msg.contains("ring slot 7: count 0 (must be >= 1)"), "{msg}");
    let msg = bad_shm(SlotHeader { len: 74, count: 3 }.check(2, 4096, rec));
    assert!(
        msg.contains("ring slot 2: len 74 does not match count 3 x record 37 bytes"),
        "{msg}"
    );
    let msg = bad_shm(
        SlotHeader {
            len: 4000,
            count: u32::MAX,
        }
        .check(2, 4096, rec),
    );
    assert!(msg.contains("does not match count 4294967295"), "{msg}");
}
