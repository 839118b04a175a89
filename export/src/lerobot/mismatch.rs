//! Whether an episode has the first episode's features (one dataset has one set), and if
//! not, what differs, in a few words: the channels only one of them has, a channel's width,
//! a picture size, or the same channels in another order. Never the whole lists: a state of
//! sixty elements would bury the one that differs.

use super::error::{FeatureMismatch, LerobotError};
use super::select::{Plan, VectorFeature, ACTION_KEY, STATE_KEY};

/// `(STREAM/CHANNEL, elements)` of each channel of `v`, in order.
fn channel_widths(v: &VectorFeature) -> Vec<(String, usize)> {
    v.channels.iter().map(|c| (c.key(), c.elements())).collect()
}

/// `channel K is` / `channels K1, K2 are`.
fn channels_are(keys: &[&str]) -> String {
    match keys {
        [one] => format!("channel {one} is"),
        many => format!("channels {} are", many.join(", ")),
    }
}

/// What differs between vector feature `a` of episode `first` and `b` of episode `id`.
fn vector_cause(
    first: &str,
    a: Option<&VectorFeature>,
    id: &str,
    b: Option<&VectorFeature>,
) -> Option<String> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (Some(_), None) => return Some(format!("not in {id}")),
        (None, Some(_)) => return Some(format!("not in {first}")),
        (Some(a), Some(b)) => (channel_widths(a), channel_widths(b)),
    };
    if a == b {
        return None;
    }
    let only = |x: &[(String, usize)], y: &[(String, usize)]| -> Vec<String> {
        x.iter()
            .filter(|(k, _)| !y.iter().any(|(o, _)| o == k))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let only_first = only(&a, &b);
    let only_this = only(&b, &a);
    let mut parts = Vec::new();
    if !only_first.is_empty() {
        let keys: Vec<&str> = only_first.iter().map(String::as_str).collect();
        parts.push(format!("{} not in {id}", channels_are(&keys)));
    }
    if !only_this.is_empty() {
        let keys: Vec<&str> = only_this.iter().map(String::as_str).collect();
        parts.push(format!("{} not in {first}", channels_are(&keys)));
    }
    for (key, width) in &a {
        if let Some((_, other)) = b.iter().find(|(k, w)| k == key && w != width) {
            parts.push(format!(
                "channel {key} has {other} elements in {id}, {width} in {first}"
            ));
        }
    }
    if parts.is_empty() {
        parts.push("the same channels in another order".to_owned());
    }
    Some(parts.join("; "))
}

fn mismatch(first: &str, id: &str, feature: &str, cause: String) -> LerobotError {
    LerobotError::FeatureMismatch(Box::new(FeatureMismatch {
        episode: id.to_owned(),
        first: first.to_owned(),
        feature: feature.to_owned(),
        cause,
    }))
}

/// Check that `plan` (episode `id`) has the features of `first_plan` (episode `first`).
///
/// # Errors
/// [`LerobotError::FeatureMismatch`] naming the first feature that differs and why.
pub fn check_same(
    first: &str,
    first_plan: &Plan,
    id: &str,
    plan: &Plan,
) -> Result<(), LerobotError> {
    let vectors = [
        (STATE_KEY, first_plan.state.as_ref(), plan.state.as_ref()),
        (ACTION_KEY, first_plan.action.as_ref(), plan.action.as_ref()),
    ];
    for (key, a, b) in vectors {
        if let Some(cause) = vector_cause(first, a, id, b) {
            return Err(mismatch(first, id, key, cause));
        }
    }
    for v in &first_plan.videos {
        match plan.videos.iter().find(|w| w.key == v.key) {
            None => return Err(mismatch(first, id, &v.key, format!("not in {id}"))),
            Some(w) if (w.height, w.width) != (v.height, v.width) => {
                let cause = format!(
                    "a {}x{} video in {id}, {}x{} in {first}",
                    w.height, w.width, v.height, v.width
                );
                return Err(mismatch(first, id, &v.key, cause));
            }
            Some(_) => {}
        }
    }
    if let Some(w) = plan
        .videos
        .iter()
        .find(|w| !first_plan.videos.iter().any(|v| v.key == w.key))
    {
        return Err(mismatch(first, id, &w.key, format!("not in {first}")));
    }
    if let Some((v, _)) = first_plan
        .videos
        .iter()
        .zip(&plan.videos)
        .find(|(v, w)| v.key != w.key)
    {
        let cause = "the same videos in another order".to_owned();
        return Err(mismatch(first, id, &v.key, cause));
    }
    Ok(())
}
