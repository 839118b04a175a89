//! Per-feature statistics as LeRobot stores them: `min`, `max`, `mean`, `std` (population),
//! `count` and the quantiles `q01 q10 q50 q90 q99`, per element of a vector feature and per
//! colour channel of a video feature (pixels scaled to [0, 1], shape `(3, 1, 1)`).
//!
//! An episode's figures are exact, computed in f64 over every frame: quantiles as numpy's
//! default (`linear`) method gives them (LeRobot approximates them with histograms and
//! samples pictures). The dataset's figures combine the episodes' as LeRobot's
//! `aggregate_stats` does: min of mins, max of maxes, count-weighted mean, the parallel
//! variance combine for `std`, count-weighted mean of each quantile.

use serde_json::{json, Value};

/// The quantiles, with their keys.
pub const QUANTILES: [(&str, f64); 5] = [
    ("q01", 0.01),
    ("q10", 0.10),
    ("q50", 0.50),
    ("q90", 0.90),
    ("q99", 0.99),
];

/// Values a u8 pixel takes.
const PIXEL_VALUES: usize = 256;
/// The scale of pixel statistics (pixels as [0, 1]).
const PIXEL_SCALE: f64 = 255.0;
/// Colour channels of a video feature.
pub const COLOR_CHANNELS: usize = 3;

/// One feature's statistics, one value per element (vector) or per colour channel (video).
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureStats {
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    pub count: u64,
    /// One vector per entry of [`QUANTILES`].
    pub quantiles: Vec<Vec<f64>>,
    /// A video feature: values are per colour channel, stored as `(3, 1, 1)`.
    pub picture: bool,
}

