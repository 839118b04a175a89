//! The dataset-level files beside the shards: `manifest.jsonl`, `stats.json`,
//! `preprocessing_config.yaml` (every option, for reproducing the export) and
//! `processing_metadata.json` (what each episode gave). No wall-clock time in any of them.

use serde_json::{json, Value};

use super::options::{LowdimClock, WebdatasetOptions};
use super::plan::Counts;
use super::shard::ShardInfo;

/// `manifest.jsonl`: one line per shard.
#[must_use]
pub fn manifest(shards: &[ShardInfo]) -> String {
    shards
        .iter()
        .map(|s| format!("{}\n", s.manifest_line()))
        .collect()
}

/// A YAML scalar: JSON's spelling (a double-quoted JSON string is a YAML string).
fn yaml(v: &Value) -> String {
    v.to_string()
}

/// `preprocessing_config.yaml`.
#[must_use]
pub fn preprocessing_config(opts: &WebdatasetOptions) -> String {
    let (clock, hz) = match &opts.lowdim_clock {
        LowdimClock::Anchor => ("anchor".to_owned(), Value::Null),
        LowdimClock::Stream(s) => (format!("stream:{s}"), Value::Null),
        LowdimClock::Rate(hz) => ("rate".to_owned(), json!(hz)),
    };
    let fields: Vec<(&str, Value)> = vec![
        ("format", json!("webdataset")),
        (
            "exporter",
            json!(concat!("wshard-export ", env!("CARGO_PKG_VERSION"))),
        ),
        ("image", json!(opts.image)),
        ("image_offsets", json!(opts.image_offsets)),
        ("past_lowdim_steps", json!(opts.past_steps)),
        ("future_lowdim_steps", json!(opts.future_steps)),
        ("stride", json!(opts.stride)),
        ("max_padding_left", json!(opts.max_padding_left)),
        ("max_padding_right", json!(opts.max_padding_right)),
        ("samples_per_shard", json!(opts.samples_per_shard)),
        (
            "resize",
            json!(opts.resize.map(|(w, h)| format!("{w}x{h}"))),
        ),
        ("jpeg_quality", json!(super::options::JPEG_QUALITY)),
        ("lowdim_clock", json!(clock)),
        ("lowdim_hz", hz),
        ("policy", json!(opts.policy.as_str())),
        ("fail_on_nan", json!(opts.fail_on_nan)),
        ("filter_still_samples", json!(opts.filter_still_samples)),
        ("still_threshold", json!(opts.still_threshold)),
        ("max_episodes", json!(opts.max_episodes)),
        ("instruction_labels", json!(opts.instruction_labels)),
        ("exclude", json!(opts.exclude)),
    ];
    let mut out = String::from("# wshard export webdataset: the options of this export\n");
    for (k, v) in fields {
        out.push_str(&format!("{k}: {}\n", yaml(&v)));
    }
    out
}

/// What one episode gave, for `processing_metadata.json`.
#[derive(Clone, Debug)]
pub struct EpisodeReport {
    pub episode_id: String,
    pub anchor_channel: String,
    pub lowdim_clock: String,
    pub lowdim_rows: usize,
    pub lowdim_keys: Vec<String>,
    pub pictures: Vec<String>,
    pub counts: Counts,
}

/// `processing_metadata.json`.
#[must_use]
pub fn processing_metadata(
    opts: &WebdatasetOptions,
    episodes: &[EpisodeReport],
    left_out: &[(String, String)],
    shards: &[ShardInfo],
) -> Value {
    let total: usize = episodes.iter().map(|e| e.counts.samples).sum();
    json!({
        "format": "webdataset",
        "exporter": concat!("wshard-export ", env!("CARGO_PKG_VERSION")),
        "window_length": opts.window_len(),
        "samples": total,
        "shards": shards.len(),
        "samples_per_shard": opts.samples_per_shard,
        "episodes": episodes.iter().map(|e| json!({
            "episode_id": e.episode_id,
            "anchor_channel": e.anchor_channel,
            "lowdim_clock": e.lowdim_clock,
            "lowdim_rows": e.lowdim_rows,
            "lowdim_keys": e.lowdim_keys,
            "pictures": e.pictures,
            "anchors": e.counts.anchors,
            "samples": e.counts.samples,
            "dropped_padding": e.counts.dropped_padding,
            "dropped_before_lowdim": e.counts.dropped_before_lowdim,
            "dropped_non_finite": e.counts.dropped_non_finite,
            "dropped_still": e.counts.dropped_still,
        })).collect::<Vec<_>>(),
        "left_out": left_out.iter().map(|(p, r)| json!({"directory": p, "reason": r})).collect::<Vec<_>>(),
    })
}
