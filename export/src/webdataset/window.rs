//! Sample windows: which low-dimensional rows and which picture frames a sample holds,
//! clamped at the episode's edges with the padding counted. Pure: indices in, indices out.

/// The low-dimensional window of one sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Row of the low-dimensional clock at the anchor.
    pub anchor_row: usize,
    /// `past + 1 + future` rows, `anchor_row + j * stride` for `j` in `-past..=future`,
    /// each clamped into `0..rows`.
    pub rows: Vec<usize>,
    /// Window steps before the first row (clamped to row 0).
    pub pad_left: usize,
    /// Window steps after the last row (clamped to the last row).
    pub pad_right: usize,
}

/// The window around `anchor_row` of a clock with `rows` rows (> 0).
#[must_use]
pub fn window(anchor_row: usize, rows: usize, past: usize, future: usize, stride: usize) -> Window {
    let last = rows.saturating_sub(1);
    let mut out = Window {
        anchor_row,
        rows: Vec::with_capacity(past + 1 + future),
        pad_left: 0,
        pad_right: 0,
    };
    for j in (1..=past).rev() {
        match anchor_row.checked_sub(j.saturating_mul(stride)) {
            Some(r) => out.rows.push(r),
            None => {
                out.pad_left += 1;
                out.rows.push(0);
            }
        }
    }
    out.rows.push(anchor_row.min(last));
    for j in 1..=future {
        let r = anchor_row.saturating_add(j.saturating_mul(stride));
        if r > last {
            out.pad_right += 1;
            out.rows.push(last);
        } else {
            out.rows.push(r);
        }
    }
    out
}

/// The clock row at an anchor time: the last row at or before `t_ns` (`clock` sorted);
/// `None` when the clock starts after it.
#[must_use]
pub fn anchor_row(clock: &[i64], t_ns: i64) -> Option<usize> {
    clock.partition_point(|&c| c <= t_ns).checked_sub(1)
}

/// The picture frames of a sample anchored at `frame` of a stream with `frames` frames
/// (> 0): `frame + offset` clamped into `0..frames`, and how many were clamped before the
/// start and after the end.
#[must_use]
pub fn image_frames(frame: usize, frames: usize, offsets: &[i64]) -> (Vec<usize>, usize, usize) {
    let last = i128::try_from(frames.saturating_sub(1)).unwrap_or(i128::MAX);
    let (mut left, mut right) = (0, 0);
    let picked = offsets
        .iter()
        .map(|&o| {
            let f = i128::try_from(frame).unwrap_or(i128::MAX) + i128::from(o);
            let clamped = if f < 0 {
                left += 1;
                0
            } else if f > last {
                right += 1;
                last
            } else {
                f
            };
            usize::try_from(clamped).unwrap_or(0)
        })
        .collect();
    (picked, left, right)
}

/// The fixed masks of a window: `past_mask` true for the past steps, `future_mask` for the
/// future ones.
#[must_use]
pub fn masks(past: usize, future: usize) -> (Vec<bool>, Vec<bool>) {
    let t = past + 1 + future;
    let past_mask = (0..t).map(|i| i < past).collect();
    let future_mask = (0..t).map(|i| i > past).collect();
    (past_mask, future_mask)
}
