//! The aligned view against a brute-force reference written here from the documented
//! semantics (docs/FORMAT-NOTES.md, "Reading multi-stream episodes"), not from the library's
//! code: every policy, staleness edges (exactly equal included), streams that start late and
//! end early, duplicate timestamps, empty streams, mask and drop.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;

use proptest::prelude::*;
use wshard::align::{
    align_streams, AlignError, AlignOptions, AlignedTable, Clock, InvalidRows, Policy,
    NO_SAMPLE_T_NS,
};
use wshard::episode::{DType, Lane, Timebase};
use wshard::episode_dir::{ChannelData, StreamData};

/// One generated channel: dtype, per-step elements, and each step's values.
#[derive(Clone, Debug)]
struct GenChannel {
    dtype: DType,
    elems: usize,
    /// Values per step, already within the dtype's range.
    values: Vec<Vec<f64>>,
}

#[derive(Clone, Debug)]
struct GenStream {
    timestamps: Vec<i64>,
    channels: Vec<GenChannel>,
    /// Where the steps are split into segments (chunks).
    splits: Vec<usize>,
}

fn encode(dtype: DType, v: f64) -> Vec<u8> {
    #[allow(clippy::cast_possible_truncation)]
    match dtype {
        DType::F32 => (v as f32).to_le_bytes().to_vec(),
        DType::F64 => v.to_le_bytes().to_vec(),
        DType::I16 => (v as i16).to_le_bytes().to_vec(),
        DType::U8 | DType::Bool => vec![v as u8],
        other => unreachable!("{other}"),
    }
}

fn step_bytes(ch: &GenChannel, step: usize) -> Vec<u8> {
    ch.values[step]
        .iter()
        .flat_map(|&v| encode(ch.dtype, v))
        .collect()
}

fn channel_strategy(steps: usize) -> impl Strategy<Value = GenChannel> {
    (
        prop::sample::select(vec![
            DType::F32,
            DType::F64,
            DType::I16,
            DType::U8,
            DType::Bool,
        ]),
        1usize..=3,
    )
        .prop_flat_map(move |(dtype, elems)| {
            let value = match dtype {
                DType::Bool => (0u8..=1).prop_map(f64::from).boxed(),
                DType::U8 => any::<u8>().prop_map(f64::from).boxed(),
                DType::I16 => any::<i16>().prop_map(f64::from).boxed(),
                _ => (-1000i32..1000).prop_map(|v| f64::from(v) / 8.0).boxed(),
            };
            prop::collection::vec(prop::collection::vec(value, elems), steps).prop_map(
                move |values| GenChannel {
                    dtype,
                    elems,
                    values,
                },
            )
        })
}

fn stream_strategy() -> impl Strategy<Value = GenStream> {
    // Small time range: many duplicates and exact hits. Start and end vary per stream.
    (0usize..12, 0i64..60, 0i64..4)
        .prop_flat_map(|(steps, start, max_gap)| {
            (
                prop::collection::vec(0..=max_gap, steps).prop_map(move |gaps| {
                    gaps.iter()
                        .scan(start, |t, g| {
                            *t += g;
                            Some(*t)
                        })
                        .collect::<Vec<i64>>()
                }),
                prop::collection::vec(channel_strategy(steps), 1..=2),
                prop::collection::vec(0..=steps, 0..3),
            )
        })
        .prop_map(|(timestamps, channels, mut splits)| {
            splits.sort_unstable();
            splits.dedup();
            GenStream {
                timestamps,
                channels,
                splits,
            }
        })
}

fn build(name: &str, g: &GenStream) -> StreamData {
    let n = g.timestamps.len();
    let channels = g
        .channels
        .iter()
        .enumerate()
        .map(|(ci, ch)| {
            let mut c = ChannelData::new(
                format!("c{ci}"),
                Lane::Signal,
                ch.dtype,
                vec![ch.elems as u64],
            );
            let mut bounds: Vec<usize> = g.splits.clone();
            bounds.push(n);
            let mut from = 0;
            for to in bounds {
                let to = to.max(from);
                let bytes: Vec<u8> = (from..to).flat_map(|s| step_bytes(ch, s)).collect();
                c.push_owned(bytes, (to - from) as u64).unwrap();
                from = to;
            }
            c
        })
        .collect();
    StreamData::new(
        name,
        Timebase::TimestampsNs { dt_ns: 1 },
        g.timestamps.clone(),
        channels,
    )
    .unwrap()
}

