//! `wshard verify --deep` on one episode file: every block's length against what the meta
//! blocks say (channels `T x element size x prod(shape)`, `bool` channels 0 or 1, `reward`
//! 4T, `done` T bytes of 0 or 1, `time/timestamps_ns` 8T and non-decreasing), reporting
//! every problem rather than the first one. Blocks that do not decode are skipped: their
//! block check reports them.

use std::collections::HashSet;

use serde_json::{Map, Value};
use wshard::episode::meta::{parse_channels_meta, parse_episode_meta, parse_object, ChannelDef};
use wshard::episode::{names, DType, Timebase};
use wshard::read::{ReadAt, ShardReader};

use crate::shard_view::describe::is_block_read_error;

/// What the deep checks found in one episode file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeepFindings {
    /// Corruption: the file disagrees with its own meta blocks.
    pub problems: Vec<String>,
    /// Suspicious but valid (undescribed channel blocks).
    pub warnings: Vec<String>,
}

/// A block's decoded bytes: `Ok(None)` when absent, `Err(())` when it does not decode
/// (already reported by the block check).
type Block = Result<Option<Vec<u8>>, ()>;

struct Deep<'r, R> {
    r: &'r ShardReader<R>,
    out: DeepFindings,
}

impl<R: ReadAt> Deep<'_, R> {
    fn problem(&mut self, message: String) {
        if !self.out.problems.contains(&message) {
            self.out.problems.push(message);
        }
    }

    fn block(&mut self, name: &str) -> Block {
        if !self.r.contains(name) {
            return Ok(None);
        }
        match self.r.read_block(name) {
            Ok(b) => Ok(Some(b)),
            Err(e) if is_block_read_error(&e) => Err(()),
            Err(e) => {
                self.problem(e.to_string());
                Err(())
            }
        }
    }

    /// A required block: a missing one is a problem.
    fn required(&mut self, name: &str, why: &str) -> Option<Vec<u8>> {
        match self.block(name) {
            Ok(Some(b)) => Some(b),
            Ok(None) => {
                self.problem(format!("block `{name}` not found ({why})"));
                None
            }
            Err(()) => None,
        }
    }

    fn object(&mut self, name: &str) -> Option<Map<String, Value>> {
        let bytes = self.required(name, "every episode has it")?;
        match parse_object(name, &bytes) {
            Ok(m) => Some(m),
            Err(e) => {
                self.problem(e.to_string());
                None
            }
        }
    }

    /// `block `name`: N bytes, expected M (what)`, when `got != step x T`.
    fn check_len(&mut self, name: &str, got: usize, step: Option<u64>, what: &str, t: u64) {
        let want = step.and_then(|s| s.checked_mul(t));
        if want != Some(got as u64) {
            let want = want.map_or_else(|| "an overflowing size".to_owned(), |w| w.to_string());
            self.problem(format!(
                "block `{name}`: {got} bytes, expected {want} ({what} x T {t})"
            ));
        }
    }

    fn check_channel(&mut self, def: &ChannelDef, t: Option<u64>) {
        if let Err(e) = def.lane() {
            self.problem(e.to_string());
        }
        let Some(bytes) = self.required(&def.block, "meta/channels describes it") else {
            return;
        };
        let step = def
            .shape
            .iter()
            .try_fold(def.dtype.size() as u64, |a, &d| a.checked_mul(d));
        let what = format!(
            "meta/channels says {} {:?} = {} bytes per step",
            def.dtype.code(),
            def.shape,
            step.map_or_else(|| "overflow".to_owned(), |s| s.to_string())
        );
        if let Some(t) = t {
            self.check_len(&def.block, bytes.len(), step, &what, t);
        }
        if def.dtype == DType::Bool {
            self.check_zero_one(&def.block, &bytes, step);
        }
    }

    /// Every byte of a `bool` block (or `done`) is 0 or 1: readers disagree about any other
    /// value. `step` is the bytes per timestep, to say where the first bad one is.
    fn check_zero_one(&mut self, name: &str, bytes: &[u8], step: Option<u64>) {
        let mut bad = bytes.iter().enumerate().filter(|(_, &b)| b > 1);
        let Some((i, &b)) = bad.next() else {
            return;
        };
        let n = 1 + bad.count();
        let at = match step
            .and_then(|s| usize::try_from(s).ok())
            .filter(|&s| s > 0)
        {
            Some(s) if s > 1 => format!("t={} element {}", i / s, i % s),
            _ => format!("t={i}"),
        };
        self.problem(format!(
            "block `{name}`: {n} bytes are neither 0 nor 1 (first at {at}: {b:#04x})"
        ));
    }

    fn check_done(&mut self, t: Option<u64>) {
        let Some(done) = self.required(names::DONE, "every episode has it") else {
            return;
        };
        if let Some(t) = t {
            self.check_len(names::DONE, done.len(), Some(1), "1 byte per step", t);
        }
        self.check_zero_one(names::DONE, &done, Some(1));
    }

    fn check_timestamps(&mut self, timebase: Option<Timebase>, t: Option<u64>) {
        let needed = matches!(timebase, Some(Timebase::TimestampsNs { .. }));
        let bytes = match self.block(names::TIMESTAMPS_NS) {
            Ok(Some(b)) => b,
            Ok(None) if needed => {
                self.problem(format!(
                    "block `{}` not found (the timebase is timestamps_ns)",
                    names::TIMESTAMPS_NS
                ));
                return;
            }
            Ok(None) | Err(()) => return,
        };
        if let Some(t) = t {
            self.check_len(
                names::TIMESTAMPS_NS,
                bytes.len(),
                Some(8),
                "8 bytes per step",
                t,
            );
        }
        let ts: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        // Equal timestamps are allowed; a decrease is not (the recorder refuses one).
        let drops: Vec<usize> = (1..ts.len()).filter(|&i| ts[i] < ts[i - 1]).collect();
        if let Some(&i) = drops.first() {
            self.problem(format!(
                "block `{}`: timestamps decrease {} times (first at t={i}: {} after {})",
                names::TIMESTAMPS_NS,
                drops.len(),
                ts[i],
                ts[i - 1]
            ));
        }
    }
}

