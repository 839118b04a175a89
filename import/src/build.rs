//! Building one [`Episode`] from per-step source arrays: every array checked against the
//! episode's step count, rewards into the `reward` block, end flags into `done`, the rest
//! into signal and action channels with their source dtype.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wshard::episode::{Channel, DType, Episode, Lane, Timebase};

use crate::array::Array;
use crate::error::{ImportError, Result};

/// The channel holding a reward whose source dtype is not f32, exactly.
pub const REWARD_CHANNEL: &str = "reward";

/// An episode being assembled from one source.
#[derive(Debug)]
pub struct EpisodeBuilder {
    ep: Episode,
    steps: u64,
    path: PathBuf,
    reference: String,
}

impl EpisodeBuilder {
    /// An episode of `steps` steps at `hz`; `reference` names the key the step count came
    /// from (for length errors).
    #[must_use]
    pub fn new(id: &str, env_id: &str, hz: f64, steps: u64, path: &Path, reference: &str) -> Self {
        let mut ep = Episode::new(id, env_id, Timebase::ticks(hz));
        ep.length = steps;
        Self {
            ep,
            steps,
            path: path.to_path_buf(),
            reference: reference.to_owned(),
        }
    }

    /// The step count.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Check that `a` is a per-step array of this episode's length.
    ///
    /// # Errors
    /// [`ImportError::WrongRank`] for a scalar, [`ImportError::LengthMismatch`].
    pub fn check(&self, key: &str, a: &Array) -> Result<()> {
        if a.shape.is_empty() {
            return Err(ImportError::WrongRank {
                path: self.path.clone(),
                key: key.to_owned(),
                shape: a.shape.clone(),
                expected: "at least one dimension (steps first)",
            });
        }
        if a.steps() != self.steps {
            return Err(ImportError::LengthMismatch {
                path: self.path.clone(),
                key: key.to_owned(),
                found: a.steps(),
                expected: self.steps,
                reference: self.reference.clone(),
            });
        }
        Ok(())
    }

    /// Add `a` as channel `id` in `lane`, keeping its dtype and per-step shape.
    ///
    /// # Errors
    /// As [`EpisodeBuilder::check`].
    pub fn channel(&mut self, id: &str, lane: Lane, key: &str, a: Array) -> Result<()> {
        self.check(key, &a)?;
        let shape = a.step_shape();
        self.ep
            .push_channel(Channel::new(id, lane, a.dtype, shape, a.data));
        Ok(())
    }

    /// Rewards: one value per step into the `reward` block (f32, as the format has it); a
    /// source dtype other than f32 is also kept exactly as signal channel `reward`.
    ///
    /// # Errors
    /// As [`EpisodeBuilder::check`], [`ImportError::WrongRank`] for more than one value per step.
    pub fn reward(&mut self, key: &str, a: Array) -> Result<()> {
        self.check(key, &a)?;
        self.scalar_per_step(key, &a)?;
        self.ep.reward = a.to_f32();
        if a.dtype != DType::F32 {
            self.channel(REWARD_CHANNEL, Lane::Signal, key, a)?;
        }
        Ok(())
    }

    /// An end flag of the source (terminals, timeouts, is_last, ...): one value per step,
    /// kept as signal channel `id` in its source dtype.
    ///
    /// # Errors
    /// As [`EpisodeBuilder::reward`].
    pub fn flag(&mut self, id: &str, key: &str, a: Array) -> Result<()> {
        self.check(key, &a)?;
        self.scalar_per_step(key, &a)?;
        self.channel(id, Lane::Signal, key, a)
    }

    fn scalar_per_step(&self, key: &str, a: &Array) -> Result<()> {
        if a.shape.iter().skip(1).any(|&d| d != 1) {
            return Err(ImportError::WrongRank {
                path: self.path.clone(),
                key: key.to_owned(),
                shape: a.shape.clone(),
                expected: "one value per step",
            });
        }
        Ok(())
    }

    /// Add free-form metadata under `meta/episode.metadata`.
    pub fn metadata(&mut self, key: &str, value: Value) {
        self.ep.metadata.insert(key.to_owned(), value);
    }

    /// The episode. `done` is true on the last step only (the source's own end flags are
    /// channels); rewards are 0 when the source has none.
    #[must_use]
    pub fn finish(mut self) -> Episode {
        let t = usize::try_from(self.steps).unwrap_or(0);
        if self.ep.reward.len() != t {
            self.ep.reward = vec![0.0; t];
        }
        let mut d = vec![false; t];
        if let Some(last) = d.last_mut() {
            *last = true;
        }
        self.ep.done = d;
        self.ep
    }
}

/// The `import` metadata object of every imported episode.
#[must_use]
pub fn import_metadata(format: &str, source: &Path, hz_source: &str) -> Value {
    let mut m = Map::new();
    m.insert("format".into(), Value::from(format));
    let name = source.file_name().map_or_else(
        || source.to_string_lossy().into_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    m.insert("source".into(), Value::from(name));
    m.insert("hz_source".into(), Value::from(hz_source));
    Value::Object(m)
}
