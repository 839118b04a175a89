//! [`EpisodeWriter`]: pushing timesteps of one open episode.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use wshard_ingest_proto::ring::{self, SLOT_ALIGN, SLOT_HEADER_BYTES};
use wshard_ingest_proto::{
    Frame, OpenEpisode, Outcome, RingPolicy, BATCH_HEADER_BYTES, LEN_BYTES, RECORD_HEADER_BYTES,
};

use crate::client::Client;
use crate::error::{ClientError, Result};
use crate::shm::Producer;
use crate::transport::Transport;

mod counters;
mod event;
mod pending;
mod trigger;

/// Most slots of a ring when [`Transport::Shm`] leaves it to the client.
pub const DEFAULT_SHM_SLOTS: u32 = 64;
/// Fewest slots of a ring when [`Transport::Shm`] leaves it to the client.
pub const MIN_DEFAULT_SHM_SLOTS: u32 = 8;
/// The ring size the default slot count aims at: 64 slots of small records, but no more
/// than this in all once a slot holds large records (camera frames), down to
/// [`MIN_DEFAULT_SHM_SLOTS`]. The server maps the whole ring, so it counts in its memory.
pub const DEFAULT_SHM_RING_BYTES: u64 = 16 << 20;

/// The default slot count for slots of `slot_size` bytes:
/// `clamp(ceil(16 MiB / slot_size), 8, 64)`.
#[must_use]
pub fn default_slot_count(slot_size: u32) -> u32 {
    let fit = DEFAULT_SHM_RING_BYTES.div_ceil(u64::from(slot_size.max(1)));
    u32::try_from(fit)
        .unwrap_or(u32::MAX)
        .clamp(MIN_DEFAULT_SHM_SLOTS, DEFAULT_SHM_SLOTS)
}

/// Record bytes a default slot is sized for (at least one record).
const DEFAULT_SLOT_RECORD_BYTES: usize = 256 * 1024;

/// The default `slot_size` for records of `record_len` bytes: room for
/// `max(1, 256 KiB / record_len)` records, rounded up to 64, at least the protocol's
/// minimum, and (rounded down to 64) at most `max_frame_bytes`.
fn default_slot_bytes(record_len: usize, max_frame_bytes: u32) -> u32 {
    let steps = (DEFAULT_SLOT_RECORD_BYTES / record_len.max(1)).max(1);
    let want = steps
        .saturating_mul(record_len)
        .saturating_add(SLOT_HEADER_BYTES);
    let align = SLOT_ALIGN as usize;
    let rounded = want.saturating_add(align - 1) / align * align;
    let min = ring::min_slot_size(record_len).map_or(u32::MAX, |m| m);
    let cap = max_frame_bytes / SLOT_ALIGN * SLOT_ALIGN;
    u32::try_from(rounded).unwrap_or(u32::MAX).max(min).min(cap)
}

/// One timestep for [`EpisodeWriter::push_batch`].
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// Timestamp, written to `time/timestamps_ns`.
    pub t_ns: i64,
    /// Reward of the step.
    pub reward: f32,
    /// Whether the episode ends with this step (stored as 0/1).
    pub done: bool,
    /// One payload per channel, in schema order.
    pub payloads: &'a [&'a [u8]],
}

/// What the server reported when the episode closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloseSummary {
    /// `ACCEPTED{CLOSE}.up_to_seq`: timesteps recorded.
    pub timesteps: u64,
    /// Latest `DURABLE.up_to_seq` seen for the episode.
    pub durable_up_to: u64,
    /// Timesteps this client dropped (shared-memory drop policies; 0 otherwise): pushed,
    /// never sent, not recorded.
    pub dropped_steps: u64,
}

