//! [`EpisodeWriter`]: pushing timesteps of one open episode.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use wshard_ingest_proto::{
    finish_batch, push_step_record, start_batch, Frame, OpenEpisode, Outcome, LEN_BYTES,
    RECORD_HEADER_BYTES,
};

use crate::client::Client;
use crate::error::{ClientError, Result};

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
}

/// An open episode on a [`Client`]. Steps are numbered from 0 by the writer and collected
/// into one pending `TIMESTEP_BATCH` frame, written straight into the send buffer; the
/// batch is sent when it reaches `batch_bytes` or `batch_steps`, when its oldest step is
/// older than `batch_delay` at the next push, or on `flush`, `wait_durable`, `push_batch`
/// and `close`.
///
/// After the server refuses anything of the episode (an `ERROR`), the error is returned
/// once and every later call but `close` returns [`ClientError::EpisodeFailed`]: the
/// server's and the writer's seqs no longer agree.
///
/// Dropping the writer without [`EpisodeWriter::close`] sends what is pending and closes
/// the episode as `aborted`, waiting (up to the timeout) for the answer; errors are ignored.
#[derive(Debug)]
pub struct EpisodeWriter<'c> {
    client: &'c mut Client,
    spec: OpenEpisode,
    channel_bytes: Vec<usize>,
    step_bytes: usize,
    /// The pending batch frame (header reserved by `start_batch`), or empty.
    pending: Vec<u8>,
    pending_count: u32,
    pending_since: Option<Instant>,
    /// Seq of the next pushed step; every seq below it was pushed.
    next_seq: u64,
    /// Every seq below it was written to the socket.
    sent_seq: u64,
    /// Largest frame the server accepts, header included.
    max_frame: usize,
    failed: bool,
    closed: bool,
}

impl<'c> EpisodeWriter<'c> {
    pub(crate) fn new(client: &'c mut Client, spec: OpenEpisode) -> Result<Self> {
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
            max_frame,
            failed: false,
            closed: false,
        })
    }

    /// The schema this episode was opened with.
    #[must_use]
    pub fn spec(&self) -> &OpenEpisode {
        &self.spec
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

    /// Every timestep with `seq < durable_seq()` is on stable storage, as of the latest
    /// `DURABLE` the reader thread has seen. Never blocks, never fails.
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

    /// Append one checked step to the pending batch, sending first if it would not fit.
    fn append(&mut self, t_ns: i64, reward: f32, done: bool, payloads: &[&[u8]]) -> Result<u64> {
        let record = RECORD_HEADER_BYTES + self.step_bytes;
        if self.pending_count > 0
            && (self.pending.len() + record > self.max_frame || self.pending_count == u32::MAX)
        {
            self.send_pending()?;
        }
        if self.pending_count == 0 {
            self.pending.clear();
            start_batch(&mut self.pending);
            self.pending_since = Some(Instant::now());
        }
        let seq = self.next_seq;
        push_step_record(&mut self.pending, seq, t_ns, reward, done, payloads);
        self.pending_count += 1;
        self.next_seq += 1;
        Ok(seq)
    }

    fn batch_due(&self) -> bool {
        let o = self.client.options();
        self.pending.len() >= o.batch_bytes
            || self.pending_count as usize >= o.batch_steps
            || match (o.batch_delay, self.pending_since) {
                (Some(d), Some(t)) => t.elapsed() >= d,
                _ => false,
            }
    }

    /// Write the pending batch, if any.
    fn send_pending(&mut self) -> Result<()> {
        if self.pending_count == 0 {
            return Ok(());
        }
        finish_batch(&mut self.pending, self.pending_count)?;
        let r = self.client.write_all(&self.pending);
        self.pending.clear();
        self.pending_count = 0;
        self.pending_since = None;
        self.note(r)?;
        self.sent_seq = self.next_seq;
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
        let seq = self.append(t_ns, reward, done, payloads)?;
        if self.batch_due() {
            self.send_pending()?;
        }
        Ok(seq)
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
        let seq = self.append(t_ns, reward, done, &[payload])?;
        if self.batch_due() {
            self.send_pending()?;
        }
        Ok(seq)
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
        for s in steps {
            self.append(s.t_ns, s.reward, s.done, s.payloads)?;
        }
        self.send_pending()?;
        Ok(first..self.next_seq)
    }

    /// Send what is pending plus `FLUSH`, and wait until a `DURABLE` covers every step
    /// pushed. Returns the durable `up_to_seq`.
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
        self.wait_durable_up_to(self.sent_seq, "DURABLE after FLUSH")
    }

    /// Wait until timestep `seq` is durable (a `DURABLE` with `up_to_seq > seq`). Sends the
    /// pending batch if `seq` is in it, but no `FLUSH`: the server's fsync policy decides
    /// when (in `chunk` durability that is when a chunk is finalized; use
    /// [`EpisodeWriter::flush`] to force it).
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
        self.wait_durable_up_to(seq + 1, "DURABLE").map(|_| ())
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
                })
            })
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
        if !self.closed && !self.client.shared().ended.load(Ordering::Acquire) {
            let _ = self.close_inner(Outcome::Aborted);
        }
    }
}
