//! The writer thread of a session: appends accepted timesteps to the journal and to the
//! open chunk's columns, group-commits the journal per the fsync policy
//! ([`super::group_commit`]), and seals the chunk when a rotation limit is reached
//! ([`super::rotation`]). A batch is split exactly at the chunk boundary so that journal
//! segment k holds exactly the timesteps of chunk k.
//!
//! Seqs and timesteps: the connection only lets a batch skip seqs when the episode's
//! shared-memory ring has a drop policy. The writer sees the skip as a batch starting past
//! `received_end`, records the gap in the chunk (`time/dropped_seq_ranges`) and, before the
//! batch's first STEPS record, in the journal (GAP), in the segment of the chunk that gets
//! the batch's first timestep. Timesteps keep contiguous global indices (`timesteps`);
//! DURABLE counts in seqs (`received_end`).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::chunk_writer::SealedChunk;
use super::failure::SessionFailure;
use super::group_commit::GroupCommit;
use super::parts::NextPart;
use super::parts::{SplitCause, SplitDone, SplitError, SplitReply, StreamCut};
use super::recycle::RecordPool;
use super::rotation::ChunkRotation;
use super::shared::{FinalStatus, SessionShared};
use super::split::{self, PartPlace, PartTarget};
use super::stats::HEARTBEAT_EVERY;
use crate::chunk::{ChunkColumns, SeqGaps};
use crate::error::StorageError;
use crate::journal::segment::JournalSegment;
use wshard_ingest_proto::{iter_records, RECORD_HEADER_BYTES};
use wshard_storage::layout::EpisodeLayout;

/// A message from the connection to the writer.
pub(crate) enum WriterMsg {
    /// Wire-format timestep records, already checked: sizes exact, seqs consecutive within
    /// the batch and starting at the next seq (or, with a drop policy, after it).
    /// Accepted records; `arrived` is when the connection handed them over, which starts
    /// the interval sync's clock (not when the writer, maybe busy in an fdatasync, gets to
    /// them).
    Steps { records: Vec<u8>, arrived: Instant },
    /// Make everything received durable now, and answer with a `DURABLE` covering it
    /// (even when nothing was left to sync).
    Flush,
    /// Finalize the episode (the session joins the threads to know it is done); with
    /// `answer`, the client's CLOSE gets a `DURABLE` covering everything, as FLUSH does.
    Close { status: FinalStatus, answer: bool },
}

/// When the writer's thread leaves `run`, however it leaves: marks its heartbeat retired
/// and closes the queue's byte budget, so a connection blocked on it returns.
struct RetireHeartbeat(Arc<SessionShared>);

impl Drop for RetireHeartbeat {
    fn drop(&mut self) {
        self.0.stats.retire_heartbeat();
        self.0.queue_budget.close();
    }
}

/// The writer's state.
pub(crate) struct Writer {
    shared: Arc<SessionShared>,
    columns: ChunkColumns,
    journal: Option<JournalSegment>,
    /// One past the last seq received.
    received_end: u64,
    /// Timesteps received: the global index of the next one.
    timesteps: u64,
    /// When the journal is fdatasynced ([`GroupCommit`]).
    group_commit: GroupCommit,
    /// When the open chunk is sealed, and where it goes ([`ChunkRotation`]).
    rotation: ChunkRotation,
    /// Where the records buffers of processed batches go, for the connection to reuse.
    records_pool: Arc<RecordPool>,
    /// The part recorded into (the episode itself until a split, see `super::split`);
    /// `timesteps` counts the part's timesteps, `received_end` the producer's seqs.
    part: PartTarget,
}

impl Writer {
    /// A writer for a new episode, whose journal segment 0 (if any) is already created.
    pub(crate) fn new(
        shared: Arc<SessionShared>,
        journal: Option<JournalSegment>,
        to_chunk_writer: Sender<SealedChunk>,
        recycled: Receiver<Vec<Vec<u8>>>,
        records_pool: Arc<RecordPool>,
    ) -> Self {
        let columns = ChunkColumns::new(shared.schema.clone(), 0, 0);
        let rotation = ChunkRotation::new(
            shared.settings.rotation,
            &shared.schema,
            to_chunk_writer,
            recycled,
        );
        Self {
            part: PartTarget::first(&shared),
            group_commit: GroupCommit::new(shared.settings.fsync),
            rotation,
            shared,
            columns,
            journal,
            received_end: 0,
            timesteps: 0,
            records_pool,
        }
    }