/// numpy's `_lerp`: `a + (b - a) * t`, from `b` when `t >= 0.5`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// The quantile `q` of `n` sorted values `at(k)`, numpy's `linear` method.
fn quantile(n: usize, q: f64, at: impl Fn(usize) -> f64) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    #[allow(clippy::cast_precision_loss)]
    let virtual_index = q * (n - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let lo = (virtual_index.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    #[allow(clippy::cast_precision_loss)]
    let t = virtual_index - lo as f64;
    lerp(at(lo), at(hi), t)
}

impl FeatureStats {
    /// Statistics of `rows x dim` values (row-major), per element.
    #[must_use]
    pub fn of_vectors(values: &[f64], dim: usize) -> Self {
        let rows = values.len().checked_div(dim).unwrap_or(0);
        let mut s = Self {
            min: Vec::with_capacity(dim),
            max: Vec::with_capacity(dim),
            mean: Vec::with_capacity(dim),
            std: Vec::with_capacity(dim),
            count: rows as u64,
            quantiles: vec![Vec::with_capacity(dim); QUANTILES.len()],
            picture: false,
        };
        for j in 0..dim {
            let mut col: Vec<f64> = (0..rows).map(|i| values[i * dim + j]).collect();
            col.sort_by(f64::total_cmp);
            #[allow(clippy::cast_precision_loss)]
            let n = rows.max(1) as f64;
            let mean = col.iter().sum::<f64>() / n;
            let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            s.min.push(col.first().copied().unwrap_or(f64::NAN));
            s.max.push(col.last().copied().unwrap_or(f64::NAN));
            s.mean.push(mean);
            s.std.push(var.sqrt());
            for (k, (_, q)) in QUANTILES.iter().enumerate() {
                s.quantiles[k].push(quantile(rows, *q, |i| col[i]));
            }
        }
        s
    }

    /// Statistics of pictures from per-colour-channel histograms of pixel values, scaled
    /// to [0, 1]; `count` is the number of frames.
    #[must_use]
    pub fn of_pixels(hist: &[[u64; PIXEL_VALUES]; COLOR_CHANNELS], frames: u64) -> Self {
        let mut s = Self {
            min: Vec::new(),
            max: Vec::new(),
            mean: Vec::new(),
            std: Vec::new(),
            count: frames,
            quantiles: vec![Vec::new(); QUANTILES.len()],
            picture: true,
        };
        for h in hist {
            let n: u64 = h.iter().sum();
            #[allow(clippy::cast_precision_loss)]
            let nf = n.max(1) as f64;
            #[allow(clippy::cast_precision_loss)]
            let mean = h
                .iter()
                .enumerate()
                .map(|(v, &c)| v as f64 * c as f64)
                .sum::<f64>()
                / nf;
            #[allow(clippy::cast_precision_loss)]
            let var = h
                .iter()
                .enumerate()
                .map(|(v, &c)| (v as f64 - mean) * (v as f64 - mean) * c as f64)
                .sum::<f64>()
                / nf;
            let first = h.iter().position(|&c| c > 0).unwrap_or(0);
            let last = h.iter().rposition(|&c| c > 0).unwrap_or(0);
            #[allow(clippy::cast_precision_loss)]
            let (first, last) = (first as f64, last as f64);
            s.min.push(first / PIXEL_SCALE);
            s.max.push(last / PIXEL_SCALE);
            s.mean.push(mean / PIXEL_SCALE);
            s.std.push(var.sqrt() / PIXEL_SCALE);
            // The k-th smallest pixel value, from the cumulative counts.
            let at = |k: usize| {
                let mut seen = 0u64;
                for (v, &c) in h.iter().enumerate() {
                    seen += c;
                    if (k as u64) < seen {
                        #[allow(clippy::cast_precision_loss)]
                        return v as f64;
                    }
                }
                f64::NAN
            };
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            for (k, (_, q)) in QUANTILES.iter().enumerate() {
                s.quantiles[k].push(quantile(n, *q, at) / PIXEL_SCALE);
            }
        }
        s
    }

    /// The episodes' statistics combined as LeRobot's `aggregate_stats` does.
    #[must_use]
    pub fn aggregate(list: &[Self]) -> Option<Self> {
        let first = list.first()?;
        let dim = first.mean.len();
        let total: u64 = list.iter().map(|s| s.count).sum();
        #[allow(clippy::cast_precision_loss)]
        let tf = total.max(1) as f64;
        #[allow(clippy::cast_precision_loss)]
        let weighted = |f: &dyn Fn(&Self, usize) -> f64, j: usize| {
            list.iter().map(|s| f(s, j) * s.count as f64).sum::<f64>() / tf
        };
        let mean: Vec<f64> = (0..dim).map(|j| weighted(&|s, j| s.mean[j], j)).collect();
        let std: Vec<f64> = (0..dim)
            .map(|j| {
                weighted(
                    &|s, j| s.std[j] * s.std[j] + (s.mean[j] - mean[j]) * (s.mean[j] - mean[j]),
                    j,
                )
                .sqrt()
            })
            .collect();
        let fold = |f: fn(f64, f64) -> f64, pick: fn(&Self) -> &Vec<f64>| -> Vec<f64> {
            (0..dim)
                .map(|j| {
                    list.iter()
                        .map(|s| pick(s)[j])
                        .reduce(f)
                        .unwrap_or(f64::NAN)
                })
                .collect()
        };
        Some(Self {
            min: fold(f64::min, |s| &s.min),
            max: fold(f64::max, |s| &s.max),
            quantiles: (0..QUANTILES.len())
                .map(|k| {
                    (0..dim)
                        .map(|j| weighted(&|s, j| s.quantiles[k][j], j))
                        .collect()
                })
                .collect(),
            mean,
            std,
            count: total,
            picture: first.picture,
        })
    }

    fn values(&self, v: &[f64]) -> Value {
        if self.picture {
            Value::Array(v.iter().map(|x| json!([[x]])).collect())
        } else {
            json!(v)
        }
    }

    /// `{min, max, mean, std, count, q01, ...}` as `meta/stats.json` holds them.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("min".into(), self.values(&self.min));
        m.insert("max".into(), self.values(&self.max));
        m.insert("mean".into(), self.values(&self.mean));
        m.insert("std".into(), self.values(&self.std));
        m.insert("count".into(), json!([self.count]));
        for (k, (name, _)) in QUANTILES.iter().enumerate() {
            m.insert((*name).into(), self.values(&self.quantiles[k]));
        }
        Value::Object(m)
    }

    /// The stat names in the order of [`FeatureStats::to_json`].
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        let mut out = vec!["min", "max", "mean", "std", "count"];
        out.extend(QUANTILES.iter().map(|(n, _)| *n));
        out
    }

    /// The values of stat `name` (`count` as one value).
    #[must_use]
    pub fn get(&self, name: &str) -> Vec<f64> {
        match name {
            "min" => self.min.clone(),
            "max" => self.max.clone(),
            "mean" => self.mean.clone(),
            "std" => self.std.clone(),
            #[allow(clippy::cast_precision_loss)]
            "count" => vec![self.count as f64],
            q => QUANTILES
                .iter()
                .position(|(n, _)| *n == q)
                .map(|k| self.quantiles[k].clone())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_quantiles_like_numpy() {
        // np.quantile([1, 2, 3, 4], [0.01, 0.1, 0.5, 0.9, 0.99])
        let s = FeatureStats::of_vectors(&[4.0, 1.0, 3.0, 2.0], 1);
        let q: Vec<f64> = s.quantiles.iter().map(|v| v[0]).collect();
        let want = [1.03, 1.3, 2.5, 3.7, 3.97];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
        assert_eq!(s.mean, [2.5]);
        assert!((s.std[0] - 1.25f64.sqrt()).abs() < 1e-12);
        let mut h = [[0u64; PIXEL_VALUES]; COLOR_CHANNELS];
        for v in [1usize, 2, 3, 4] {
            h[0][v] += 1;
            h[1][v] += 1;
            h[2][v] += 1;
        }
        let p = FeatureStats::of_pixels(&h, 1);
        assert!((p.quantiles[2][0] * PIXEL_SCALE - 2.5).abs() < 1e-12);
        assert!((p.min[1] * PIXEL_SCALE - 1.0).abs() < 1e-12);
        let a = FeatureStats::aggregate(&[
            FeatureStats::of_vectors(&[1.0, 2.0], 1),
            FeatureStats::of_vectors(&[3.0, 4.0], 1),
        ])
        .unwrap();
        assert_eq!(a.mean, [2.5]);
        assert!((a.std[0] - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!((a.min[0], a.max[0], a.count), (1.0, 4.0, 4));
    }
}
