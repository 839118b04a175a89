//! The byte bound of the queue between a connection and its episode's writer
//! (`queues.max_pending_bytes`), on top of its frame bound (`queues.max_pending_frames`).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How often a blocked [`ByteBudget::acquire`] re-checks that the writer is still there.
const RECHECK: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
struct State {
    used: u64,
    closed: bool,
}

/// Bytes handed to the writer and not yet processed, at most `max` (a single message larger
/// than `max` is let through when nothing else is queued, so any frame the protocol accepts
/// can pass).
#[derive(Debug)]
pub struct ByteBudget {
    max: u64,
    state: Mutex<State>,
    space: Condvar,
}

impl ByteBudget {
    /// A budget of `max` bytes.
    #[must_use]
    pub(crate) fn new(max: u64) -> Self {
        Self {
            max: max.max(1),
            state: Mutex::new(State::default()),
            space: Condvar::new(),
        }
    }

    /// Take `n` bytes, blocking while they do not fit. `false` once the budget is closed
    /// (the writer is gone): nothing was taken.
    pub(crate) fn acquire(&self, n: u64) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if s.closed {
                return false;
            }
            if s.used == 0 || s.used.saturating_add(n) <= self.max {
                s.used = s.used.saturating_add(n);
                return true;
            }
            s = self
                .space
                .wait_timeout(s, RECHECK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Give back `n` bytes (the writer processed them, or they were never sent).
    pub(crate) fn release(&self, n: u64) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.used = s.used.saturating_sub(n);
        drop(s);
        self.space.notify_all();
    }

    /// The writer is gone: wake every waiter, refuse every later acquire.
    pub(crate) fn close(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.closed = true;
        drop(s);
        self.space.notify_all();
    }

    /// Bytes queued now.
    #[must_use]
    pub fn used(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .used
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;

    #[test]
    fn queue_budget_blocks_until_released() {
        let b = Arc::new(ByteBudget::new(100));
        assert!(b.acquire(60));
        assert!(b.acquire(40));
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.acquire(10));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "over budget: must wait");
        b.release(60);
        assert!(waiter.join().unwrap());
        assert_eq!(b.used(), 50);
    }

    #[test]
    fn queue_budget_lets_one_oversized_message_through_alone() {
        let b = ByteBudget::new(10);
        assert!(b.acquire(1000));
        b.release(1000);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn queue_budget_close_wakes_and_refuses() {
        let b = Arc::new(ByteBudget::new(10));
        assert!(b.acquire(10));
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.acquire(5));
        std::thread::sleep(Duration::from_millis(20));
        b.close();
        assert!(!waiter.join().unwrap());
        assert!(!b.acquire(1));
    }
}