// ---------------------------------------------------------------- the reference

/// The sample standing for each distinct timestamp: the last one at that time.
fn effective(ts: &[i64]) -> BTreeMap<i64, usize> {
    let mut m = BTreeMap::new();
    for (i, &t) in ts.iter().enumerate() {
        m.insert(t, i);
    }
    m
}

#[derive(Debug, PartialEq)]
struct RefValue {
    row: Option<usize>,
    next: Option<usize>,
    weight: f64,
    staleness: Option<i128>,
}

fn reference_pick(ts: &[i64], t: i64, policy: Policy) -> RefValue {
    let eff = effective(ts);
    let dist = |a: i64| (i128::from(a) - i128::from(t)).abs();
    let at_or_before = eff.iter().rfind(|(&s, _)| s <= t);
    let at_or_after = eff.iter().find(|(&s, _)| s >= t);
    let none = RefValue {
        row: None,
        next: None,
        weight: 0.0,
        staleness: None,
    };
    match policy {
        Policy::Hold => at_or_before.map_or(none, |(&s, &i)| RefValue {
            row: Some(i),
            next: None,
            weight: 0.0,
            staleness: Some(dist(s)),
        }),
        Policy::Nearest => {
            let mut best: Option<(i64, usize)> = None;
            for (&s, &i) in &eff {
                // Strictly closer wins; equal distance keeps the earlier one.
                if best.map_or(true, |(b, _)| dist(s) < dist(b)) {
                    best = Some((s, i));
                }
            }
            best.map_or(none, |(s, i)| RefValue {
                row: Some(i),
                next: None,
                weight: 0.0,
                staleness: Some(dist(s)),
            })
        }
        Policy::Linear => match (at_or_before, at_or_after) {
            (Some((&s, &i)), _) if s == t => RefValue {
                row: Some(i),
                next: Some(i),
                weight: 0.0,
                staleness: Some(0),
            },
            (Some((&s0, &i0)), Some((&s1, &i1))) => RefValue {
                row: Some(i0),
                next: Some(i1),
                weight: (t - s0) as f64 / (s1 - s0) as f64,
                staleness: Some(dist(s0).max(dist(s1))),
            },
            _ => none,
        },
    }
}

struct RefColumn {
    valid: Vec<bool>,
    source_t: Vec<i64>,
    next_t: Option<Vec<i64>>,
    values: Vec<u8>,
}

fn reference_column(
    g: &GenStream,
    ch: &GenChannel,
    clock: &[i64],
    policy: Policy,
    max_stale: Option<u64>,
) -> RefColumn {
    let mut out = RefColumn {
        valid: vec![],
        source_t: vec![],
        next_t: (policy == Policy::Linear).then(Vec::new),
        values: vec![],
    };
    for &t in clock {
        let p = reference_pick(&g.timestamps, t, policy);
        out.valid.push(
            p.staleness
                .is_some_and(|d| max_stale.map_or(true, |m| d <= i128::from(m))),
        );
        out.source_t
            .push(p.row.map_or(NO_SAMPLE_T_NS, |i| g.timestamps[i]));
        if let Some(n) = &mut out.next_t {
            n.push(p.next.map_or(NO_SAMPLE_T_NS, |i| g.timestamps[i]));
        }
        if policy == Policy::Linear {
            let out_f32 = ch.dtype == DType::F32;
            for e in 0..ch.elems {
                let v = match (p.row, p.next) {
                    (Some(a), Some(b)) if a == b => ch.values[a][e],
                    (Some(a), Some(b)) => {
                        let (x, y) = (ch.values[a][e], ch.values[b][e]);
                        x + (y - x) * p.weight
                    }
                    _ => 0.0,
                };
                if out_f32 {
                    out.values.extend_from_slice(&(v as f32).to_le_bytes());
                } else {
                    out.values.extend_from_slice(&v.to_le_bytes());
                }
            }
        } else {
            match p.row {
                Some(i) => out.values.extend(step_bytes(ch, i)),
                None => out.values.extend(vec![0u8; ch.elems * ch.dtype.size()]),
            }
        }
    }
    out
}

