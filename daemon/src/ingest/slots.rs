//! Connection slots per peer uid (`limits.max_connections_per_uid`): how many connections
//! each uid holds now, so that one local user cannot take every slot of
//! `limits.max_connections`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The connections each peer uid holds now.
#[derive(Debug, Default)]
pub(crate) struct UidSlots {
    held: Mutex<HashMap<u32, usize>>,
}

/// One connection's slot; given back when dropped (when the connection's thread ends).
#[derive(Debug)]
pub(crate) struct UidSlot {
    /// `None` for a peer whose uid the kernel did not tell: only `max_connections` counts
    /// it.
    owner: Option<(Arc<UidSlots>, u32)>,
}

/// The uid already holds `limit` connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UidLimitReached {
    pub(crate) uid: u32,
    pub(crate) held: usize,
    pub(crate) limit: usize,
}

impl UidSlots {
    /// Take a slot for `uid` unless it holds `limit` already. A peer without credentials
    /// (`uid` `None`) always gets an uncounted slot.
    ///
    /// # Errors
    /// [`UidLimitReached`] when `uid` holds `limit` connections.
    pub(crate) fn take(
        self: &Arc<Self>,
        uid: Option<u32>,
        limit: usize,
    ) -> Result<UidSlot, UidLimitReached> {
        let Some(uid) = uid else {
            return Ok(UidSlot { owner: None });
        };
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = held.entry(uid).or_insert(0);
        if *n >= limit {
            return Err(UidLimitReached {
                uid,
                held: *n,
                limit,
            });
        }
        *n += 1;
        Ok(UidSlot {
            owner: Some((self.clone(), uid)),
        })
    }

    /// How many connections `uid` holds now.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn held(&self, uid: u32) -> usize {
        self.held
            .lock()
            .map_or(0, |h| h.get(&uid).copied().unwrap_or(0))
    }
}

impl Drop for UidSlot {
    fn drop(&mut self) {
        let Some((slots, uid)) = self.owner.take() else {
            return;
        };
        let mut held = slots
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = held.get_mut(&uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_uid_and_given_back() {
        let s = Arc::new(UidSlots::default());
        let a1 = s.take(Some(1000), 2).expect("first");
        let a2 = s.take(Some(1000), 2).expect("second");
        assert_eq!(
            s.take(Some(1000), 2).map(|_| ()),
            Err(UidLimitReached {
                uid: 1000,
                held: 2,
                limit: 2
            })
        );
        // Another uid is not affected.
        let b = s.take(Some(0), 2).expect("other uid");
        assert_eq!((s.held(1000), s.held(0)), (2, 1));
        drop(a1);
        let a3 = s.take(Some(1000), 2).expect("a slot was given back");
        drop((a2, a3, b));
        assert_eq!((s.held(1000), s.held(0)), (0, 0));
        assert!(s.held.lock().expect("lock").is_empty());
    }

    #[test]
    fn peers_without_credentials_are_not_counted() {
        let s = Arc::new(UidSlots::default());
        let slots: Vec<UidSlot> = (0..5)
            .map(|_| s.take(None, 1).expect("uncounted"))
            .collect();
        assert!(s.held.lock().expect("lock").is_empty());
        drop(slots);
    }
}
