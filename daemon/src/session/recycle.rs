//! Record buffers going back from the writer to the connection: once the writer has copied
//! a batch's records into the journal and the chunk columns, their `Vec` is kept here for
//! the connection to receive a later batch into, instead of being freed while the
//! connection allocates a fresh one (for large batches each is an `mmap`, page faults and
//! an `munmap`).
//!
//! Bounded: at most `max_buffers` idle buffers holding at most `max_bytes` of capacity
//! together (counted by capacity, not length); a buffer that does not fit is freed. The
//! session sizes it from its queue: `queues.max_pending_frames` buffers and a quarter of
//! `queues.max_pending_bytes`. A buffer comes back with its old contents: whoever takes one
//! overwrites it and keeps only what it wrote (the protocol decoder does).

use std::sync::{Mutex, PoisonError};

#[derive(Debug, Default)]
struct Idle {
    buffers: Vec<Vec<u8>>,
    bytes: u64,
}

/// Idle record buffers of one session.
#[derive(Debug)]
pub(crate) struct RecordPool {
    max_buffers: usize,
    max_bytes: u64,
    idle: Mutex<Idle>,
}

impl RecordPool {
    /// A pool of at most `max_buffers` buffers and `max_bytes` of capacity.
    #[must_use]
    pub(crate) fn new(max_buffers: usize, max_bytes: u64) -> Self {
        Self {
            max_buffers,
            max_bytes,
            idle: Mutex::new(Idle::default()),
        }
    }

    /// The pool for a session whose queue holds `queue_frames` messages and `queue_bytes`
    /// bytes.
    #[must_use]
    pub(crate) fn for_queue(queue_frames: usize, queue_bytes: u64) -> Self {
        Self::new(queue_frames, queue_bytes / 4)
    }

    /// Keep `buf` for reuse; `false` when it was freed instead (the pool is full or `buf`
    /// holds no memory).
    pub(crate) fn put(&self, buf: Vec<u8>) -> bool {
        let cap = buf.capacity() as u64;
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if cap == 0
            || idle.buffers.len() >= self.max_buffers
            || idle.bytes.saturating_add(cap) > self.max_bytes
        {
            return false;
        }
        idle.bytes += cap;
        idle.buffers.push(buf);
        true
    }

    /// An idle buffer (most recently returned first), with its old contents.
    pub(crate) fn take(&self) -> Option<Vec<u8>> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let buf = idle.buffers.pop()?;
        idle.bytes = idle.bytes.saturating_sub(buf.capacity() as u64);
        Some(buf)
    }

    /// Capacity of the idle buffers, in bytes.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn idle_bytes(&self) -> u64 {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn record_pool_bounded_by_count_and_bytes() {
        let pool = RecordPool::new(2, 1000);
        assert!(pool.put(Vec::with_capacity(400)));
        assert!(!pool.put(Vec::with_capacity(700)), "over the byte cap");
        assert!(pool.put(Vec::with_capacity(600)));
        assert_eq!(pool.idle_bytes(), 1000);
        assert!(!pool.put(Vec::with_capacity(1)), "over the buffer cap");
        assert!(!pool.put(Vec::new()), "nothing to keep");
        assert_eq!(pool.take().unwrap().capacity(), 600);
        assert_eq!(pool.idle_bytes(), 400);
        assert_eq!(pool.take().unwrap().capacity(), 400);
        assert!(pool.take().is_none());
        assert_eq!(pool.idle_bytes(), 0);
    }

    #[test]
    fn record_pool_for_queue_is_a_quarter_of_the_byte_budget() {
        let pool = RecordPool::for_queue(8, 4000);
        assert!(!pool.put(Vec::with_capacity(1001)));
        assert!(pool.put(Vec::with_capacity(1000)));
    }
}
