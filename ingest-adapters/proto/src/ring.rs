//! The shared-memory ring of docs/PROTOCOL.md ("Shared-memory transport"), sans-io: layout
//! constants, the geometry rules of `SHM_ATTACH`, and the byte encodings of the ring header
//! and of a slot header. Mapping the memory and the atomics on its control words are the
//! `wshard-shm-ring` crate's (which the daemon and the Rust client share); creating and
//! sealing the memfd and the eventfds are the clients', checking them the daemon's. The
//! Python client's copy of these constants (`wshard_client/_ring_layout.py`) is generated
//! from them (the test `proto_ring_python_layout`).
//!
//! ```text
//! 0     magic              [u8; 8]  "WSHRING1"
//! 8     version            u32      1
//! 12    slot_size          u32
//! 16    slot_count         u32
//! 64    head               u64      slots published by the producer, ever
//! 128   tail               u64      slots consumed by the consumer, ever
//! 192   consumer_sleeping  u32
//! 256   producer_sleeping  u32
//! 320   dropped_steps      u64      timesteps the producer dropped (drop policies), ever
//! 384   dropped_batches    u64      slots' worth of batches the producer dropped, ever
//! 4096  slot[0] .. slot[slot_count - 1], slot_size bytes each:
//!       len u32 | count u32 | records (as in TIMESTEP_BATCH)
//! ```
//!
//! ```
//! use wshard_ingest_proto::ring::{self, RingHeader};
//! let header = RingHeader { slot_size: 4096, slot_count: 8 };
//! let bytes = header.encode();
//! assert_eq!(RingHeader::parse(&bytes).unwrap(), header);
//! assert_eq!(ring::ring_bytes(4096, 8), Some(4096 + 8 * 4096));
//! assert_eq!(ring::slot_offset(9, 4096, 8), Some(4096 + 4096));
//! ring::validate_geometry(4096, 8, wshard_ingest_proto::RECORD_HEADER_BYTES + 100, 1 << 20).unwrap();
//! ```

use wshard::digest::hex;

use crate::error::ProtoError;
use crate::wire::array_at;

/// `magic` at offset 0.
pub const RING_MAGIC: [u8; 8] = *b"WSHRING1";
/// `version` at offset 8.
pub const RING_VERSION: u32 = 1;
/// Bytes before `slot[0]`.
pub const RING_HEADER_BYTES: usize = 4096;

/// Offset of `magic` (`[u8; 8]`).
pub const OFFSET_MAGIC: usize = 0;
/// Offset of `version` (`u32`).
pub const OFFSET_VERSION: usize = 8;
/// Offset of `slot_size` (`u32`).
pub const OFFSET_SLOT_SIZE: usize = 12;
/// Offset of `slot_count` (`u32`).
pub const OFFSET_SLOT_COUNT: usize = 16;
/// Offset of `head` (`u64`, own cache line): slots published by the producer, ever.
pub const OFFSET_HEAD: usize = 64;
/// Offset of `tail` (`u64`, own cache line): slots consumed by the consumer, ever.
pub const OFFSET_TAIL: usize = 128;
/// Offset of `consumer_sleeping` (`u32`, own cache line).
pub const OFFSET_CONSUMER_SLEEPING: usize = 192;
/// Offset of `producer_sleeping` (`u32`, own cache line).
pub const OFFSET_PRODUCER_SLEEPING: usize = 256;
/// Offset of `dropped_steps` (`u64`, own cache line): timesteps the producer dropped under
/// a drop policy, ever. Written only by the producer; informational for the consumer.
pub const OFFSET_DROPPED_STEPS: usize = 320;
/// Offset of `dropped_batches` (`u64`, own cache line): batches (one slot's worth each) the
/// producer dropped under a drop policy, ever. Written only by the producer.
pub const OFFSET_DROPPED_BATCHES: usize = 384;

/// What the producer does when the ring is full, chosen per episode by the optional
/// trailing `policy` byte of `SHM_ATTACH` (docs/PROTOCOL.md, "Backpressure policies").
///
/// ```
/// use wshard_ingest_proto::ring::RingPolicy;
/// assert_eq!(RingPolicy::from_code(2), Some(RingPolicy::DropOldest));
/// assert_eq!(RingPolicy::DropNewest.code(), 1);
/// assert_eq!(RingPolicy::default(), RingPolicy::Block);
/// assert!(RingPolicy::DropOldest.drops());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RingPolicy {
    /// 0: the producer waits for a free slot (the default; no timestep is ever lost).
    #[default]
    Block,
    /// 1: the producer drops the batch it was about to publish; its seqs are consumed.
    DropNewest,
    /// 2: the producer takes back the oldest published slot the consumer has not claimed
    /// yet (by moving `tail` with a compare-and-swap) and publishes the new batch in it.
    DropOldest,
}

impl RingPolicy {
    /// Every policy, in code order.
    pub const ALL: [Self; 3] = [Self::Block, Self::DropNewest, Self::DropOldest];

