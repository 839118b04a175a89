//! `wshard cat --aligned DIR`: the command-line options turned into
//! [`wshard::align::AlignOptions`], and the aligned table read.

use std::path::Path;

use wshard::align::{
    align_episode, AlignError, AlignOptions, AlignedTable, Clock, InvalidRows, Policy,
};
use wshard::episode_dir::EpisodeDir;

/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

/// The options of `wshard cat --aligned`, as given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlignedArgs {
    /// `--clock STREAM`.
    pub clock: Option<String>,
    /// `--rate HZ`.
    pub rate_hz: Option<f64>,
    /// `--policy CHANNEL=POLICY`, in order (the last for a channel wins).
    pub policies: Vec<String>,
    /// `--max-staleness-ms X`.
    pub max_staleness_ms: Option<f64>,
    /// `--drop-invalid`.
    pub drop_invalid: bool,
    /// `--channel CHANNEL`: only these (else every channel).
    pub channels: Vec<String>,
}

/// Options that do not make an aligned view.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AlignedArgsError {
    #[error("--aligned needs a clock: --clock STREAM or --rate HZ")]
    NoClock,
    #[error("give one clock: --clock STREAM or --rate HZ, not both")]
    TwoClocks,
    #[error("--policy {spec:?}: expected CHANNEL=hold|nearest|linear (CHANNEL is STREAM/CHANNEL or a channel name only one stream has)")]
    BadPolicy { spec: String },
    #[error("--max-staleness-ms {ms}: expected a finite number >= 0")]
    BadStaleness { ms: f64 },
}

fn policy(spec: &str) -> Result<(String, Policy), AlignedArgsError> {
    let bad = || AlignedArgsError::BadPolicy {
        spec: spec.to_owned(),
    };
    let (channel, name) = spec.rsplit_once('=').ok_or_else(bad)?;
    let p = Policy::parse(name).ok_or_else(bad)?;
    if channel.is_empty() {
        return Err(bad());
    }
    Ok((channel.to_owned(), p))
}

impl AlignedArgs {
    /// The library's options.
    ///
    /// # Errors
    /// [`AlignedArgsError`] naming the option.
    pub fn options(&self) -> Result<AlignOptions, AlignedArgsError> {
        let clock = match (&self.clock, self.rate_hz) {
            (Some(s), None) => Clock::Stream(s.clone()),
            (None, Some(hz)) => Clock::rate(hz),
            (None, None) => return Err(AlignedArgsError::NoClock),
            (Some(_), Some(_)) => return Err(AlignedArgsError::TwoClocks),
        };
        let mut opts = AlignOptions::new(clock);
        for spec in &self.policies {
            let (channel, p) = policy(spec)?;
            opts = opts.with_policy(channel, p);
        }
        if let Some(ms) = self.max_staleness_ms {
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(AlignedArgsError::BadStaleness { ms });
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ns = (ms * NS_PER_MS).round() as u64;
            opts = opts.with_max_staleness_ns(ns);
        }
        if self.drop_invalid {
            opts = opts.with_invalid_rows(InvalidRows::Drop);
        }
        if !self.channels.is_empty() {
            opts.channels = Some(self.channels.clone());
        }
        Ok(opts)
    }
}

/// Open `dir` and build its aligned view.
///
/// # Errors
/// Those of [`EpisodeDir::open`] and [`align_episode`].
pub fn read_aligned(dir: &Path, opts: &AlignOptions) -> Result<AlignedTable, AlignError> {
    align_episode(&EpisodeDir::open(dir)?, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_args_to_options() {
        let args = AlignedArgs {
            rate_hz: Some(30.0),
            policies: vec!["joints/q=linear".into(), "a=b=nearest".into()],
            max_staleness_ms: Some(1.5),
            drop_invalid: true,
            ..AlignedArgs::default()
        };
        let o = args.options().unwrap();
        assert_eq!(o.clock, Clock::rate(30.0));
        assert_eq!(
            o.policies,
            [
                ("joints/q".to_owned(), Policy::Linear),
                ("a=b".to_owned(), Policy::Nearest)
            ]
        );
        assert_eq!(o.max_staleness_ns, Some(1_500_000));
        assert_eq!(o.invalid_rows, InvalidRows::Drop);
        assert_eq!(o.channels, None);
        for bad in ["q", "q=cubic", "=hold"] {
            let a = AlignedArgs {
                clock: Some("cam".into()),
                policies: vec![bad.into()],
                ..AlignedArgs::default()
            };
            assert!(
                matches!(a.options(), Err(AlignedArgsError::BadPolicy { .. })),
                "{bad}"
            );
        }
        assert_eq!(
            AlignedArgs::default().options(),
            Err(AlignedArgsError::NoClock)
        );
        let both = AlignedArgs {
            clock: Some("cam".into()),
            rate_hz: Some(1.0),
            ..AlignedArgs::default()
        };
        assert_eq!(both.options(), Err(AlignedArgsError::TwoClocks));
        let stale = AlignedArgs {
            clock: Some("cam".into()),
            max_staleness_ms: Some(-1.0),
            ..AlignedArgs::default()
        };
        assert!(matches!(
            stale.options(),
            Err(AlignedArgsError::BadStaleness { .. })
        ));
    }
}
