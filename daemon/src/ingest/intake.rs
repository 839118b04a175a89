//! An open episode's intake: every check of a `TIMESTEP_BATCH` (sizes, sequence, values,
//! the episode's byte limit), whichever transport brought it (the socket or the
//! shared-memory ring), and handing accepted records to the episode's writer.

use std::sync::atomic::Ordering;

use wshard_ingest_proto::{ErrorCode, Frame, StepValues, TimestepBatch, T_NS_OFFSET};

use crate::registry::Registration;
use crate::session::Session;

/// What a connection holds of its open episode, besides the transport.
pub(super) struct Intake {
    session: Session,
    /// The episode's entry in the registry (status, metrics, stop requests); dropped after
    /// the episode is finalized.
    registration: Registration,
    /// The seq expected next.
    next_seq: u64,
    /// Timestep record bytes accepted so far.
    bytes: u64,
    /// `limits.max_episode_wire_bytes`.
    max_bytes: u64,
    /// The schema's step payload size.
    step_payload: usize,
    /// `bool` elements and `t_ns` order (boxed: it is large, and the connection's states
    /// should stay small).
    values: Box<StepValues>,
    /// `t_ns` of the first timestep accepted.
    first_t_ns: Option<i64>,
}

impl Intake {
    /// The intake of a just-opened episode (nothing received yet).
    pub(super) fn new(
        session: Session,
        registration: Registration,
        step_payload: usize,
        values: Box<StepValues>,
        max_bytes: u64,
    ) -> Self {
        Self {
            session,
            registration,
            next_seq: 0,
            bytes: 0,
            max_bytes,
            step_payload,
            values,
            first_t_ns: None,
        }
    }

    /// `t_ns` of the first and of the last timestep accepted.
    pub(super) fn t_range(&self) -> (Option<i64>, Option<i64>) {
        (self.first_t_ns, self.values.last().map(|(_, t)| t))
    }

    /// The episode's session.
    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// The episode's entry in the registry.
    pub(super) fn registration(&self) -> &Registration {
        &self.registration
    }

    /// The episode id.
    pub(super) fn episode_id(&self) -> &str {
        &self.session.shared().schema.episode_id
    }

    /// The seq expected next.
    pub(super) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The schema's step payload size.
    pub(super) fn step_payload(&self) -> usize {
        self.step_payload
    }

    /// Leave: the session to finalize, and the registration to drop once it is.
    pub(super) fn into_parts(self) -> (Session, Registration) {
        (self.session, self.registration)
    }

    /// A records buffer the writer is done with, to receive the next batch into.
    pub(super) fn recycled_records(&self) -> Option<Vec<u8>> {
        self.session.recycled_records()
    }

    /// Check `batch` like a `TIMESTEP_BATCH` (sizes, sequence, gaps when `allow_gap`,
    /// values, the episode byte limit) and hand it to the episode's writer.
    ///
    /// # Errors
    /// The `ERROR` frame to answer with.
    pub(super) fn submit(&mut self, batch: TimestepBatch, allow_gap: bool) -> Result<(), Frame> {
        let count = self.accept(&batch, allow_gap)?;
        self.send_records(batch.into_records(), count)
    }

    /// The checks of [`Intake::submit`]; on success the batch counts as accepted (the
    /// expected seq and the episode's bytes move on) and its step count is returned. The
    /// caller must then send its records with [`Intake::send_records`], alone or appended
    /// to the records of the batches accepted right before it (no seq gap between them).
    ///
    /// # Errors
    /// The `ERROR` frame to answer with; nothing was accepted.
    pub(super) fn accept(&mut self, batch: &TimestepBatch, allow_gap: bool) -> Result<u64, Frame> {
        let max_bytes = self.max_bytes;
        if self.session.shared().is_failed() {
            let why = self
                .session
                .shared()
                .failure()
                .map(|f| f.to_string())
                .unwrap_or_default();
            return Err(Frame::error(
                ErrorCode::Storage,
                format!("episode failed earlier, frame refused: {why}"),
            ));
        }
        let next_seq = self.next_seq;
        let mark = batch
            .steps(self.step_payload)
            .and_then(|steps| {
                if allow_gap && batch.first_seq() > next_seq {
                    Ok(steps)
                } else {
                    batch.check_sequence(next_seq).map(|()| steps)
                }
            })
            .and_then(|steps| self.values.check(steps))
            .map_err(|e| e.to_error_frame())?;
        let dropped = batch.first_seq().saturating_sub(next_seq);
        if batch
            .first_seq()
            .checked_add(u64::from(batch.count()))
            .is_none()
        {
            // Only a gap can get there: seqs stay below u64::MAX, so that the seq expected
            // next always exists and no seq is accepted twice.
            return Err(Frame::error(
                ErrorCode::Sequence,
                format!(
                    "TIMESTEP seq {}: a batch of {} runs past the largest seq",
                    batch.first_seq(),
                    batch.count()
                ),
            ));
        }
        let size = batch.records().len() as u64;
        if self.bytes.saturating_add(size) > max_bytes {
            return Err(Frame::error(
                ErrorCode::Limit,
                format!("TIMESTEP seq {}: the episode's timesteps would reach {} wire bytes, limits.max_episode_wire_bytes is {max_bytes}", batch.first_seq(), self.bytes + size),
            ));
        }
        self.values.commit(mark);
        if self.first_t_ns.is_none() {
            self.first_t_ns = batch
                .records()
                .get(T_NS_OFFSET..T_NS_OFFSET + 8)
                .and_then(|b| b.try_into().ok())
                .map(i64::from_le_bytes);
        }
        self.next_seq = batch.end_seq();
        self.bytes += size;
        if let (Some(ring), Some((_, t))) = (self.session.shared().flight(), self.values.last()) {
            ring.note_t_ns(t);
        }
        if dropped > 0 {
            let stats = &self.session.shared().stats;
            stats.dropped_steps.fetch_add(dropped, Ordering::Relaxed);
            stats.gaps.fetch_add(1, Ordering::Relaxed);
        }
        Ok(u64::from(batch.count()))
    }

    /// Hand accepted records (`steps` timesteps) to the episode's writer; blocks while its
    /// queue is full.
    ///
    /// # Errors
    /// `ERROR{STORAGE}` when the episode's writer can take no more.
    pub(super) fn send_records(&self, records: Vec<u8>, steps: u64) -> Result<(), Frame> {
        if self.session.submit(records, steps) {
            Ok(())
        } else {
            let why = self
                .session
                .shared()
                .failure()
                .map_or_else(|| "the episode's writer stopped".into(), |f| f.to_string());
            Err(Frame::error(ErrorCode::Storage, why))
        }
    }

    /// FLUSH: the writer makes everything received durable and answers with a `DURABLE`
    /// covering it. An episode that failed on storage can no longer get there: the answer
    /// is `ERROR{STORAGE}` again (returned), so the FLUSH never goes unanswered.
    ///
    /// # Errors
    /// The `ERROR` frame to answer with.
    pub(super) fn flush(&self) -> Result<(), Frame> {
        match self.session.shared().failure() {
            Some(why) => Err(Frame::error(
                ErrorCode::Storage,
                format!("FLUSH: the episode failed earlier, nothing more becomes durable: {why}"),
            )),
            None => {
                self.session.flush();
                Ok(())
            }
        }
    }
}
