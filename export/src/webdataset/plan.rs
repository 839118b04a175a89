//! Which anchors become samples: the window of each anchor frame, then the padding limits,
//! the non-finite check and the still filter, counted ([`plan`]).

use super::episode::LoadedEpisode;
use super::error::WebdatasetError;
use super::options::WebdatasetOptions;
use super::window::{anchor_row, window, Window};

/// An anchor frame that becomes a sample.
#[derive(Clone, Debug)]
pub struct Planned {
    pub frame: usize,
    pub window: Window,
}

/// What became of an episode's anchor frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub anchors: usize,
    pub samples: usize,
    /// Padding over `max_padding_left` / `max_padding_right`.
    pub dropped_padding: usize,
    /// The anchor frame is before the low-dimensional clock's first row.
    pub dropped_before_lowdim: usize,
    /// A NaN or infinite value in the window (without `fail_on_nan`).
    pub dropped_non_finite: usize,
    /// Still, with `filter_still_samples`.
    pub dropped_still: usize,
}

fn first_non_finite(ep: &LoadedEpisode, w: &Window) -> Option<(usize, usize, f64)> {
    ep.keys.iter().enumerate().find_map(|(k, key)| {
        w.rows.iter().find_map(|&r| {
            let row = key.values.get(r * key.width..(r + 1) * key.width)?;
            row.iter().find(|v| !v.is_finite()).map(|v| (k, r, *v))
        })
    })
}

fn is_still(ep: &LoadedEpisode, w: &Window, threshold: f64) -> bool {
    let action: Vec<_> = ep.keys.iter().filter(|k| k.is_action).collect();
    let keys: Vec<_> = if action.is_empty() {
        ep.keys.iter().collect()
    } else {
        action
    };
    keys.iter().all(|key| {
        let at = |r: usize| {
            key.values
                .get(r * key.width..(r + 1) * key.width)
                .unwrap_or(&[])
        };
        let anchor = at(w.anchor_row);
        w.rows.iter().all(|&r| {
            at(r)
                .iter()
                .zip(anchor)
                .all(|(v, a)| (v - a).abs() <= threshold)
        })
    })
}

/// The samples of an episode, in anchor order.
///
/// # Errors
/// [`WebdatasetError::NonFinite`] with `fail_on_nan`.
pub fn plan(
    ep: &LoadedEpisode,
    opts: &WebdatasetOptions,
) -> Result<(Vec<Planned>, Counts), WebdatasetError> {
    let mut counts = Counts {
        anchors: ep.anchor_t_ns.len(),
        ..Counts::default()
    };
    let mut out = Vec::new();
    let rows = ep.lowdim.rows();
    for (frame, &t) in ep.anchor_t_ns.iter().enumerate() {
        let Some(row) = anchor_row(&ep.lowdim.t_ns, t).filter(|_| rows > 0) else {
            counts.dropped_before_lowdim += 1;
            continue;
        };
        let w = window(row, rows, opts.past_steps, opts.future_steps, opts.stride);
        if w.pad_left > opts.max_padding_left || w.pad_right > opts.max_padding_right {
            counts.dropped_padding += 1;
            continue;
        }
        if let Some((k, r, value)) = first_non_finite(ep, &w) {
            if opts.fail_on_nan {
                return Err(WebdatasetError::NonFinite {
                    episode: ep.id.clone(),
                    channel: ep.keys[k].key.clone(),
                    row: r,
                    t_ns: ep.lowdim.t_ns[r],
                    anchor: frame,
                    value,
                });
            }
            counts.dropped_non_finite += 1;
            continue;
        }
        if opts.filter_still_samples && is_still(ep, &w, opts.still_threshold) {
            counts.dropped_still += 1;
            continue;
        }
        out.push(Planned { frame, window: w });
    }
    counts.samples = out.len();
    Ok((out, counts))
}