/// An open episode on a [`Client`]. Steps are numbered from 0 by the writer and collected
/// into one pending `TIMESTEP_BATCH` frame, written straight into the send buffer; the
/// batch is sent when it reaches `batch_bytes` or `batch_steps`, when its oldest step is
/// older than `batch_delay` at the next push, or on `flush`, `wait_durable`, `push_batch`
/// and `close`.
///
/// Payloads of 64 KiB or more (camera frames) are not copied into the pending batch when
/// the call that pushes them also sends it (every `push_batch`, a `push` that makes the
/// batch due): they go to the socket straight from the caller's buffers, in one vectored
/// write with the rest of the frame. The frames are the same either way.
///
/// After the server refuses anything of the episode (an `ERROR`), the error is returned
/// once and every later call but `close` returns [`ClientError::EpisodeFailed`]: the
/// server's and the writer's seqs no longer agree.
///
/// With [`Transport::Shm`] each batch goes into one slot of the shared-memory ring
/// instead of the socket (so a batch never exceeds a slot); `flush`, `close` and every
/// server answer still use the socket. When the ring is full, pushing blocks until the
/// server frees a slot (or an `ERROR` arrives, or the timeout ends), unless the ring has a
/// drop policy: then timesteps are dropped instead ([`EpisodeWriter::dropped_steps`]), and
/// `flush` / `wait_durable` wait only for timesteps that were sent.
///
/// Dropping the writer without [`EpisodeWriter::close`] sends what is pending and closes
/// the episode as `aborted`, waiting (up to the timeout) for the answer; errors are ignored.
#[derive(Debug)]
pub struct EpisodeWriter<'c> {
    client: &'c mut Client,
    spec: OpenEpisode,
    channel_bytes: Vec<usize>,
    step_bytes: usize,
    /// The pending batch frame (header reserved by `start_batch`), or empty. Within a
    /// `push` / `push_batch` call it may lack the payloads borrowed from the caller (see
    /// [`BORROW_MIN_PAYLOAD_BYTES`]); between calls it holds the whole frame.
    pending: Vec<u8>,
    pending_count: u32,
    pending_since: Option<Instant>,
    /// Seq of the next pushed step; every seq below it was pushed.
    next_seq: u64,
    /// Every seq below it was written to the socket or ring, or dropped.
    sent_seq: u64,
    /// One past the last seq written to the socket or ring (= `sent_seq` unless the
    /// latest batches were dropped): what `flush` waits for.
    published_seq: u64,
    /// Largest batch frame to build, header included: the server's `max_frame_bytes`, or
    /// with a ring what fits one slot.
    max_frame: usize,
    /// The shared-memory ring, when the episode uses [`Transport::Shm`].
    ring: Option<Producer>,
    failed: bool,
    closed: bool,
}

impl<'c> EpisodeWriter<'c> {
    /// The writer of an episode or stream the server just accepted, with its ring attached
    /// when `transport` asks for one (if that fails, the writer's drop closes it
    /// `aborted` and the error is returned).
    pub(crate) fn start(
        client: &'c mut Client,
        spec: OpenEpisode,
        transport: Transport,
    ) -> Result<Self> {
        let mut writer = Self::new(client, spec)?;
        if let Transport::Shm {
            slot_bytes,
            slots,
            policy,
        } = transport
        {
            // On error the writer's Drop closes the episode as `aborted`.
            writer.attach_shm(slot_bytes, slots, policy)?;
        }
        Ok(writer)
    }

    fn new(client: &'c mut Client, spec: OpenEpisode) -> Result<Self> {
        let channel_bytes = spec.channel_step_bytes().map_err(ClientError::Schema)?;
        let step_bytes = spec.step_bytes().map_err(ClientError::Schema)?;
        let max_frame = usize::try_from(client.server_info().max_frame_bytes)
            .unwrap_or(usize::MAX)
            .saturating_add(LEN_BYTES);
        Ok(Self {
            client,
            spec,
            channel_bytes,
            step_bytes,
            pending: Vec::new(),
            pending_count: 0,
            pending_since: None,
            next_seq: 0,
            sent_seq: 0,
            published_seq: 0,
            max_frame,
            ring: None,
            failed: false,
            closed: false,
        })
    }

    /// The schema this episode was opened with.
    #[must_use]
    pub fn spec(&self) -> &OpenEpisode {
        &self.spec
    }

