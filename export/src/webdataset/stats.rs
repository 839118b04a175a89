//! `stats.json`: per low-dimensional key, over every written sample's `(T, D)` window,
//! mean / std / min / max globally `(D,)` and per timestep `(T, D)`, percentiles 1, 2, 5,
//! 95, 98, 99 globally and per timestep (numpy's default method, [`super::percentile`]),
//! and the sample count.
//!
//! Per timestep, mean and the sum of squared deviations are accumulated with Welford's
//! update in sample order; the global mean and std combine the timesteps with the parallel
//! (Chan et al.) Welford formula, so the global std is that of all `count * T` values, not
//! a mean of per-timestep stds. Std is the population std (numpy's default `ddof=0`). All
//! in f64.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::percentile::{percentile_sorted, sort_values, PERCENTILES};

/// Running statistics of one `(T, D)` key.
#[derive(Debug)]
struct KeyStats {
    t: usize,
    d: usize,
    count: u64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    min: Vec<f64>,
    max: Vec<f64>,
    /// Every value, per `(t, d)` cell, for the percentiles.
    values: Vec<Vec<f64>>,
}

impl KeyStats {
    fn new(t: usize, d: usize) -> Self {
        let cells = t * d;
        Self {
            t,
            d,
            count: 0,
            mean: vec![0.0; cells],
            m2: vec![0.0; cells],
            min: vec![f64::INFINITY; cells],
            max: vec![f64::NEG_INFINITY; cells],
            values: vec![Vec::new(); cells],
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn push(&mut self, window: &[f64]) {
        self.count += 1;
        let n = self.count as f64;
        for (i, &x) in window.iter().enumerate().take(self.t * self.d) {
            let delta = x - self.mean[i];
            self.mean[i] += delta / n;
            self.m2[i] += delta * (x - self.mean[i]);
            self.min[i] = self.min[i].min(x);
            self.max[i] = self.max[i].max(x);
            self.values[i].push(x);
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn finish(&mut self) -> Value {
        let mut m = Map::new();
        m.insert("count".into(), json!(self.count));
        if self.count == 0 {
            return Value::Object(m);
        }
        let (t, d) = (self.t, self.d);
        let n = self.count as f64;
        let per_t =
            |v: &[f64]| -> Value { Value::Array(v.chunks(d).map(|row| json!(row)).collect()) };
        // Global: combine the T timestep accumulators (parallel Welford).
        let mut g_mean = vec![0.0; d];
        let mut g_m2 = vec![0.0; d];
        let mut g_min = vec![f64::INFINITY; d];
        let mut g_max = vec![f64::NEG_INFINITY; d];
        for j in 0..d {
            let mut acc_n = 0.0;
            for ti in 0..t {
                let i = ti * d + j;
                let total = acc_n + n;
                let delta = self.mean[i] - g_mean[j];
                g_mean[j] += delta * n / total;
                g_m2[j] += self.m2[i] + delta * delta * acc_n * n / total;
                acc_n = total;
                g_min[j] = g_min[j].min(self.min[i]);
                g_max[j] = g_max[j].max(self.max[i]);
            }
        }
        let all_n = n * t as f64;
        let g_std: Vec<f64> = g_m2.iter().map(|m2| (m2 / all_n).sqrt()).collect();
        let std_t: Vec<f64> = self.m2.iter().map(|m2| (m2 / n).sqrt()).collect();
        m.insert("mean".into(), json!(g_mean));
        m.insert("std".into(), json!(g_std));
        m.insert("min".into(), json!(g_min));
        m.insert("max".into(), json!(g_max));
        m.insert("mean_per_timestep".into(), per_t(&self.mean));
        m.insert("std_per_timestep".into(), per_t(&std_t));
        m.insert("min_per_timestep".into(), per_t(&self.min));
        m.insert("max_per_timestep".into(), per_t(&self.max));
        for cell in &mut self.values {
            sort_values(cell);
        }
        let mut global: Vec<Vec<f64>> = (0..d)
            .map(|j| {
                let mut all: Vec<f64> = (0..t)
                    .flat_map(|ti| self.values[ti * d + j].iter().copied())
                    .collect();
                sort_values(&mut all);
                all
            })
            .collect();
        for q in PERCENTILES {
            let g: Vec<f64> = global
                .iter_mut()
                .map(|v| percentile_sorted(v, q).unwrap_or(f64::NAN))
                .collect();
            let cells: Vec<f64> = self
                .values
                .iter()
                .map(|v| percentile_sorted(v, q).unwrap_or(f64::NAN))
                .collect();
            m.insert(format!("percentile_{q}"), json!(g));
            m.insert(format!("percentile_{q}_per_timestep"), per_t(&cells));
        }
        Value::Object(m)
    }
}

/// A `(T, D)` window whose `D` differs from the key's earlier samples.
#[derive(Debug, thiserror::Error)]
#[error("key {key}: {got} values per step, earlier samples had {expected}")]
pub struct WidthMismatch {
    pub key: String,
    pub expected: usize,
    pub got: usize,
}

/// The statistics of every key, accumulated in sample order.
#[derive(Debug, Default)]
pub struct Stats {
    keys: BTreeMap<String, KeyStats>,
}

impl Stats {
    /// Add one sample's window of `key`: `t * d` values, row-major.
    ///
    /// # Errors
    /// [`WidthMismatch`] when `d` differs from the key's earlier samples.
    pub fn push(
        &mut self,
        key: &str,
        t: usize,
        d: usize,
        window: &[f64],
    ) -> Result<(), WidthMismatch> {
        let entry = self
            .keys
            .entry(key.to_owned())
            .or_insert_with(|| KeyStats::new(t, d));
        if entry.d != d || entry.t != t {
            return Err(WidthMismatch {
                key: key.to_owned(),
                expected: entry.d,
                got: d,
            });
        }
        entry.push(window);
        Ok(())
    }

    /// `stats.json`'s value: `{key: {...}}`, keys sorted.
    #[must_use]
    pub fn finish(&mut self) -> Value {
        Value::Object(
            self.keys
                .iter_mut()
                .map(|(k, s)| (k.clone(), s.finish()))
                .collect(),
        )
    }
}
