//! What the meta blocks of a WShard episode say about its other blocks: the episode's
//! identity, T, and the element type and per-step shape of each tensor block.

use std::collections::HashMap;

use serde_json::{Map, Value};
use wshard::episode::meta::{parse_channels_meta, parse_episode_meta, parse_object, EpisodeMeta};
use wshard::episode::{names, Timebase};
use wshard::read::{ReadAt, ShardReader};

use super::describe::is_block_read_error;

/// Element type and per-step shape of a tensor block; the block holds `[T, *step_shape]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    pub dtype: String,
    /// Per-step shape without T; empty for one scalar per step.
    pub step_shape: Vec<u64>,
}

impl TensorType {
    fn new(dtype: &str, step_shape: Vec<u64>) -> Self {
        Self {
            dtype: dtype.to_owned(),
            step_shape,
        }
    }

    /// The full shape with T in front, when T is known.
    #[must_use]
    pub fn shape(&self, t: Option<u64>) -> Option<Vec<u64>> {
        t.map(|t| {
            std::iter::once(t)
                .chain(self.step_shape.iter().copied())
                .collect()
        })
    }

    /// `[10, 4]`, or `[T, 4]` when T is unknown.
    #[must_use]
    pub fn shape_label(&self, t: Option<u64>) -> String {
        let first = t.map_or_else(|| "T".to_owned(), |t| t.to_string());
        let dims: Vec<String> = std::iter::once(first)
            .chain(self.step_shape.iter().map(u64::to_string))
            .collect();
        format!("[{}]", dims.join(", "))
    }
}

/// What an episode's meta blocks say. Problems reading them are kept as notes, never fatal:
/// inspecting a damaged file should still show everything else. A meta block that does not
/// decode at all (bad CRC, codec failure) gets no note: its block check reports it.
#[derive(Clone, Debug, Default)]
pub struct EpisodeView {
    /// `meta/episode` parsed, when it could be.
    pub meta: Option<EpisodeMeta>,
    /// T from `meta/episode`, else from the size of `reward`.
    pub length: Option<u64>,
    /// Tensor blocks by name.
    pub tensors: HashMap<String, TensorType>,
    /// Why some of the above is missing.
    pub notes: Vec<String>,
}

/// Read one JSON object block; `Ok(None)` when the block is absent.
fn read_object<R: ReadAt>(
    r: &ShardReader<R>,
    name: &str,
) -> wshard::Result<Option<Map<String, Value>>> {
    if !r.contains(name) {
        return Ok(None);
    }
    r.read_block(name)
        .and_then(|bytes| parse_object(name, &bytes))
        .map(Some)
}

impl EpisodeView {
    /// Read the meta blocks of a WShard episode (role 0x05).
    #[must_use]
    pub fn read<R: ReadAt>(r: &ShardReader<R>) -> Self {
        let mut view = Self::default();
        let object = |name: &str, notes: &mut Vec<String>| match read_object(r, name) {
            Ok(Some(m)) => Some(m),
            Ok(None) => {
                notes.push(format!("block `{name}` not found"));
                None
            }
            // A block that does not decode is already reported by its block check.
            Err(e) if is_block_read_error(&e) => None,
            Err(e) => {
                notes.push(e.to_string());
                None
            }
        };
        let wshard = object(names::META_WSHARD, &mut view.notes).unwrap_or_default();
        if let Some(ep) = object(names::META_EPISODE, &mut view.notes) {
            match parse_episode_meta(&ep, &wshard) {
                Ok(meta) => view.meta = Some(meta),
                Err(e) => view.notes.push(e.to_string()),
            }
        }
        if let Some(ch) = object(names::META_CHANNELS, &mut view.notes) {
            match parse_channels_meta(&ch) {
                Ok(defs) => {
                    for def in defs {
                        view.tensors
                            .insert(def.block, TensorType::new(def.dtype.code(), def.shape));
                    }
                }
                Err(e) => view.notes.push(e.to_string()),
            }
        }
        let fixed = [
            (names::REWARD, "f32"),
            (names::DONE, "u8"),
            (names::TIMESTAMPS_NS, "i64"),
            ("time/ticks", "i32"),
        ];
        for (name, dtype) in fixed {
            if r.contains(name) {
                view.tensors
                    .entry(name.to_owned())
                    .or_insert_with(|| TensorType::new(dtype, Vec::new()));
            }
        }
        view.length = view
            .meta
            .as_ref()
            .and_then(|m| m.length)
            .or_else(|| r.entry(names::REWARD).ok().map(|(_, e)| e.orig_size / 4));
        view
    }
}

/// `ticks 30 Hz (dt_ns 33333333)` or `timestamps_ns (dt_ns 1000000)`.
#[must_use]
pub fn timebase_label(tb: &Timebase) -> String {
    match *tb {
        Timebase::Ticks { tick_hz } => format!("ticks {tick_hz} Hz (dt_ns {})", tb.dt_ns()),
        Timebase::TimestampsNs { dt_ns } => format!("timestamps_ns (dt_ns {dt_ns})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_labels() {
        let t = TensorType::new("f32", vec![8, 8, 3]);
        assert_eq!(t.shape_label(Some(5)), "[5, 8, 8, 3]");
        assert_eq!(t.shape_label(None), "[T, 8, 8, 3]");
        assert_eq!(
            TensorType::new("u8", vec![]).shape(Some(10)),
            Some(vec![10])
        );
    }

    #[test]
    fn timebase_labels() {
        assert_eq!(
            timebase_label(&Timebase::ticks(30.0)),
            "ticks 30 Hz (dt_ns 33333333)"
        );
    }
}
