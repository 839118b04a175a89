//! One timestep record on the wire, `seq u64 | t_ns i64 | reward f32 | done u8 | payload`
//! (docs/PROTOCOL.md, "TIMESTEP"): the offsets of its fields, the size of its header, and
//! [`push_step_record`], which writes one. A leaf: `TIMESTEP`, `TIMESTEP_BATCH`, the
//! shared-memory ring's slots and the errors that name sizes all build on it.

/// Offset of a record's `seq` (`u64`).
pub const SEQ_OFFSET: usize = 0;
/// Offset of a record's `t_ns` (`i64`).
pub const T_NS_OFFSET: usize = 8;
/// Offset of a record's `reward` (`f32`).
pub const REWARD_OFFSET: usize = 16;
/// Offset of a record's `done` (`u8`, 0 or 1).
pub const DONE_OFFSET: usize = 20;

/// Bytes of a record before its payload: seq 8 + t_ns 8 + reward 4 + done 1.
pub const RECORD_HEADER_BYTES: usize = 21;

// The record layout, checked at compile time: each field starts where the one before it
// ends, and the header ends with `done`.
const _: () = {
    use std::mem::size_of;
    assert!(SEQ_OFFSET == 0);
    assert!(T_NS_OFFSET == SEQ_OFFSET + size_of::<u64>());
    assert!(REWARD_OFFSET == T_NS_OFFSET + size_of::<i64>());
    assert!(DONE_OFFSET == REWARD_OFFSET + size_of::<f32>());
    assert!(RECORD_HEADER_BYTES == DONE_OFFSET + size_of::<u8>());
};

/// Append one record. `payloads` are written back to back, without copies in between.
pub fn push_step_record(
    out: &mut Vec<u8>,
    seq: u64,
    t_ns: i64,
    reward: f32,
    done: bool,
    payloads: &[&[u8]],
) {
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&t_ns.to_le_bytes());
    out.extend_from_slice(&reward.to_le_bytes());
    out.push(u8::from(done));
    for p in payloads {
        out.extend_from_slice(p);
    }
}