    /// The wire value.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Block => 0,
            Self::DropNewest => 1,
            Self::DropOldest => 2,
        }
    }

    /// The policy for a wire value, `None` when unknown.
    #[must_use]
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(Self::Block),
            1 => Some(Self::DropNewest),
            2 => Some(Self::DropOldest),
            _ => None,
        }
    }

    /// `block`, `drop_newest` or `drop_oldest`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::DropNewest => "drop_newest",
            Self::DropOldest => "drop_oldest",
        }
    }

    /// True for the policies that may drop timesteps (and so leave seq gaps).
    #[must_use]
    pub fn drops(self) -> bool {
        self != Self::Block
    }
}

impl std::fmt::Display for RingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes of the fixed identification fields (`magic`, `version`, `slot_size`,
/// `slot_count`) at the start of the header, as [`RingHeader::encode`] writes them.
pub const RING_IDENT_BYTES: usize = 20;

/// Bytes of a slot's header: `len u32 | count u32`.
pub const SLOT_HEADER_BYTES: usize = 8;
/// `slot_size` is a multiple of this.
pub const SLOT_ALIGN: u32 = 64;
/// `slot_size` is at least this plus one timestep record.
pub const SLOT_MIN_OVERHEAD: usize = 64;
/// Fewest slots a ring may have.
pub const MIN_SLOTS: u32 = 2;
/// Most slots a ring may have.
pub const MAX_SLOTS: u32 = 65536;
/// File descriptors that travel with `SHM_ATTACH`: ring memfd, `data_ready`, `space_ready`.
pub const SHM_ATTACH_FDS: usize = 3;

/// Size of the ring memfd: `RING_HEADER_BYTES + slot_size x slot_count`; `None` on
/// overflow.
#[must_use]
pub fn ring_bytes(slot_size: u32, slot_count: u32) -> Option<u64> {
    u64::from(slot_size)
        .checked_mul(u64::from(slot_count))?
        .checked_add(RING_HEADER_BYTES as u64)
}

/// Byte offset of slot `index` (counting from 0 for the whole episode) in the ring:
/// `RING_HEADER_BYTES + (index mod slot_count) x slot_size`; `None` when `slot_count` is 0
/// or on overflow.
#[must_use]
pub fn slot_offset(index: u64, slot_size: u32, slot_count: u32) -> Option<u64> {
    let i = index.checked_rem(u64::from(slot_count))?;
    i.checked_mul(u64::from(slot_size))?
        .checked_add(RING_HEADER_BYTES as u64)
}

/// The smallest valid `slot_size` for records of `record_len` bytes
/// (`RECORD_HEADER_BYTES + step bytes`): `64 + record_len` rounded up to a multiple of 64;
/// `None` when that exceeds `u32`.
#[must_use]
pub fn min_slot_size(record_len: usize) -> Option<u32> {
    let need = record_len.checked_add(SLOT_MIN_OVERHEAD)?;
    let align = SLOT_ALIGN as usize;
    let rounded = need.checked_add(align - 1)? / align * align;
    u32::try_from(rounded).ok()
}

fn bad(message: String) -> ProtoError {
    ProtoError::BadShm { message }
}

/// Check an `SHM_ATTACH` geometry: `slot_size` a multiple of 64, at least 64 + one record
/// (`record_len = RECORD_HEADER_BYTES + step bytes`), at most `max_frame_bytes`;
/// `slot_count` in `2..=65536`; the ring size representable.
///
/// # Errors
/// [`ProtoError::BadShm`] (`BAD_SHM`) naming the value and the rule.
pub fn validate_geometry(
    slot_size: u32,
    slot_count: u32,
    record_len: usize,
    max_frame_bytes: u32,
) -> Result<(), ProtoError> {
    if !(MIN_SLOTS..=MAX_SLOTS).contains(&slot_count) {
        return Err(bad(format!(
            "SHM_ATTACH slot_count {slot_count} is outside {MIN_SLOTS}..={MAX_SLOTS}"
        )));
    }
    if slot_size % SLOT_ALIGN != 0 {
        return Err(bad(format!(
            "SHM_ATTACH slot_size {slot_size} is not a multiple of {SLOT_ALIGN}"
        )));
    }
    let min = record_len.saturating_add(SLOT_MIN_OVERHEAD);
    if (slot_size as usize) < min {
        return Err(bad(format!(
            "SHM_ATTACH slot_size {slot_size} is smaller than {SLOT_MIN_OVERHEAD} + one timestep record \
             ({record_len} bytes) = {min}"
        )));
    }
    if slot_size > max_frame_bytes {
        return Err(bad(format!(
            "SHM_ATTACH slot_size {slot_size} exceeds max_frame_bytes {max_frame_bytes}"
        )));
    }
    if ring_bytes(slot_size, slot_count).is_none() {
        return Err(bad(format!(
            "SHM_ATTACH: a ring of {slot_count} slots of {slot_size} bytes does not fit u64"
        )));
    }
    Ok(())
}

/// The identification fields at the start of the ring header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingHeader {
    pub slot_size: u32,
    pub slot_count: u32,
}

