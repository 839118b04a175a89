//! The aligned table: one row per clock time, one column per channel, each value with its
//! validity and the source timestamp(s) it came from.

use super::clock::rate_clock;
use super::error::AlignError;
use super::options::{AlignOptions, Clock, InvalidRows, Policy};
use super::pick::{pick_rows, Picks};
use super::select::{plan, ColumnPlan};
use super::values::{gather, interpolate, linear_output_dtype};
use crate::episode::DType;
use crate::episode_dir::{EpisodeDir, StreamData};

/// One channel on the clock.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignedColumn {
    pub stream: String,
    pub channel: String,
    pub policy: Policy,
    /// The channel's dtype in its stream.
    pub source_dtype: DType,
    /// The dtype of `values`: the source's for `hold` / `nearest`, f32 or f64 for `linear`
    /// (see [`super::linear_output_dtype`]).
    pub dtype: DType,
    /// Per-row shape (the channel's per-step shape).
    pub shape: Vec<u64>,
    /// `rows x prod(shape)` elements of `dtype`, little-endian. A row without a sample is
    /// zeros; a stale row keeps its (stale) value and is marked invalid. Empty when
    /// [`AlignOptions::gather_values`] is false.
    pub values: Vec<u8>,
    /// Whether each row's value exists and is fresh enough.
    pub valid: Vec<bool>,
    /// Source step of each row (`linear`: the earlier neighbour), [`super::NO_ROW`] if none.
    pub source_row: Vec<i64>,
    /// Timestamp of `source_row`, [`super::NO_SAMPLE_T_NS`] if none.
    pub source_t_ns: Vec<i64>,
    /// `linear` only: the later neighbour's step (equal to `source_row` for an exact sample).
    pub next_row: Option<Vec<i64>>,
    /// `linear` only: the later neighbour's timestamp.
    pub next_t_ns: Option<Vec<i64>>,
}

impl AlignedColumn {
    /// `STREAM/CHANNEL`.
    #[must_use]
    pub fn name(&self) -> String {
        format!("{}/{}", self.stream, self.channel)
    }

    /// Bytes of one row of `values`.
    #[must_use]
    pub fn row_bytes(&self) -> usize {
        self.shape
            .iter()
            .try_fold(self.dtype.size(), |a, &d| {
                usize::try_from(d).ok().and_then(|d| a.checked_mul(d))
            })
            .unwrap_or(0)
    }

    /// The value bytes of row `i` (`None` past the end or without gathered values).
    #[must_use]
    pub fn row(&self, i: usize) -> Option<&[u8]> {
        let n = self.row_bytes();
        self.values
            .get(i.checked_mul(n)?..i.checked_mul(n)?.checked_add(n)?)
    }

    fn keep(&mut self, keep: &[bool]) {
        fn filter<T: Copy>(v: &mut Vec<T>, keep: &[bool]) {
            let mut it = keep.iter();
            v.retain(|_| it.next().copied().unwrap_or(false));
        }
        let n = self.row_bytes();
        if !self.values.is_empty() && n > 0 {
            self.values = self
                .values
                .chunks_exact(n)
                .zip(keep)
                .filter(|(_, k)| **k)
                .flat_map(|(r, _)| r.iter().copied())
                .collect();
        }
        filter(&mut self.valid, keep);
        filter(&mut self.source_row, keep);
        filter(&mut self.source_t_ns, keep);
        for v in [&mut self.next_row, &mut self.next_t_ns]
            .into_iter()
            .flatten()
        {
            filter(v, keep);
        }
    }
}

/// The aligned view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlignedTable {
    /// The clock: one time per row.
    pub t_ns: Vec<i64>,
    /// In episode order (stream, then channel).
    pub columns: Vec<AlignedColumn>,
}

impl AlignedTable {
    #[must_use]
    pub fn rows(&self) -> usize {
        self.t_ns.len()
    }

    /// The column `STREAM/CHANNEL`.
    #[must_use]
    pub fn column(&self, name: &str) -> Option<&AlignedColumn> {
        self.columns.iter().find(|c| c.name() == name)
    }

    /// True when every value of row `i` is valid.
    #[must_use]
    pub fn row_valid(&self, i: usize) -> bool {
        self.columns
            .iter()
            .all(|c| c.valid.get(i).copied().unwrap_or(false))
    }
}

fn catalog(streams: &[StreamData]) -> Vec<(String, Vec<String>)> {
    streams
        .iter()
        .map(|s| {
            (
                s.name().to_owned(),
                s.channels().iter().map(|c| c.name.clone()).collect(),
            )
        })
        .collect()
}