/// Check every block of a WShard episode (role 0x05) against its meta blocks.
#[must_use]
pub fn check_episode<R: ReadAt>(r: &ShardReader<R>) -> DeepFindings {
    let mut d = Deep {
        r,
        out: DeepFindings::default(),
    };
    let wshard = d.object(names::META_WSHARD);
    let episode = d.object(names::META_EPISODE);
    let channels = d.object(names::META_CHANNELS);
    let meta = match (&episode, &wshard) {
        (Some(ep), Some(ws)) => match parse_episode_meta(ep, ws) {
            Ok(m) => Some(m),
            Err(e) => {
                d.problem(e.to_string());
                None
            }
        },
        _ => None,
    };
    let defs = match channels.as_ref().map(parse_channels_meta) {
        Some(Ok(defs)) => defs,
        Some(Err(e)) => {
            d.problem(e.to_string());
            Vec::new()
        }
        None => Vec::new(),
    };

    let reward = d.required(names::REWARD, "every episode has it");
    let t = meta
        .as_ref()
        .and_then(|m| m.length)
        .or_else(|| reward.as_ref().map(|b| b.len() as u64 / 4));
    if let (Some(reward), Some(t)) = (&reward, t) {
        d.check_len(
            names::REWARD,
            reward.len(),
            Some(4),
            "f32, 4 bytes per step",
            t,
        );
    }
    d.check_done(t);
    let mut described = HashSet::new();
    for def in &defs {
        if !described.insert(def.block.clone()) {
            d.problem(format!(
                "block `{}` is described twice in meta/channels",
                def.block
            ));
            continue;
        }
        d.check_channel(def, t);
    }
    d.check_timestamps(meta.as_ref().map(|m| m.timebase), t);
    if let (Some(bytes), Some(t)) = (d.block("time/ticks").ok().flatten(), t) {
        d.check_len(
            "time/ticks",
            bytes.len(),
            Some(4),
            "i32, 4 bytes per step",
            t,
        );
    }
    let undescribed: Vec<String> = r
        .index()
        .names()
        .filter(|n| n.starts_with("signal/") || n.starts_with("action/"))
        .filter(|n| !described.contains(*n))
        .map(str::to_owned)
        .collect();
    if !defs.is_empty() || channels.is_some() {
        for n in undescribed {
            d.out.warnings.push(format!(
                "block `{n}` is not described in meta/channels (readers keep it as an aux block)"
            ));
        }
    }
    d.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wshard::episode::{Channel, Episode, EpisodeWriteOptions, Lane};

    fn episode() -> Episode {
        let mut ep = Episode::new("e", "Env", Timebase::TimestampsNs { dt_ns: 10 });
        ep.push_channel(
            Channel::from_f32("obs", Lane::Signal, vec![2], &[0.0; 8]).expect("channel"),
        );
        ep.set_reward(vec![0.0; 4]);
        ep.set_done(vec![false, false, false, true]);
        ep.timestamps_ns = Some(vec![0, 10, 5, 30]);
        ep
    }

    #[test]
    fn cli_deep_decreasing_timestamps_are_a_problem() {
        let bytes = episode()
            .to_bytes(&EpisodeWriteOptions::default())
            .expect("write");
        let r = ShardReader::from_bytes(bytes).expect("open");
        let f = check_episode(&r);
        assert!(f.warnings.is_empty(), "{f:?}");
        assert_eq!(f.problems.len(), 1, "{f:?}");
        assert!(f.problems[0].contains("first at t=2: 5 after 10"), "{f:?}");
        // Equal timestamps are fine.
        let mut ep = episode();
        ep.timestamps_ns = Some(vec![0, 10, 10, 30]);
        let r =
            ShardReader::from_bytes(ep.to_bytes(&EpisodeWriteOptions::default()).expect("write"))
                .expect("open");
        assert_eq!(check_episode(&r), DeepFindings::default());
    }

    #[test]
    fn cli_deep_bool_channels_hold_only_0_and_1() {
        let mut ep = episode();
        ep.push_channel(Channel::new(
            "grip",
            Lane::Action,
            DType::Bool,
            vec![2],
            vec![0, 1, 1, 0, 0, 2, 1, 0xFF],
        ));
        ep.timestamps_ns = Some(vec![0, 10, 20, 30]);
        let r =
            ShardReader::from_bytes(ep.to_bytes(&EpisodeWriteOptions::default()).expect("write"))
                .expect("open");
        let f = check_episode(&r);
        assert_eq!(
            f.problems,
            ["block `action/grip`: 2 bytes are neither 0 nor 1 (first at t=2 element 1: 0x02)"],
            "{f:?}"
        );
    }
}