impl RingHeader {
    /// `magic | version | slot_size | slot_count`, little-endian, [`RING_IDENT_BYTES`]
    /// bytes, to be written at offset 0 of the ring.
    #[must_use]
    pub fn encode(&self) -> [u8; RING_IDENT_BYTES] {
        let mut out = [0u8; RING_IDENT_BYTES];
        out[OFFSET_MAGIC..OFFSET_MAGIC + 8].copy_from_slice(&RING_MAGIC);
        out[OFFSET_VERSION..OFFSET_VERSION + 4].copy_from_slice(&RING_VERSION.to_le_bytes());
        out[OFFSET_SLOT_SIZE..OFFSET_SLOT_SIZE + 4].copy_from_slice(&self.slot_size.to_le_bytes());
        out[OFFSET_SLOT_COUNT..OFFSET_SLOT_COUNT + 4]
            .copy_from_slice(&self.slot_count.to_le_bytes());
        out
    }

    /// Parse the identification fields (a copy of the ring's first bytes), checking the
    /// magic and the version; the geometry is returned as found.
    ///
    /// # Errors
    /// [`ProtoError::BadShm`] for a short buffer, a wrong magic or version.
    pub fn parse(bytes: &[u8]) -> Result<Self, ProtoError> {
        if bytes.len() < RING_IDENT_BYTES {
            return Err(bad(format!(
                "ring header is {} bytes, needs {RING_IDENT_BYTES}",
                bytes.len()
            )));
        }
        let magic: [u8; 8] = array_at(bytes, OFFSET_MAGIC);
        if magic != RING_MAGIC {
            return Err(bad(format!(
                "ring magic is {:?} ({}), expected \"WSHRING1\"",
                String::from_utf8_lossy(&magic),
                hex(&magic)
            )));
        }
        let version = u32::from_le_bytes(array_at(bytes, OFFSET_VERSION));
        if version != RING_VERSION {
            return Err(bad(format!(
                "ring version is {version}, expected {RING_VERSION}"
            )));
        }
        Ok(Self {
            slot_size: u32::from_le_bytes(array_at(bytes, OFFSET_SLOT_SIZE)),
            slot_count: u32::from_le_bytes(array_at(bytes, OFFSET_SLOT_COUNT)),
        })
    }

    /// Check that the header announces the geometry `SHM_ATTACH` did.
    ///
    /// # Errors
    /// [`ProtoError::BadShm`] naming both values.
    pub fn check_matches(&self, slot_size: u32, slot_count: u32) -> Result<(), ProtoError> {
        if self.slot_size != slot_size {
            return Err(bad(format!(
                "ring header slot_size {} differs from SHM_ATTACH slot_size {slot_size}",
                self.slot_size
            )));
        }
        if self.slot_count != slot_count {
            return Err(bad(format!(
                "ring header slot_count {} differs from SHM_ATTACH slot_count {slot_count}",
                self.slot_count
            )));
        }
        Ok(())
    }
}

/// A slot's header: `len` (bytes of records that follow) and `count` (timesteps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotHeader {
    pub len: u32,
    pub count: u32,
}

impl SlotHeader {
    /// The 8 bytes at the start of a slot.
    #[must_use]
    pub fn encode(&self) -> [u8; SLOT_HEADER_BYTES] {
        let mut out = [0u8; SLOT_HEADER_BYTES];
        out[..4].copy_from_slice(&self.len.to_le_bytes());
        out[4..].copy_from_slice(&self.count.to_le_bytes());
        out
    }

    /// Decode a copy of the 8 bytes at the start of a slot.
    #[must_use]
    pub fn decode(bytes: [u8; SLOT_HEADER_BYTES]) -> Self {
        Self {
            len: u32::from_le_bytes(array_at(&bytes, 0)),
            count: u32::from_le_bytes(array_at(&bytes, 4)),
        }
    }

    /// The consumer's checks of a slot header (slot `index` of the episode): `count >= 1`,
    /// `8 + len <= slot_size` and `len == count x record_len`. Returns `len` as `usize`.
    ///
    /// # Errors
    /// [`ProtoError::BadShm`] naming the slot and values.
    pub fn check(
        &self,
        index: u64,
        slot_size: u32,
        record_len: usize,
    ) -> Result<usize, ProtoError> {
        let len = self.len as usize;
        if len.saturating_add(SLOT_HEADER_BYTES) > slot_size as usize {
            return Err(bad(format!(
                "ring slot {index}: len {} exceeds slot_size {slot_size} (with the \
                 {SLOT_HEADER_BYTES}-byte slot header)",
                self.len
            )));
        }
        if self.count == 0 {
            return Err(bad(format!("ring slot {index}: count 0 (must be >= 1)")));
        }
        if (self.count as usize).checked_mul(record_len) != Some(len) {
            return Err(bad(format!(
                "ring slot {index}: len {} does not match count {} x record {record_len} bytes",
                self.len, self.count
            )));
        }
        Ok(len)
    }
}
