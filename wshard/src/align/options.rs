//! What an aligned view is asked for: the clock, each channel's policy, staleness, and what
//! to do with rows holding an invalid value.

/// How a channel's value at a clock time is taken from its stream's samples.
///
/// At a timestamp that several samples share, the last of them (in stream order) is the
/// sample at that time, for every policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// The last sample at or before the clock time (causal; the default).
    #[default]
    Hold,
    /// The sample closest to the clock time; at equal distance the earlier one.
    Nearest,
    /// Linear interpolation between the last sample at or before and the first sample at
    /// or after the clock time (a sample exactly at the clock time is taken as it is).
    /// Numeric channels only; needs a sample on each side.
    Linear,
}

impl Policy {
    /// `hold`, `nearest`, `linear`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hold => "hold",
            Self::Nearest => "nearest",
            Self::Linear => "linear",
        }
    }

    /// Parse `hold`, `nearest` or `linear`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Hold, Self::Nearest, Self::Linear]
            .into_iter()
            .find(|p| p.as_str() == s)
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The times of the aligned rows.
#[derive(Clone, Debug, PartialEq)]
pub enum Clock {
    /// One row per step of this stream, at its timestamps.
    Stream(String),
    /// A fixed rate: rows at `start + round(k * 1e9 / hz)` ns for k = 0, 1, ... while
    /// `<= end`. `start` / `end` default to the first / last timestamp of any stream of
    /// the episode.
    Rate {
        hz: f64,
        start_ns: Option<i64>,
        end_ns: Option<i64>,
    },
}

impl Clock {
    /// A fixed rate over the whole episode.
    #[must_use]
    pub fn rate(hz: f64) -> Self {
        Self::Rate {
            hz,
            start_ns: None,
            end_ns: None,
        }
    }
}

/// What happens to a row where some value is invalid (no sample, or staler than
/// `max_staleness_ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InvalidRows {
    /// Keep the row; each column's validity mask says which values are invalid.
    #[default]
    Mask,
    /// Drop the row.
    Drop,
}

/// Options of an aligned view.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignOptions {
    pub clock: Clock,
    /// Policy of every channel not named in `policies`.
    pub default_policy: Policy,
    /// Per-channel policies: the key is `STREAM/CHANNEL`, or a channel name that only one
    /// stream has.
    pub policies: Vec<(String, Policy)>,
    /// A value whose source sample is further than this from the row's time is invalid
    /// (a distance exactly equal is valid). `None`: any distance.
    pub max_staleness_ns: Option<u64>,
    pub invalid_rows: InvalidRows,
    /// The channels to align (keys as for `policies`); `None`: every channel of every
    /// stream.
    pub channels: Option<Vec<String>>,
    /// Fill each column's values; when false only the source rows, timestamps and
    /// validity are computed (to gather the values elsewhere, e.g. lazily).
    pub gather_values: bool,
}

impl AlignOptions {
    /// Every channel on `clock`, `hold`, no staleness limit, invalid values masked.
    #[must_use]
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            default_policy: Policy::Hold,
            policies: Vec::new(),
            max_staleness_ns: None,
            invalid_rows: InvalidRows::Mask,
            channels: None,
            gather_values: true,
        }
    }

    /// Builder: the policy of one channel.
    #[must_use]
    pub fn with_policy(mut self, channel: impl Into<String>, policy: Policy) -> Self {
        self.policies.push((channel.into(), policy));
        self
    }

    /// Builder: the staleness limit.
    #[must_use]
    pub fn with_max_staleness_ns(mut self, ns: u64) -> Self {
        self.max_staleness_ns = Some(ns);
        self
    }

    /// Builder: what to do with invalid rows.
    #[must_use]
    pub fn with_invalid_rows(mut self, invalid_rows: InvalidRows) -> Self {
        self.invalid_rows = invalid_rows;
        self
    }
}