    /// How the timesteps travel: [`Transport::Socket`], or [`Transport::Shm`] with the
    /// ring's actual geometry.
    #[must_use]
    pub fn transport(&self) -> Transport {
        match &self.ring {
            Some(r) => Transport::Shm {
                slot_bytes: r.slot_size(),
                slots: r.slot_count(),
                policy: r.policy(),
            },
            None => Transport::Socket,
        }
    }

    /// Create the ring (0 = default geometry), send `SHM_ATTACH` with its fds and wait for
    /// `ACCEPTED{SHM_ATTACH}`. The policy byte is sent only for drop policies, so that
    /// `block` stays readable by servers that predate it.
    pub(crate) fn attach_shm(
        &mut self,
        slot_bytes: u32,
        slots: u32,
        policy: RingPolicy,
    ) -> Result<()> {
        let record_len = RECORD_HEADER_BYTES.saturating_add(self.step_bytes);
        let max = self.client.server_info().max_frame_bytes;
        let slot_size = match slot_bytes {
            0 => default_slot_bytes(record_len, max),
            n => n,
        };
        let slot_count = match slots {
            0 => default_slot_count(slot_size),
            n => n,
        };
        ring::validate_geometry(slot_size, slot_count, record_len, max)
            .map_err(|e| ClientError::Shm(e.to_string()))?;
        let producer = Producer::create(slot_size, slot_count, policy)?;
        let attaches = self.client.shared().lock().shm_attaches;
        let frame = Frame::ShmAttach {
            slot_size,
            slot_count,
            policy: policy.drops().then_some(policy),
        };
        let r = self.client.send_with_fds(&frame, &producer.fds());
        self.note(r)?;
        let timeout = self.client.options().timeout;
        let r = self
            .client
            .shared()
            .wait("ACCEPTED{SHM_ATTACH}", timeout, |st| {
                (st.shm_attaches > attaches).then_some(())
            });
        self.note(r)?;
        self.max_frame = producer.capacity().saturating_add(BATCH_HEADER_BYTES);
        self.ring = Some(producer);
        Ok(())
    }

    /// Payload bytes of one timestep (all channels).
    #[must_use]
    pub fn step_bytes(&self) -> usize {
        self.step_bytes
    }

    /// The seq the next pushed step gets (= steps pushed so far).
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Timesteps dropped so far because the shared-memory ring was full (drop policies;
    /// always 0 for the socket and [`RingPolicy::Block`]). They were pushed (their seqs
    /// are used) but never sent: the server records them as a gap.
    #[must_use]
    pub fn dropped_steps(&self) -> u64 {
        self.ring.as_ref().map_or(0, Producer::dropped_steps)
    }

    /// Batches (one ring slot's worth each) dropped so far; see
    /// [`EpisodeWriter::dropped_steps`].
    #[must_use]
    pub fn dropped_batches(&self) -> u64 {
        self.ring.as_ref().map_or(0, Producer::dropped_batches)
    }

    /// One past the last seq sent to the server (on the socket or through the ring):
    /// [`EpisodeWriter::next_seq`] less what is pending and, at the end, what was dropped.
    #[must_use]
    pub fn published_seq(&self) -> u64 {
        self.published_seq
    }

    /// Every timestep with `seq < durable_seq()` is on stable storage, as of the latest
    /// `DURABLE` the reader thread has seen (or, with a drop policy, was dropped). Never
    /// blocks, never fails.
    #[must_use]
    pub fn durable_seq(&self) -> u64 {
        self.client.shared().lock().durable
    }

    fn check_usable(&mut self) -> Result<()> {
        if self.failed {
            return Err(ClientError::EpisodeFailed);
        }
        let r = self.client.check_usable();
        if let Err(ClientError::Server { .. }) = &r {
            self.failed = true;
        }
        r
    }

    /// Mark the episode failed when a server `ERROR` ends a wait.
    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(ClientError::Server { .. }) = &r {
            self.failed = true;
        }
        r
    }