    fn record_len(&self) -> usize {
        RECORD_HEADER_BYTES + self.shared.schema.step_payload_bytes
    }

    /// Run until CLOSE or until the connection drops its sender (then: interrupted).
    ///
    /// Every turn of the loop is a heartbeat (`stats.last_heartbeat_ms`, read by the
    /// systemd watchdog); the loop wakes at least every [`HEARTBEAT_EVERY`] even when idle,
    /// and an early wake-up only runs `on_tick`, which acts on elapsed deadlines alone.
    pub(crate) fn run(mut self, rx: &Receiver<WriterMsg>) {
        let _retire = RetireHeartbeat(self.shared.clone());
        loop {
            self.shared.stats.heartbeat();
            let now = Instant::now();
            let wait = self.next_deadline().map_or(HEARTBEAT_EVERY, |d| {
                d.saturating_duration_since(now).min(HEARTBEAT_EVERY)
            });
            let msg = match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    self.refuse_splits();
                    self.finish(FinalStatus::Interrupted(
                        "client disconnected without CLOSE".into(),
                    ));
                    return;
                }
            };
            let mut next = msg;
            // Group commit: take everything already queued before syncing once.
            while let Some(m) = next {
                self.shared.stats.heartbeat();
                self.shared
                    .stats
                    .queue_depth
                    .store(rx.len() as u64, Ordering::Relaxed);
                match m {
                    WriterMsg::Steps {
                        mut records,
                        arrived,
                    } => {
                        // A part that reached a `[rolling]` bound is cut before the
                        // next batch: no empty part is left when the producer closes.
                        self.roll_if_due();
                        self.on_steps(&mut records, arrived);
                        self.shared.queue_budget.release(records.len() as u64);
                        // Copied into the journal and the columns: the buffer goes back to
                        // the connection (or is freed when the pool is full).
                        self.records_pool.put(records);
                    }
                    WriterMsg::Flush => self.flush(),
                    WriterMsg::Close { status, answer } => {
                        self.refuse_splits();
                        if answer {
                            self.shared.answer_durable(self.received_end);
                        }
                        self.finish(status);
                        return;
                    }
                }
                next = rx.try_recv().ok();
            }
            self.serve_splits();
            self.on_tick();
        }
    }

    /// When the loop must wake up without a message: an interval sync or a time rotation.
    fn next_deadline(&self) -> Option<Instant> {
        let sync = self.group_commit.deadline(&self.shared.stats);
        let rotate = self.rotation.deadline(&self.columns);
        match (sync, rotate) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_tick(&mut self) {
        if self.shared.is_failed() {
            return;
        }
        if self.group_commit.is_due(&self.shared.stats) {
            self.sync_now();
        }
        if self.rotation.is_due(&self.columns) {
            self.rotate();
        }
        // A trigger window's wall-clock deadline passed with this stream silent: what it
        // received goes into a finalized chunk now.
        if self.shared.flight().is_some_and(|r| r.take_seal_now()) && !self.columns.is_empty() {
            self.rotate();
        }
    }

    fn storage_failed(&mut self, e: &StorageError) {
        self.shared.fail(SessionFailure::Storage(e.into()));
        self.journal = None;
    }

    fn on_steps(&mut self, records: &mut [u8], arrived: Instant) {
        if self.shared.is_failed() {
            return;
        }
        let rec_len = self.record_len();
        // The part's seqs start at 0: the journal and the columns see `seq - first_seq`.
        let first_seq = self.part.first_seq;
        split::rebase_seqs(records, rec_len, first_seq);
        let records = &*records;
        let mut rest = records;
        // Seqs the producer dropped before this batch: recorded with its first timestep.
        let mut gap = iter_records(records, self.shared.schema.step_payload_bytes)
            .next()
            .and_then(|s| SeqGaps::between(self.received_end - first_seq, s.seq));
        while !rest.is_empty() {
            // How many records fit in the open chunk.
            let fit = self.rotation.room(&self.columns, rec_len);
            if fit == 0 {
                self.rotate();
                if self.shared.is_failed() {
                    return;
                }
                continue;
            }
            let n = usize::try_from(fit)
                .unwrap_or(usize::MAX)
                .min(rest.len() / rec_len);
            let (now, later) = rest.split_at(n * rec_len);
            if let Some([start, end]) = gap.take() {
                if let Err(e) = self.columns.gaps.push(start, end) {
                    self.shared.fail(SessionFailure::SeqBookkeeping(e));
                    return;
                }
                if let Some(j) = self.journal.as_mut() {
                    if let Err(e) = j.append_gap(start, end) {
                        self.storage_failed(&e);
                        return;
                    }
                }
            }
            if let Some(j) = self.journal.as_mut() {
                if let Err(e) = j.append_steps(now) {
                    self.storage_failed(&e);
                    return;
                }
                self.group_commit.appended(arrived);
            }
            let mut t_range = None;
            for s in iter_records(now, self.shared.schema.step_payload_bytes) {
                self.columns.push(&s);
                self.received_end = s.seq.saturating_add(1).saturating_add(first_seq);
                self.timesteps += 1;
                t_range = Some((t_range.map_or(s.t_ns, |(first, _)| first), s.t_ns));
            }
            if let Some((first, last)) = t_range {
                let payload = (rec_len - RECORD_HEADER_BYTES) as u64;
                self.shared
                    .parts
                    .add_steps(n as u64, payload * n as u64, first, last);
                // A pending trigger window ends before `last`: its last chunk goes to disk
                // now, so the window is in place right after its post-window.
                if self.shared.flight().is_some_and(|r| r.take_seal(last)) {
                    self.rotate();
                    if self.shared.is_failed() {
                        return;
                    }
                }
            }
            rest = later;
        }
    }

    /// FLUSH: make everything received durable now, whatever the fsync policy. With a
    /// journal that is one fdatasync; without one (class `chunk`) the open chunk is sealed
    /// and written, and DURABLE follows the manifest commit. The answer is owed first, so
    /// that the `DURABLE` the sync or the manifest commit sends is the answer (one frame).
    fn flush(&mut self) {
        self.shared.answer_durable(self.received_end);
        if self.journal.is_some() {
            self.sync_now();
        } else if !self.columns.is_empty() && !self.shared.is_failed() {
            self.rotate();
        }
    }

    /// Commit the journal ([`GroupCommit::commit`]) and acknowledge what it covers.
    fn sync_now(&mut self) {
        let Some(j) = self.journal.as_mut() else {
            return;
        };
        match self.group_commit.commit(j, &self.shared.stats) {
            Ok(true) => self.shared.advance_durable(self.received_end),
            Ok(false) => {}
            Err(e) => self.storage_failed(&e),
        }
    }

    /// Rotation: sync the journal, then seal the open chunk and open the next one
    /// ([`ChunkRotation::seal`]).
    fn rotate(&mut self) {
        self.sync_now();
        if self.shared.is_failed() {
            return;
        }
        let sealed = self.rotation.seal(
            &self.shared,
            &self.part,
            &mut self.columns,
            &mut self.journal,
            self.timesteps,
            self.received_end,
        );
        if let Err(failure) = sealed {
            self.shared.fail(failure);
        }
    }

    /// Answer the pending split requests (`split`) with one split.
    fn serve_splits(&mut self) {
        let requests = self.shared.parts.take_requests();
        if requests.is_empty() {
            return;
        }
        let mut own: Option<SplitReply> = None;
        for (cut, r) in requests {
            let reply = match cut {
                // A stream's cut: one per request (its episode serializes them).
                Some(cut) => self.split(SplitCause::Operator, Some(&cut)),
                None => own
                    .get_or_insert_with(|| self.split(SplitCause::Operator, None))
                    .clone(),
            };
            let _ = r.send(reply);
        }
    }

    /// The episode finalizes: a pending split request is answered with that.
    fn refuse_splits(&self) {
        for (_, r) in self.shared.parts.take_requests() {
            let _ = r.send(Err(SplitError::Finalized {
                episode: self.shared.parts.base().to_owned(),
            }));
        }
    }

    /// `[rolling]`: split when the current part has reached a bound. A refused split
    /// stops rolling for the episode (status shows why); recording goes on.
    fn roll_if_due(&mut self) {
        let rolling = self.shared.settings.rolling;
        let parts = self.shared.parts.clone();
        if !rolling.is_on() || !parts.splittable() || parts.rolling_stopped() {
            return;
        }
        let bytes = parts.part_bytes.load(Ordering::Relaxed);
        let Some(bound) = rolling.due(bytes, parts.part_span_ns()) else {
            return;
        };
        match self.split(SplitCause::Rolling(bound), None) {
            Ok(done) => {
                tracing::info!(episode = %parts.base(), finished = %done.finished, recording = %done.recording, "rolling: part finished");
            }
            Err(e) => {
                tracing::warn!(episode = %parts.base(), "rolling stopped for this episode: {e}");
                parts.rolling_failed(&e);
            }
        }
    }

    /// Cut the episode here (see `super::split`): sync the journal, create the next part,
    /// seal the open chunk as the finished part's last (`complete`), record on in the next
    /// part. Nothing is cut when it is refused.
    fn split(&mut self, cause: SplitCause, cut: Option<&StreamCut>) -> SplitReply {
        let parts = self.shared.parts.clone();
        let episode = parts.base().to_owned();
        let failed = |shared: &SessionShared| SplitError::Storage {
            episode: episode.clone(),
            reason: format!(
                "the episode failed earlier: {}",
                shared.failure().map(|f| f.to_string()).unwrap_or_default()
            ),
        };
        if self.shared.is_failed() {
            return Err(failed(&self.shared));
        }
        if self.timesteps == 0 {
            return Err(SplitError::EmptyPart {
                episode,
                part: self.part.id().to_owned(),
            });
        }
        let place = match cut {
            None => {
                let (number, id) = parts.next_id()?;
                let data_dir = self
                    .shared
                    .layout
                    .dir
                    .parent()
                    .unwrap_or_else(|| Path::new("."));
                PartPlace {
                    number,
                    layout: EpisodeLayout::new(data_dir, &id),
                    id,
                    base: episode.clone(),
                }
            }
            Some(c) => PartPlace {
                number: c.number,
                id: c.part.clone(),
                layout: EpisodeLayout::stream(&c.data_dir, &c.part, self.shared.layout.id()),
                base: c.episode.clone(),
            },
        };
        let (number, id, link_base) = (place.number, place.id.clone(), place.base.clone());
        self.sync_now();
        if self.shared.is_failed() {
            return Err(failed(&self.shared));
        }
        let created = split::create_part(&self.shared, &self.part, place, self.received_end)?;
        let (first_t_ns, last_t_ns) = parts.part_t_range();
        let mut finished = std::mem::replace(&mut self.part, created.target);
        if let Some(c) = cut {
            // A stream is cut from its episode's part before `c.number` (the one it
            // records in, also when it joined after earlier cuts).
            finished.number = c.number.saturating_sub(1);
            finished.previous = finished
                .number
                .checked_sub(1)
                .map(|n| super::parts::part_id(&c.episode, n));
        }
        let next = Box::new(NextPart {
            finished_links: finished.links(&link_base, Some(&id)),
            layout: self.part.layout.clone(),
            manifest: created.manifest,
        });
        let old_journal =
            std::mem::replace(&mut self.journal, created.journal).map(|j| j.path().to_path_buf());
        self.timesteps = 0;
        let sealed = self.rotation.seal_split(
            &mut self.columns,
            old_journal,
            self.part.schema.clone(),
            self.received_end,
            next,
        );
        if let Err(f) = sealed {
            self.shared.fail(f);
            return Err(failed(&self.shared));
        }
        parts.cut(number, &id, cause);
        Ok(SplitDone {
            finished: finished.id().to_owned(),
            recording: id,
            first_t_ns,
            last_t_ns,
        })
    }

    /// Final sync, then hand the last chunk and the final status to the chunk writer.
    fn finish(mut self, status: FinalStatus) {
        self.sync_now();
        let journal = self.journal.take().map(|j| j.path().to_path_buf());
        let columns = std::mem::replace(
            &mut self.columns,
            ChunkColumns::new(self.part.schema.clone(), 0, 0),
        );
        if !self.shared.is_failed() {
            let sealed = self
                .rotation
                .seal_last(columns, journal, status, self.received_end);
            if let Err(failure) = sealed {
                self.shared.fail(failure);
            }
        }
        // Dropping the sender (with self) ends the chunk writer once it has drained.
    }
}
