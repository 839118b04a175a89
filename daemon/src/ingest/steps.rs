//! What a connection does with an open episode's timesteps, FLUSH and their answers: every
//! check of a `TIMESTEP_BATCH` (sizes, sequence, values, the episode's byte limit), whichever
//! transport brought it (the socket or the shared-memory ring), and handing accepted records
//! to the episode's writer.

use std::sync::atomic::Ordering;

use wshard_ingest_proto::{ErrorCode, Frame};

use super::connection::{Connection, State};

impl Connection {
    /// Check `batch` like a `TIMESTEP_BATCH` (sizes, sequence, gaps when `allow_gap`,
    /// values, the episode byte limit) and hand it to the episode's writer.
    pub(super) fn submit(
        &mut self,
        batch: wshard_ingest_proto::TimestepBatch,
        allow_gap: bool,
    ) -> Result<(), Frame> {
        let count = self.accept(&batch, allow_gap)?;
        self.send_records(batch.into_records(), count)
    }

    /// The checks of [`Connection::submit`]; on success the batch counts as accepted (the
    /// expected seq and the episode's bytes move on) and its step count is returned. The
    /// caller must then send its records with [`Connection::send_records`], alone or
    /// appended to the records of the batches accepted right before it (no seq gap between
    /// them).
    pub(super) fn accept(
        &mut self,
        batch: &wshard_ingest_proto::TimestepBatch,
        allow_gap: bool,
    ) -> Result<u64, Frame> {
        let max_bytes = self.ctx.limits.max_episode_wire_bytes;
        let State::Recording {
            session,
            next_seq,
            bytes,
            step_payload,
            values,
            ..
        } = &mut self.state
        else {
            return Err(Frame::error(ErrorCode::NotOpen, "no open episode"));
        };
        if session.shared().is_failed() {
            let why = session
                .shared()
                .failure()
                .map(|f| f.to_string())
                .unwrap_or_default();
            return Err(Frame::error(
                ErrorCode::Storage,
                format!("episode failed earlier, frame refused: {why}"),
            ));
        }
        let mark = batch
            .steps(*step_payload)
            .and_then(|steps| {
                if allow_gap && batch.first_seq() > *next_seq {
                    Ok(steps)
                } else {
                    batch.check_sequence(*next_seq).map(|()| steps)
                }
            })
            .and_then(|steps| values.check(steps))
            .map_err(|e| e.to_error_frame())?;
        let dropped = batch.first_seq().saturating_sub(*next_seq);
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
        if bytes.saturating_add(size) > max_bytes {
            return Err(Frame::error(
                ErrorCode::Limit,
                format!("TIMESTEP seq {}: the episode's timesteps would reach {} wire bytes, limits.max_episode_wire_bytes is {max_bytes}", batch.first_seq(), *bytes + size),
            ));
        }
        values.commit(mark);
        *next_seq = batch.end_seq();
        *bytes += size;
        if dropped > 0 {
            let stats = &session.shared().stats;
            stats.dropped_steps.fetch_add(dropped, Ordering::Relaxed);
            stats.gaps.fetch_add(1, Ordering::Relaxed);
        }
        Ok(u64::from(batch.count()))
    }

    /// Hand accepted records (`steps` timesteps) to the episode's writer; blocks while its
    /// queue is full.
    pub(super) fn send_records(&self, records: Vec<u8>, steps: u64) -> Result<(), Frame> {
        let State::Recording { session, .. } = &self.state else {
            return Err(Frame::error(ErrorCode::NotOpen, "no open episode"));
        };
        if session.submit(records, steps) {
            Ok(())
        } else {
            let why = session
                .shared()
                .failure()
                .map_or_else(|| "the episode's writer stopped".into(), |f| f.to_string());
            Err(Frame::error(ErrorCode::Storage, why))
        }
    }

    /// FLUSH: the writer makes everything received durable and answers with a `DURABLE`
    /// covering it. An episode that failed on storage can no longer get there: it is
    /// answered `ERROR{STORAGE}` again, so the FLUSH never goes unanswered.
    pub(super) fn flush(&self) {
        let State::Recording { session, .. } = &self.state else {
            return;
        };
        match session.shared().failure() {
            Some(why) => self.error(
                ErrorCode::Storage,
                format!("FLUSH: the episode failed earlier, nothing more becomes durable: {why}"),
            ),
            None => session.flush(),
        }
    }
}
