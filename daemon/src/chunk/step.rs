//! The fixed-layout timestep record, shared by the wire protocol and the journal:
//! `seq u64 | t_ns i64 | reward f32 | done u8 | payload`, little-endian.

/// Bytes before the payload.
pub const STEP_HEADER_LEN: usize = 8 + 8 + 4 + 1;

/// One timestep, borrowed from a buffer of records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepRef<'a> {
    pub seq: u64,
    pub t_ns: i64,
    pub reward: f32,
    pub done: bool,
    pub payload: &'a [u8],
}

/// Iterate over back-to-back records of `HEADER + payload_len` bytes. A trailing partial
/// record is ignored (callers check `len % record_len` first).
pub fn steps(bytes: &[u8], payload_len: usize) -> impl Iterator<Item = StepRef<'_>> {
    bytes
        .chunks_exact(STEP_HEADER_LEN + payload_len)
        .map(move |r| {
            let mut seq = [0u8; 8];
            seq.copy_from_slice(&r[0..8]);
            let mut t = [0u8; 8];
            t.copy_from_slice(&r[8..16]);
            StepRef {
                seq: u64::from_le_bytes(seq),
                t_ns: i64::from_le_bytes(t),
                reward: f32::from_le_bytes([r[16], r[17], r[18], r[19]]),
                done: r[20] != 0,
                payload: &r[STEP_HEADER_LEN..],
            }
        })
}

/// Append one record to `out`.
pub fn encode_step(
    out: &mut Vec<u8>,
    seq: u64,
    t_ns: i64,
    reward: f32,
    done: bool,
    payload: &[u8],
) {
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&t_ns.to_le_bytes());
    out.extend_from_slice(&reward.to_le_bytes());
    out.push(u8::from(done));
    out.extend_from_slice(payload);
}
