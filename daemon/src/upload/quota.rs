//! The quota's state beyond eviction: after each eviction pass the uploader records how
//! many bytes the data directory still holds against `publish.quota_bytes`. When what is
//! left (open, not yet uploaded and published, or protected episodes: nothing more may be
//! evicted) exceeds the quota, `rolling.quota_policy` applies until it no longer does:
//! `alert` only shows it (status `upload.quota`, `wshardd_quota_exceeded`, a warning in
//! the log), `stop_rolling` also stops rolling recording ([`QuotaWatch::rolling_suspended`]:
//! each connection recording an episode under `[rolling]` finalizes it `interrupted`, and
//! OPEN is refused while `[rolling]` is on), `refuse_windows` also refuses new trigger
//! windows ([`QuotaWatch::windows_refused`], the flight recorder's question).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use serde_json::{json, Value};
use wshardd_config::QuotaPolicy;

/// Shared by the uploader (which records), the writers (rolling) and the control socket.
#[derive(Debug, Default)]
pub struct QuotaWatch {
    /// `rolling.quota_policy` ([`policy_code`]).
    policy: AtomicU8,
    exceeded: AtomicBool,
    /// Bytes of the data directory after the last eviction pass.
    kept_bytes: AtomicU64,
    /// `publish.quota_bytes` (0: no quota).
    quota_bytes: AtomicU64,
    /// Eviction passes that ended over the quota.
    exceeded_passes: AtomicU64,
}

/// The policy as stored.
fn policy_code(p: QuotaPolicy) -> u8 {
    match p {
        QuotaPolicy::Alert => 0,
        QuotaPolicy::StopRolling => 1,
        QuotaPolicy::RefuseWindows => 2,
    }
}

impl QuotaWatch {
    /// Set `rolling.quota_policy` (at startup).
    pub fn set_policy(&self, p: QuotaPolicy) {
        self.policy.store(policy_code(p), Ordering::Release);
    }

    /// The policy in force.
    #[must_use]
    pub fn policy(&self) -> QuotaPolicy {
        match self.policy.load(Ordering::Acquire) {
            1 => QuotaPolicy::StopRolling,
            2 => QuotaPolicy::RefuseWindows,
            _ => QuotaPolicy::Alert,
        }
    }

    /// An eviction pass ended with `kept_bytes` in the data directory against
    /// `quota_bytes` (0: no quota), nothing more being evictable when over it.
    pub fn record(&self, kept_bytes: u64, quota_bytes: u64) {
        let over = quota_bytes > 0 && kept_bytes > quota_bytes;
        self.kept_bytes.store(kept_bytes, Ordering::Relaxed);
        self.quota_bytes.store(quota_bytes, Ordering::Relaxed);
        let was = self.exceeded.swap(over, Ordering::AcqRel);
        if over {
            self.exceeded_passes.fetch_add(1, Ordering::Relaxed);
            if !was {
                tracing::warn!(
                    kept_bytes,
                    quota_bytes,
                    policy = self.policy().as_str(),
                    "quota: the episodes that may not be evicted (open, not yet uploaded, protected) alone exceed publish.quota_bytes"
                );
            }
        } else if was {
            tracing::info!(
                kept_bytes,
                quota_bytes,
                "quota: back under publish.quota_bytes"
            );
        }
    }

    /// Whether what must be kept alone exceeds the quota now.
    #[must_use]
    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Acquire)
    }

    /// `stop_rolling` in force: rolling recording stops (episodes under `[rolling]` are
    /// stopped, new ones refused).
    #[must_use]
    pub fn rolling_suspended(&self) -> bool {
        self.exceeded() && self.policy() == QuotaPolicy::StopRolling
    }

    /// `refuse_windows` in force: the flight recorder refuses new trigger windows.
    #[must_use]
    pub fn windows_refused(&self) -> bool {
        self.exceeded() && self.policy() == QuotaPolicy::RefuseWindows
    }

    /// Eviction passes that ended over the quota.
    #[must_use]
    pub fn exceeded_passes(&self) -> u64 {
        self.exceeded_passes.load(Ordering::Relaxed)
    }

    /// `publish.quota_bytes` as last recorded.
    #[must_use]
    pub fn quota_bytes(&self) -> u64 {
        self.quota_bytes.load(Ordering::Relaxed)
    }

    /// Bytes of the data directory after the last eviction pass.
    #[must_use]
    pub fn kept_bytes(&self) -> u64 {
        self.kept_bytes.load(Ordering::Relaxed)
    }

    /// `status.upload.quota`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "quota_bytes": self.quota_bytes.load(Ordering::Relaxed),
            "kept_bytes": self.kept_bytes(),
            "exceeded": self.exceeded(),
            "policy": self.policy().as_str(),
            "rolling_suspended": self.rolling_suspended(),
            "windows_refused": self.windows_refused(),
            "exceeded_passes": self.exceeded_passes(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_policy_applies_only_while_exceeded() {
        let q = QuotaWatch::default();
        q.set_policy(QuotaPolicy::StopRolling);
        q.record(10, 0);
        assert!(!q.exceeded() && !q.rolling_suspended());
        q.record(11, 10);
        assert!(q.exceeded() && q.rolling_suspended() && !q.windows_refused());
        q.record(9, 10);
        assert!(!q.rolling_suspended());
        q.set_policy(QuotaPolicy::RefuseWindows);
        q.record(11, 10);
        assert!(q.windows_refused() && !q.rolling_suspended());
        assert_eq!(q.exceeded_passes(), 2);
    }
}
