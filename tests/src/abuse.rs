//! Building blocks of the protocol-abuse tests: small specs, the catalogue of bad schemas
//! with what the daemon's message must name, and message checks.

use wshard::episode::{DType, Lane};
use wshard_ingest_proto::{ChannelSpec, CodecChoice, Durability, OpenEpisode, TimebaseSpec};

use crate::data;

/// An `OPEN` for `id` with the one-channel schema ([`data::small_channels`]).
#[must_use]
pub fn small(id: &str) -> OpenEpisode {
    data::open_spec(id, &data::small_channels(), Durability::Ack)
}

/// [`small`] with other channels.
#[must_use]
pub fn with_channels(id: &str, channels: Vec<ChannelSpec>) -> OpenEpisode {
    let mut s = small(id);
    s.channels = channels;
    s
}

/// An f32 signal channel.
#[must_use]
pub fn f32ch(name: &str, shape: Vec<u32>) -> ChannelSpec {
    ChannelSpec::new(name, Lane::Signal, DType::F32, shape)
}

/// Panic unless `msg` contains every one of `parts`.
pub fn assert_contains(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

/// Schemas the daemon must refuse with `BAD_SCHEMA` (with the default
/// `limits.max_channels` 256 and `max_frame_bytes` 64 MiB), each with the fragments its
/// message must contain.
#[must_use]
pub fn bad_schemas() -> Vec<(OpenEpisode, Vec<&'static str>)> {
    let huge = 1u32 << 31;
    let mut nan = small("nan-hz");
    nan.timebase = TimebaseSpec::Ticks { tick_hz: f64::NAN };
    let mut zero_hz = small("zero-hz");
    zero_hz.timebase = TimebaseSpec::Ticks { tick_hz: 0.0 };
    let mut negative = small("negative-hz");
    negative.timebase = TimebaseSpec::TimestampsNs { nominal_hz: -1.0 };
    let too_many = (0..257).map(|i| f32ch(&format!("c{i}"), vec![1])).collect();
    let action_x = ChannelSpec::new("x", Lane::Action, DType::F32, vec![1]);
    let img = ChannelSpec::new("img", Lane::Signal, DType::U8, vec![huge, huge]);
    let wide = ChannelSpec::new("v", Lane::Signal, DType::F64, vec![huge; 3]);
    let zstd23 = f32ch("z", vec![1]).with_codec(CodecChoice::Zstd { level: 23 });
    let two_states = vec![f32ch("state", vec![4]), f32ch("state", vec![2])];
    vec![
        (
            with_channels("dup", two_states),
            vec!["channels[1].name", "\"state\"", "duplicate"],
        ),
        (
            with_channels("dup-lanes", vec![f32ch("x", vec![1]), action_x]),
            vec!["channels[1].name", "\"x\"", "duplicate"],
        ),
        (
            with_channels("absurd", vec![img]),
            vec![
                "channels[0]",
                "\"img\"",
                "[2147483648, 2147483648]",
                "exceeds",
            ],
        ),
        (
            with_channels("overflow", vec![wide]),
            vec!["\"v\"", "overflows"],
        ),
        (
            with_channels("none", vec![]),
            vec!["channel_count 0", "1..=256"],
        ),
        (
            with_channels("many", too_many),
            vec!["channel_count 257", "1..=256"],
        ),
        (
            with_channels("ndim", vec![f32ch("t", vec![1; 9])]),
            vec!["ndim 9", "8"],
        ),
        (
            with_channels("dim0", vec![f32ch("t", vec![3, 0])]),
            vec!["dims[1] is 0"],
        ),
        (
            with_channels("empty-name", vec![f32ch("", vec![1])]),
            vec!["channels[0].name", "empty"],
        ),
        (
            with_channels("dotdot", vec![f32ch("a/../b", vec![1])]),
            vec!["\"a/../b\"", "'..'"],
        ),
        (
            with_channels("slashes", vec![f32ch("a//b", vec![1])]),
            vec!["\"a//b\"", "empty path segment"],
        ),
        (
            with_channels("zstd23", vec![zstd23]),
            vec!["codec_level 23"],
        ),
        (nan, vec!["tick_hz NaN"]),
        (zero_hz, vec!["tick_hz 0"]),
        (negative, vec!["tick_hz -1"]),
        (
            small("meta-array").with_metadata_json("[1,2]"),
            vec!["metadata_json", "not a JSON object"],
        ),
        (
            small("meta-broken").with_metadata_json("{\"a\":"),
            vec!["metadata_json", "not valid JSON"],
        ),
    ]
}

/// Episode ids the daemon must refuse with `BAD_EPISODE_ID`: path tricks, hidden names,
/// the reserved quarantine name, bad characters, empty and too long.
#[must_use]
pub fn hostile_ids() -> Vec<String> {
    [
        "../../etc/passwd",
        "a/b",
        "..",
        ".hidden",
        "",
        "ep\0x",
        "é",
        "quarantine",
        "semi;colon",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(std::iter::once("x".repeat(129)))
    .collect()
}
