//! Small statistics over repeated measurements.

use std::time::Duration;

/// Median, minimum and maximum of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Stats {
    /// Stats of `samples`; all NaN when there are none.
    pub fn of(samples: &[f64]) -> Self {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Self {
            median,
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
            n,
        }
    }

    /// `median [min-max]` with `decimals` digits (just the median for one sample).
    pub fn show(&self, decimals: usize) -> String {
        if self.n <= 1 {
            format!("{:.*}", decimals, self.median)
        } else {
            format!(
                "{:.*} [{:.*}-{:.*}]",
                decimals, self.median, decimals, self.min, decimals, self.max
            )
        }
    }
}

/// Decimal megabytes per second.
pub fn mb_per_s(bytes: u64, wall: Duration) -> f64 {
    bytes as f64 / wall.as_secs_f64().max(1e-12) / 1e6
}

/// Microseconds as a float.
pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Mebibytes as a float.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        let s = Stats::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Stats::of(&[1.0, 2.0, 3.0, 10.0]).median, 2.5);
        assert!(Stats::of(&[]).median.is_nan());
    }
}
