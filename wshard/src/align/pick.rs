//! Which source sample(s) each clock row takes, per policy, and whether the result is
//! fresh enough. Pure: timestamps in, row numbers out.

use super::options::Policy;

/// Source row of a value that has no sample.
pub const NO_ROW: i64 = -1;
/// Source timestamp of a value that has no sample.
pub const NO_SAMPLE_T_NS: i64 = i64::MIN;

/// The source samples of one channel at every clock row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Picks {
    /// Row of the sample taken (`hold`, `nearest`), or of the earlier neighbour (`linear`);
    /// [`NO_ROW`] when there is none.
    pub row: Vec<i64>,
    /// Timestamp of `row`; [`NO_SAMPLE_T_NS`] when there is none.
    pub t_ns: Vec<i64>,
    /// `linear` only: row of the later neighbour (equal to `row` for a sample exactly at the
    /// clock time); [`NO_ROW`] when there is none.
    pub next_row: Option<Vec<i64>>,
    /// `linear` only: timestamp of `next_row`.
    pub next_t_ns: Option<Vec<i64>>,
    /// `linear` only: weight of the later neighbour, `(t - t_row) / (t_next - t_row)` in f64
    /// (0 for an exact sample or no sample).
    pub weight: Option<Vec<f64>>,
    /// A sample exists and is within `max_staleness_ns` (for `linear`: both neighbours are).
    pub valid: Vec<bool>,
}

/// `|a - b|` without overflow.
fn distance(a: i64, b: i64) -> u128 {
    (i128::from(a) - i128::from(b)).unsigned_abs()
}

/// Index of the last sample at the timestamp of sample `i` (later duplicates win).
fn last_at(src: &[i64], i: usize) -> usize {
    let t = src[i];
    src.partition_point(|&s| s <= t) - 1
}

/// Pick the source samples of every clock row. `src` must be non-decreasing (a stream's
/// timestamps are); `clock` may be in any order.
#[must_use]
pub fn pick_rows(
    src: &[i64],
    clock: &[i64],
    policy: Policy,
    max_staleness_ns: Option<u64>,
) -> Picks {
    let n = clock.len();
    let linear = policy == Policy::Linear;
    let mut p = Picks {
        row: Vec::with_capacity(n),
        t_ns: Vec::with_capacity(n),
        next_row: linear.then(|| Vec::with_capacity(n)),
        next_t_ns: linear.then(|| Vec::with_capacity(n)),
        weight: linear.then(|| Vec::with_capacity(n)),
        valid: Vec::with_capacity(n),
    };
    let fresh = |d: u128| max_staleness_ns.map_or(true, |m| d <= u128::from(m));
    for &t in clock {
        // Samples at or before t: src[..le]; the first after t: src[le].
        let le = src.partition_point(|&s| s <= t);
        let before = le.checked_sub(1);
        let after = (le < src.len()).then(|| last_at(src, le));
        let (row, next, weight, staleness) = match policy {
            Policy::Hold => (before, None, 0.0, before.map(|b| distance(t, src[b]))),
            Policy::Nearest => {
                let pick = match (before, after) {
                    (Some(b), Some(a)) if distance(t, src[b]) <= distance(src[a], t) => Some(b),
                    (_, Some(a)) => Some(a),
                    (b, None) => b,
                };
                (pick, None, 0.0, pick.map(|i| distance(t, src[i])))
            }
            Policy::Linear => match (before, after) {
                (Some(b), _) if src[b] == t => (Some(b), Some(b), 0.0, Some(0)),
                (Some(b), Some(a)) => {
                    #[allow(clippy::cast_precision_loss)]
                    let w = (i128::from(t) - i128::from(src[b])) as f64
                        / (i128::from(src[a]) - i128::from(src[b])) as f64;
                    let d = distance(t, src[b]).max(distance(src[a], t));
                    (Some(b), Some(a), w, Some(d))
                }
                _ => (None, None, 0.0, None),
            },
        };
        let as_row = |i: Option<usize>| i.and_then(|i| i64::try_from(i).ok()).unwrap_or(NO_ROW);
        let as_t = |i: Option<usize>| i.map_or(NO_SAMPLE_T_NS, |i| src[i]);
        p.row.push(as_row(row));
        p.t_ns.push(as_t(row));
        if let (Some(nr), Some(nt), Some(w)) = (&mut p.next_row, &mut p.next_t_ns, &mut p.weight) {
            nr.push(as_row(next));
            nt.push(as_t(next));
            w.push(weight);
        }
        p.valid.push(staleness.is_some_and(fresh));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_hold_nearest_linear() {
        let src = [10, 20, 20, 40];
        let clock = [5, 10, 15, 20, 25, 30, 35, 40, 50];
        let h = pick_rows(&src, &clock, Policy::Hold, None);
        assert_eq!(h.row, [-1, 0, 0, 2, 2, 2, 2, 3, 3]);
        assert_eq!(h.t_ns[0], NO_SAMPLE_T_NS);
        assert!(!h.valid[0]);
        let n = pick_rows(&src, &clock, Policy::Nearest, None);
        // 15: 10 and 20 at equal distance -> the earlier; 30: 20 and 40 -> the earlier.
        assert_eq!(n.row, [0, 0, 0, 2, 2, 2, 3, 3, 3]);
        let l = pick_rows(&src, &clock, Policy::Linear, None);
        assert_eq!(l.row, [-1, 0, 0, 2, 2, 2, 2, 3, -1]);
        assert_eq!(l.next_row.unwrap(), [-1, 0, 2, 2, 3, 3, 3, 3, -1]);
        assert_eq!(l.weight.unwrap()[5], 0.5);
        assert_eq!(
            l.valid,
            [false, true, true, true, true, true, true, true, false]
        );
    }

    #[test]
    fn pick_staleness_edges() {
        let src = [100];
        let h = pick_rows(&src, &[100, 110, 111], Policy::Hold, Some(10));
        assert_eq!(h.valid, [true, true, false]);
        let n = pick_rows(&src, &[89, 90, 110, 111], Policy::Nearest, Some(10));
        assert_eq!(n.valid, [false, true, true, false]);
        let l = pick_rows(&[0, 20], &[10, 11], Policy::Linear, Some(10));
        assert_eq!(l.valid, [true, false]);
        let e = pick_rows(&[], &[1], Policy::Nearest, None);
        assert_eq!((e.row[0], e.valid[0]), (NO_ROW, false));
        let x = pick_rows(&[i64::MIN + 1, i64::MAX], &[0], Policy::Linear, None);
        assert!(x.valid[0]);
    }
}
