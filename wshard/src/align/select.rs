//! Which channels an aligned view has and each one's policy, from channel keys:
//! `STREAM/CHANNEL`, or a bare channel name that only one stream has.

use super::error::AlignError;
use super::options::{AlignOptions, Policy};

/// Stream names with their channel names, in episode order.
pub(crate) type Catalog = [(String, Vec<String>)];

/// One output column: which channel and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ColumnPlan {
    pub stream: String,
    pub channel: String,
    pub policy: Policy,
}

fn all_keys(catalog: &Catalog) -> String {
    catalog
        .iter()
        .flat_map(|(s, chans)| chans.iter().map(move |c| format!("{s}/{c}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The (stream, channel) a key names.
pub(crate) fn resolve(catalog: &Catalog, key: &str) -> Result<(usize, usize), AlignError> {
    if let Some((stream, channel)) = key.split_once('/') {
        let hit = catalog.iter().enumerate().find_map(|(si, (s, chans))| {
            (s == stream)
                .then(|| chans.iter().position(|c| c == channel).map(|ci| (si, ci)))
                .flatten()
        });
        if let Some(hit) = hit {
            return Ok(hit);
        }
    }
    let hits: Vec<(usize, usize)> = catalog
        .iter()
        .enumerate()
        .flat_map(|(si, (_, chans))| {
            chans
                .iter()
                .enumerate()
                .filter(|(_, c)| *c == key)
                .map(move |(ci, _)| (si, ci))
        })
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(AlignError::UnknownChannel {
            key: key.to_owned(),
            available: all_keys(catalog),
        }),
        many => Err(AlignError::AmbiguousChannel {
            key: key.to_owned(),
            candidates: many
                .iter()
                .map(|&(si, _)| format!("{}/{key}", catalog[si].0))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The columns of the view, in episode order (stream, then channel), each once.
///
/// # Errors
/// [`AlignError::UnknownChannel`] / [`AlignError::AmbiguousChannel`] for a key in
/// `channels` or `policies` that names no channel or several.
pub(crate) fn plan(catalog: &Catalog, opts: &AlignOptions) -> Result<Vec<ColumnPlan>, AlignError> {
    let mut selected: Vec<(usize, usize)> = match &opts.channels {
        None => catalog
            .iter()
            .enumerate()
            .flat_map(|(si, (_, chans))| (0..chans.len()).map(move |ci| (si, ci)))
            .collect(),
        Some(keys) => keys
            .iter()
            .map(|k| resolve(catalog, k))
            .collect::<Result<_, _>>()?,
    };
    selected.sort_unstable();
    selected.dedup();
    let mut policies = Vec::with_capacity(opts.policies.len());
    for (key, policy) in &opts.policies {
        policies.push((resolve(catalog, key)?, *policy));
    }
    Ok(selected
        .into_iter()
        .map(|at| ColumnPlan {
            stream: catalog[at.0].0.clone(),
            channel: catalog[at.0].1[at.1].clone(),
            // The last policy given for a channel wins.
            policy: policies
                .iter()
                .rev()
                .find(|(p, _)| *p == at)
                .map_or(opts.default_policy, |(_, p)| *p),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::align::Clock;

    fn catalog() -> Vec<(String, Vec<String>)> {
        vec![
            ("joints".into(), vec!["q".into(), "qd".into()]),
            ("cam".into(), vec!["rgb/left".into(), "q".into()]),
        ]
    }

    #[test]
    fn select_resolves_keys() {
        let c = catalog();
        assert_eq!(resolve(&c, "joints/qd").unwrap(), (0, 1));
        assert_eq!(resolve(&c, "qd").unwrap(), (0, 1));
        assert_eq!(resolve(&c, "cam/rgb/left").unwrap(), (1, 0));
        assert_eq!(resolve(&c, "rgb/left").unwrap(), (1, 0));
        assert!(matches!(
            resolve(&c, "q"),
            Err(AlignError::AmbiguousChannel { .. })
        ));
        let e = resolve(&c, "nope").unwrap_err().to_string();
        assert!(
            e.contains("joints/q, joints/qd, cam/rgb/left, cam/q"),
            "{e}"
        );
    }

    #[test]
    fn select_plans_columns_and_policies() {
        let c = catalog();
        let mut o = AlignOptions::new(Clock::rate(10.0))
            .with_policy("qd", Policy::Linear)
            .with_policy("joints/qd", Policy::Nearest);
        o.channels = Some(vec!["cam/q".into(), "qd".into(), "joints/qd".into()]);
        let p = plan(&c, &o).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].stream.as_str(), p[0].policy),
            ("joints", Policy::Nearest)
        );
        assert_eq!((p[1].stream.as_str(), p[1].policy), ("cam", Policy::Hold));
        o.policies.push(("zz".into(), Policy::Hold));
        assert!(plan(&c, &o).is_err());
    }
}