fn reference_rate_clock(hz: f64, start: i64, end: i64) -> Vec<i64> {
    let mut out = vec![];
    let mut k = 0u64;
    loop {
        let t = start + (k as f64 * 1e9 / hz).round() as i64;
        if t > end {
            return out;
        }
        out.push(t);
        k += 1;
    }
}

// ---------------------------------------------------------------- the property

#[derive(Clone, Debug)]
struct Case {
    streams: Vec<GenStream>,
    /// `None`: a fixed rate; `Some(i)`: stream i's timestamps.
    clock_stream: Option<usize>,
    period_ns: f64,
    range: Option<(i64, i64)>,
    policies: Vec<Policy>,
    stale_pick: Option<u64>,
    drop: bool,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    prop::collection::vec(stream_strategy(), 1..=3)
        .prop_flat_map(|streams| {
            let n = streams.len();
            let n_ch: usize = streams.iter().map(|s| s.channels.len()).sum();
            (
                Just(streams),
                prop::option::of(0..n),
                prop::sample::select(vec![1.0, 2.0, 3.0, 2.5, 7.0, 0.75]),
                prop::option::of((-5i64..40, 0i64..80).prop_map(|(s, w)| (s, s + w))),
                prop::collection::vec(
                    prop::sample::select(vec![Policy::Hold, Policy::Nearest, Policy::Linear]),
                    n_ch,
                ),
                prop::option::of(0u64..6),
                any::<bool>(),
            )
        })
        .prop_map(
            |(streams, clock_stream, period_ns, range, policies, stale_pick, drop)| Case {
                streams,
                clock_stream,
                period_ns,
                range,
                policies,
                stale_pick,
                drop,
            },
        )
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let data: Vec<StreamData> = case
        .streams
        .iter()
        .enumerate()
        .map(|(i, g)| build(&format!("s{i}"), g))
        .collect();
    let hz = 1e9 / case.period_ns;
    let clock = match case.clock_stream {
        Some(i) => Clock::Stream(format!("s{i}")),
        None => Clock::Rate {
            hz,
            start_ns: case.range.map(|r| r.0),
            end_ns: case.range.map(|r| r.1),
        },
    };
    let mut opts = AlignOptions::new(clock);
    // Staleness limits equal to small distances make "exactly equal" common.
    opts.max_staleness_ns = case.stale_pick;
    if case.drop {
        opts.invalid_rows = InvalidRows::Drop;
    }
    let mut k = 0;
    let mut expect_error = false;
    for (si, g) in case.streams.iter().enumerate() {
        for (ci, ch) in g.channels.iter().enumerate() {
            let p = case.policies[k];
            k += 1;
            opts = opts.with_policy(format!("s{si}/c{ci}"), p);
            expect_error |= p == Policy::Linear && ch.dtype == DType::Bool;
        }
    }
    let got = align_streams(&data, &opts);
    if expect_error {
        prop_assert!(matches!(got, Err(AlignError::NotNumeric { .. })), "{got:?}");
        return Ok(());
    }
    let got: AlignedTable = got.map_err(|e| TestCaseError::fail(e.to_string()))?;