    fn check_payloads(&self, payloads: &[&[u8]]) -> Result<()> {
        if payloads.len() != self.channel_bytes.len() {
            return Err(ClientError::PayloadCount {
                expected: self.channel_bytes.len(),
                got: payloads.len(),
            });
        }
        for (i, (p, &want)) in payloads.iter().zip(&self.channel_bytes).enumerate() {
            if p.len() != want {
                return Err(ClientError::SchemaMismatch {
                    index: i,
                    channel: self.spec.channels[i].name.clone(),
                    expected: want,
                    got: p.len(),
                });
            }
        }
        Ok(())
    }

    /// Push one timestep; `payloads` are the channels' payloads in schema order. Returns
    /// its seq. The step is sent with the pending batch (see the type's docs).
    ///
    /// # Errors
    /// [`ClientError::PayloadCount`] / [`ClientError::SchemaMismatch`] (nothing queued);
    /// [`ClientError::Server`] for an `ERROR` the server sent since the last call, then
    /// [`ClientError::EpisodeFailed`]; [`ClientError::Io`] / [`ClientError::Closed`] when
    /// the connection is gone.
    pub fn push(&mut self, t_ns: i64, reward: f32, done: bool, payloads: &[&[u8]]) -> Result<u64> {
        self.check_usable()?;
        self.check_payloads(payloads)?;
        self.append_and_send_if_due(t_ns, reward, done, payloads)
    }

    /// [`EpisodeWriter::push`] with all channels' payloads already concatenated in schema
    /// order.
    ///
    /// # Errors
    /// [`ClientError::SchemaMismatch`] (channel `"*"`) when `payload` is not exactly one
    /// step; otherwise as [`EpisodeWriter::push`].
    pub fn push_packed(
        &mut self,
        t_ns: i64,
        reward: f32,
        done: bool,
        payload: &[u8],
    ) -> Result<u64> {
        self.check_usable()?;
        if payload.len() != self.step_bytes {
            return Err(ClientError::SchemaMismatch {
                index: self.channel_bytes.len(),
                channel: "*".into(),
                expected: self.step_bytes,
                got: payload.len(),
            });
        }
        self.append_and_send_if_due(t_ns, reward, done, &[payload])
    }

