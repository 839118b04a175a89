//! A step's or event's time as MCAP wants it: unsigned nanoseconds for the log and
//! publish times, and Foxglove's `{"sec", "nsec"}` inside the message.

/// Nanoseconds per second.
const NS_PER_S: u64 = 1_000_000_000;

/// A time at or after the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Nanoseconds since the epoch: the message's log time and publish time.
    pub ns: u64,
}

impl Stamp {
    /// `t_ns` as a stamp, or `None` before the epoch.
    pub(crate) fn new(t_ns: i64) -> Option<Self> {
        u64::try_from(t_ns).ok().map(|ns| Self { ns })
    }

    /// Append `{"sec":S,"nsec":N}`.
    pub(crate) fn write_json(self, out: &mut Vec<u8>) {
        use std::io::Write;
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            "{{\"sec\":{},\"nsec\":{}}}",
            self.ns / NS_PER_S,
            self.ns % NS_PER_S
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps() {
        assert_eq!(Stamp::new(-1), None);
        let s = Stamp::new(1_700_000_000_123_456_789).unwrap_or(Stamp { ns: 0 });
        let mut out = Vec::new();
        s.write_json(&mut out);
        assert_eq!(out, br#"{"sec":1700000000,"nsec":123456789}"#);
    }
}