fn span_of(spans: impl Iterator<Item = Option<(i64, i64)>>) -> Option<(i64, i64)> {
    spans.flatten().reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

fn stream_span(s: &StreamData) -> Option<(i64, i64)> {
    Some((*s.timestamps_ns().first()?, *s.timestamps_ns().last()?))
}

fn unknown_clock(stream: &str, names: impl Iterator<Item = String>) -> AlignError {
    AlignError::UnknownClockStream {
        stream: stream.to_owned(),
        available: names.collect::<Vec<_>>().join(", "),
    }
}

/// Align `streams` (all of an episode's, or any set) as `opts` asks. A fixed-rate clock
/// without a range spans the first to the last timestamp of these streams.
///
/// # Errors
/// [`AlignError`] naming the clock stream, channel key or channel that is wrong.
pub fn align_streams(
    streams: &[StreamData],
    opts: &AlignOptions,
) -> Result<AlignedTable, AlignError> {
    let span = span_of(streams.iter().map(stream_span));
    build(streams, &plan(&catalog(streams), opts)?, opts, span)
}

/// Open what the view needs of an episode (only the streams of its columns and clock) and
/// align it. A fixed-rate clock without a range spans the first to the last timestamp of
/// any stream of the episode.
///
/// # Errors
/// Errors reading the streams, and those of [`align_streams`].
pub fn align_episode(dir: &EpisodeDir, opts: &AlignOptions) -> Result<AlignedTable, AlignError> {
    let listed: Vec<(String, Vec<String>)> = dir
        .streams()
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.channels.iter().map(|c| c.name.clone()).collect(),
            )
        })
        .collect();
    let columns = plan(&listed, opts)?;
    if let Clock::Stream(name) = &opts.clock {
        if dir.stream(name).is_none() {
            return Err(unknown_clock(name, listed.into_iter().map(|l| l.0)));
        }
    }
    let mut streams: Vec<StreamData> = Vec::new();
    for s in dir.streams() {
        let needed = columns.iter().any(|c| c.stream == s.name)
            || matches!(&opts.clock, Clock::Stream(n) if *n == s.name);
        if needed {
            streams.push(dir.read_stream(&s.name)?);
        }
    }
    let span = span_of(dir.streams().iter().map(|s| s.first_t_ns.zip(s.last_t_ns)));
    build(&streams, &columns, opts, span)
}

fn build(
    streams: &[StreamData],
    columns: &[ColumnPlan],
    opts: &AlignOptions,
    span: Option<(i64, i64)>,
) -> Result<AlignedTable, AlignError> {
    let find = |name: &str| streams.iter().find(|s| s.name() == name);
    let clock: Vec<i64> = match &opts.clock {
        Clock::Stream(name) => find(name)
            .ok_or_else(|| unknown_clock(name, streams.iter().map(|s| s.name().to_owned())))?
            .timestamps_ns()
            .to_vec(),
        Clock::Rate {
            hz,
            start_ns,
            end_ns,
        } => rate_clock(*hz, *start_ns, *end_ns, span)?,
    };
    let mut out = AlignedTable {
        t_ns: clock,
        columns: Vec::with_capacity(columns.len()),
    };
    for plan in columns {
        let (stream, col) = find(&plan.stream)
            .and_then(|s| s.channel(&plan.channel).map(|c| (s, c)))
            .ok_or_else(|| AlignError::UnknownChannel {
                key: format!("{}/{}", plan.stream, plan.channel),
                available: String::new(),
            })?;
        let dtype = match plan.policy {
            Policy::Linear => {
                linear_output_dtype(col.dtype).ok_or_else(|| AlignError::NotNumeric {
                    channel: format!("{}/{}", plan.stream, plan.channel),
                    dtype: col.dtype,
                })?
            }
            Policy::Hold | Policy::Nearest => col.dtype,
        };
        let picks: Picks = pick_rows(
            stream.timestamps_ns(),
            &out.t_ns,
            plan.policy,
            opts.max_staleness_ns,
        );
        let values = match (opts.gather_values, plan.policy) {
            (false, _) => Vec::new(),
            (true, Policy::Linear) => interpolate(col, &picks, dtype),
            (true, _) => gather(col, &picks),
        };
        out.columns.push(AlignedColumn {
            stream: plan.stream.clone(),
            channel: plan.channel.clone(),
            policy: plan.policy,
            source_dtype: col.dtype,
            dtype,
            shape: col.shape.clone(),
            values,
            valid: picks.valid,
            source_row: picks.row,
            source_t_ns: picks.t_ns,
            next_row: picks.next_row,
            next_t_ns: picks.next_t_ns,
        });
    }
    if opts.invalid_rows == InvalidRows::Drop {
        let keep: Vec<bool> = (0..out.rows()).map(|i| out.row_valid(i)).collect();
        let mut it = keep.iter();
        out.t_ns.retain(|_| it.next().copied().unwrap_or(false));
        for c in &mut out.columns {
            c.keep(&keep);
        }
    }
    Ok(out)
}
