//! Why a part of a split episode was cut, for `status` and `episodes`: the control verb
//! `split`, or the `[rolling]` bound the part reached. The same for single- and
//! multi-stream episodes.

use serde_json::{json, Value};

/// What ended a part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutReason {
    /// `split EPISODE` (an operator, the ROS bridge).
    Split,
    /// `[rolling] max_bytes`: the part held that much timestep payload.
    MaxBytes,
    /// `[rolling] max_duration_ms`: the part spanned that much `t_ns`.
    MaxDuration,
}

impl CutReason {
    /// `split`, `max_bytes` or `max_duration_ms` (the config key of the bound).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Split => "split",
            Self::MaxBytes => "max_bytes",
            Self::MaxDuration => "max_duration_ms",
        }
    }

    /// Whether `[rolling]` made the cut.
    #[must_use]
    pub fn is_rolling(self) -> bool {
        self != Self::Split
    }
}

/// The last cut of an episode: the part it finished and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastCut {
    /// The part the cut finished (`EP`, `EP.0001`, ...).
    pub finished: String,
    pub reason: CutReason,
}

impl LastCut {
    /// `{"finished": "EP.0001", "reason": "max_bytes"}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({"finished": self.finished, "reason": self.reason.as_str()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Rolling;

    #[test]
    fn rolling_due_names_the_bound_reached() {
        let both = Rolling {
            max_bytes: 100,
            max_duration_ns: 1_000,
        };
        assert_eq!(both.due(99, 999), None);
        assert_eq!(both.due(100, 0), Some(CutReason::MaxBytes));
        assert_eq!(both.due(0, 1_000), Some(CutReason::MaxDuration));
        // Both reached: the size bound is named.
        assert_eq!(both.due(100, 1_000), Some(CutReason::MaxBytes));
        let off = Rolling::default();
        assert_eq!(off.due(u64::MAX, u64::MAX), None);
        assert_eq!(
            LastCut {
                finished: "ep.0001".into(),
                reason: CutReason::MaxDuration
            }
            .to_json(),
            serde_json::json!({"finished": "ep.0001", "reason": "max_duration_ms"})
        );
        assert!(!CutReason::Split.is_rolling() && CutReason::MaxBytes.is_rolling());
    }
}
