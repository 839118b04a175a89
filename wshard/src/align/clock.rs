//! The row times of an aligned view.

use super::error::AlignError;

/// Most rows a fixed-rate clock may have.
pub const MAX_CLOCK_ROWS: u64 = 1 << 30;

/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;

/// Rows at `start + round(k * 1e9 / hz)` for k = 0, 1, ... while `<= end`. `start` / `end`
/// default to `span` (the first and last timestamp of the episode); no span and no range
/// gives no rows.
///
/// # Errors
/// [`AlignError::BadRate`], [`AlignError::BadRange`], [`AlignError::TooManyRows`].
pub fn rate_clock(
    hz: f64,
    start_ns: Option<i64>,
    end_ns: Option<i64>,
    span: Option<(i64, i64)>,
) -> Result<Vec<i64>, AlignError> {
    if !(hz.is_finite() && hz > 0.0) {
        return Err(AlignError::BadRate { hz });
    }
    let (Some(start), Some(end)) = (start_ns.or(span.map(|s| s.0)), end_ns.or(span.map(|s| s.1)))
    else {
        return Ok(Vec::new());
    };
    if end < start {
        return Err(AlignError::BadRange {
            start_ns: start,
            end_ns: end,
        });
    }
    let span_ns = i128::from(end) - i128::from(start);
    #[allow(clippy::cast_precision_loss)]
    let approx_rows = span_ns as f64 * hz / NS_PER_S;
    #[allow(clippy::cast_precision_loss)]
    if approx_rows >= MAX_CLOCK_ROWS as f64 {
        return Err(AlignError::TooManyRows {
            hz,
            span_ns,
            max: MAX_CLOCK_ROWS,
        });
    }
    let mut out = Vec::new();
    for k in 0..=MAX_CLOCK_ROWS {
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        let offset = (k as f64 * NS_PER_S / hz).round() as i128;
        let t = i128::from(start) + offset;
        if t > i128::from(end) {
            break;
        }
        out.push(i64::try_from(t).unwrap_or(end));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_rate_rows() {
        assert_eq!(
            rate_clock(3.0, None, None, Some((0, 1_000_000_000))).unwrap(),
            [0, 333_333_333, 666_666_667, 1_000_000_000]
        );
        assert_eq!(rate_clock(1.0, Some(5), Some(5), None).unwrap(), [5]);
        assert!(rate_clock(1.0, None, None, None).unwrap().is_empty());
        assert!(matches!(
            rate_clock(0.0, None, None, None),
            Err(AlignError::BadRate { .. })
        ));
        assert!(matches!(
            rate_clock(f64::NAN, None, None, None),
            Err(AlignError::BadRate { .. })
        ));
        assert!(matches!(
            rate_clock(1.0, Some(2), Some(1), None),
            Err(AlignError::BadRange { .. })
        ));
        assert!(matches!(
            rate_clock(1e9, Some(i64::MIN), Some(i64::MAX), None),
            Err(AlignError::TooManyRows { .. })
        ));
    }
}