    /// Push several steps and send them now (with anything pending), without waiting for
    /// durability. All steps are checked before any is queued. Returns their seqs.
    ///
    /// # Errors
    /// As [`EpisodeWriter::push`].
    pub fn push_batch(&mut self, steps: &[Step<'_>]) -> Result<Range<u64>> {
        self.check_usable()?;
        for s in steps {
            self.check_payloads(s.payloads)?;
        }
        let first = self.next_seq;
        // Large payloads are borrowed from `steps` until their batch is sent: by `append`
        // when the next step does not fit, or below.
        let mut borrowed = Vec::new();
        for s in steps {
            self.append(s.t_ns, s.reward, s.done, s.payloads, &mut borrowed)?;
        }
        self.send_pending_with(&mut borrowed)?;
        Ok(first..self.next_seq)
    }

    /// Send what is pending plus `FLUSH`, and wait until a `DURABLE` covers every step
    /// pushed (with a drop policy: every step sent, [`EpisodeWriter::published_seq`]). Returns
    /// the durable `up_to_seq`.
    ///
    /// # Errors
    /// [`ClientError::Server`] when the server refused something of the episode,
    /// [`ClientError::Timeout`], [`ClientError::Closed`], [`ClientError::Io`],
    /// [`ClientError::EpisodeFailed`].
    pub fn flush(&mut self) -> Result<u64> {
        self.check_usable()?;
        self.send_pending()?;
        let r = self.client.send(&Frame::Flush);
        self.note(r)?;
        self.wait_durable_up_to(self.published_seq, "DURABLE after FLUSH")
    }

    /// Wait until timestep `seq` is durable (a `DURABLE` with `up_to_seq > seq`). Sends the
    /// pending batch if `seq` is in it, but no `FLUSH`: the server's fsync policy decides
    /// when (in `chunk` durability that is when a chunk is finalized; use
    /// [`EpisodeWriter::flush`] to force it). With a drop policy `seq` may have been
    /// dropped; the wait then ends once every step sent up to it is durable (a dropped
    /// step is never durable; [`EpisodeWriter::dropped_steps`] counts them).
    ///
    /// # Errors
    /// [`ClientError::NotPushed`] for a seq not pushed yet; otherwise as
    /// [`EpisodeWriter::flush`].
    pub fn wait_durable(&mut self, seq: u64) -> Result<()> {
        self.check_usable()?;
        if seq >= self.next_seq {
            return Err(ClientError::NotPushed {
                seq,
                next_seq: self.next_seq,
            });
        }
        if seq >= self.sent_seq {
            self.send_pending()?;
        }
        let up_to = (seq + 1).min(self.published_seq);
        self.wait_durable_up_to(up_to, "DURABLE").map(|_| ())
    }

    fn wait_durable_up_to(&mut self, up_to: u64, what: &'static str) -> Result<u64> {
        let timeout = self.client.options().timeout;
        let r = self.client.shared().wait(what, timeout, |st| {
            (st.durable >= up_to).then_some(st.durable)
        });
        self.note(r)
    }

    /// Send what is pending (unless the episode failed) and `CLOSE`, then wait for
    /// `ACCEPTED{CLOSE}`. The connection can open another episode afterwards.
    ///
    /// # Errors
    /// [`ClientError::Server`] for an `ERROR` not yet reported or one answering the close
    /// (the `CLOSE` is sent regardless, so the server ends the episode);
    /// [`ClientError::Timeout`], [`ClientError::Closed`], [`ClientError::Io`].
    pub fn close(mut self, outcome: Outcome) -> Result<CloseSummary> {
        self.close_inner(outcome)
    }

    fn close_inner(&mut self, outcome: Outcome) -> Result<CloseSummary> {
        self.closed = true;
        // Errors already reported by the server are returned after the CLOSE went out.
        let earlier = self.client.shared().take_error();
        if self.client.shared().lock().stopped {
            // The server already finalized this episode (`ERROR{STOPPED}`); a CLOSE would
            // only earn a `NOT_OPEN` that poisons the next call.
            return Err(earlier.unwrap_or_else(|| ClientError::Server {
                code: wshard_ingest_proto::ErrorCode::Stopped,
                message: "the daemon finalized this episode (reported earlier)".into(),
            }));
        }
        let sent = if self.failed || earlier.is_some() {
            Ok(())
        } else {
            self.send_pending()
        };
        let closes = self.client.shared().lock().closes;
        let sent = sent.and_then(|()| self.client.send(&Frame::Close { outcome }));
        let timeout = self.client.options().timeout;
        let waited = sent.and_then(|()| {
            self.client.shared().wait("ACCEPTED{CLOSE}", timeout, |st| {
                (st.closes > closes).then_some(CloseSummary {
                    timesteps: st.last_close,
                    durable_up_to: st.durable,
                    dropped_steps: 0,
                })
            })
        });
        let dropped = self.dropped_steps();
        let waited = waited.map(|s| CloseSummary {
            dropped_steps: dropped,
            ..s
        });
        match (earlier, waited) {
            (Some(e), _) => Err(e),
            // An ERROR that arrived while closing is reported here, not by a later call.
            (None, Ok(summary)) => match self.client.shared().take_error() {
                Some(e) => Err(e),
                None => Ok(summary),
            },
            (None, Err(e)) => Err(e),
        }
    }
}

impl Drop for EpisodeWriter<'_> {
    fn drop(&mut self) {
        if !self.closed
            && !self.client.shared().ended.load(Ordering::Acquire)
            && !self.client.shared().lock().stopped
        {
            let _ = self.close_inner(Outcome::Aborted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ring_is_64_slots_of_small_records_and_at_most_about_16_mib() {
        assert_eq!(default_slot_count(256 * 1024 + 64), 64);
        assert_eq!(default_slot_count(4096), 64);
        // One camera step (2 x 640x480x3 + joints) per slot.
        assert_eq!(default_slot_count(1_843_328), 10);
        assert_eq!(default_slot_count(64 << 20), MIN_DEFAULT_SHM_SLOTS);
        assert_eq!(default_slot_count(0), DEFAULT_SHM_SLOTS);
    }
}