    // Reference clock.
    let clock: Vec<i64> = match case.clock_stream {
        Some(i) => case.streams[i].timestamps.clone(),
        None => {
            let all: Vec<i64> = case
                .streams
                .iter()
                .flat_map(|s| s.timestamps.iter().copied())
                .collect();
            let span = all.iter().min().copied().zip(all.iter().max().copied());
            match (case.range, span) {
                (Some((s, e)), _) | (None, Some((s, e))) => reference_rate_clock(hz, s, e),
                (None, None) => vec![],
            }
        }
    };
    let mut cols = vec![];
    let mut k = 0;
    for g in &case.streams {
        for ch in &g.channels {
            cols.push(reference_column(
                g,
                ch,
                &clock,
                case.policies[k],
                case.stale_pick,
            ));
            k += 1;
        }
    }
    let keep: Vec<bool> = (0..clock.len())
        .map(|r| !case.drop || cols.iter().all(|c| c.valid[r]))
        .collect();
    let kept = |v: &[i64]| -> Vec<i64> {
        v.iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(x, _)| *x)
            .collect()
    };
    prop_assert_eq!(&got.t_ns, &kept(&clock));
    prop_assert_eq!(got.columns.len(), cols.len());
    for (c, want) in got.columns.iter().zip(&cols) {
        let valid: Vec<bool> = want
            .valid
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(x, _)| *x)
            .collect();
        prop_assert_eq!(&c.valid, &valid, "{} valid", c.name());
        prop_assert_eq!(
            &c.source_t_ns,
            &kept(&want.source_t),
            "{} source_t",
            c.name()
        );
        prop_assert_eq!(
            c.next_t_ns.clone(),
            want.next_t.as_ref().map(|n| kept(n)),
            "{} next_t",
            c.name()
        );
        let row = c.row_bytes();
        let values: Vec<u8> = if row == 0 {
            vec![]
        } else {
            want.values
                .chunks_exact(row)
                .zip(&keep)
                .filter(|(_, k)| **k)
                .flat_map(|(r, _)| r.iter().copied())
                .collect()
        };
        prop_assert_eq!(&c.values, &values, "{} values", c.name());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn multirate_align_matches_brute_force_reference(case in case_strategy()) {
        check(&case)?;
    }
}

fn one(name: &str, ts: Vec<i64>, values: &[f32]) -> StreamData {
    let mut c = ChannelData::new("x", Lane::Signal, DType::F32, vec![]);
    c.push_owned(
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        values.len() as u64,
    )
    .unwrap();
    StreamData::new(name, Timebase::TimestampsNs { dt_ns: 1 }, ts, vec![c]).unwrap()
}

#[test]
fn multirate_align_staleness_exactly_equal_is_valid() {
    let streams = [
        one("clock", vec![0, 10, 20, 30], &[0.0; 4]),
        one("late", vec![10], &[7.0]),
    ];
    let opts = AlignOptions::new(Clock::Stream("clock".into()))
        .with_policy("late/x", Policy::Hold)
        .with_max_staleness_ns(10);
    let t = align_streams(&streams, &opts).unwrap();
    let c = t.column("late/x").unwrap();
    // 0: before the stream starts; 10: exact; 20: exactly 10 ns stale; 30: 20 ns stale.
    assert_eq!(c.valid, [false, true, true, false]);
    assert_eq!(c.source_t_ns, [NO_SAMPLE_T_NS, 10, 10, 10]);
    let dropped = align_streams(&streams, &opts.with_invalid_rows(InvalidRows::Drop)).unwrap();
    assert_eq!(dropped.t_ns, [10, 20]);
    assert_eq!(dropped.column("clock/x").unwrap().source_t_ns, [10, 20]);
}

#[test]
fn multirate_align_errors_are_typed() {
    let streams = [one("a", vec![0, 1], &[0.0, 1.0])];
    let e = align_streams(&streams, &AlignOptions::new(Clock::Stream("b".into()))).unwrap_err();
    assert!(matches!(e, AlignError::UnknownClockStream { ref stream, .. } if stream == "b"));
    let e = align_streams(
        &streams,
        &AlignOptions::new(Clock::rate(1.0)).with_policy("a/y", Policy::Linear),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no channel `a/y`"), "{e}");
    let e = align_streams(&streams, &AlignOptions::new(Clock::rate(-1.0))).unwrap_err();
    assert!(matches!(e, AlignError::BadRate { .. }));
    let mut b = ChannelData::new("flag", Lane::Signal, DType::Bool, vec![]);
    b.push_owned(vec![0, 1], 2).unwrap();
    let s = StreamData::new("b", Timebase::ticks(1.0), vec![0, 1], vec![b]).unwrap();
    let e = align_streams(
        &[s],
        &AlignOptions::new(Clock::rate(1.0)).with_policy("flag", Policy::Linear),
    )
    .unwrap_err();
    assert!(e.to_string().contains("channel `b/flag` is bool"), "{e}");
}
