//! OPEN schema validation: episode ids, channel names, shapes, sizes, timebase, metadata.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use wshard::codec::Codec;
use wshard::episode::{DType, Lane, Timebase};
use wshard_ingest_proto::{
    ChannelSpec, CodecChoice, ErrorCode, OpenEpisode, ProtoError, SchemaLimits, TimebaseSpec,
};

fn limits() -> SchemaLimits {
    SchemaLimits {
        max_channels: 16,
        max_frame_bytes: 1 << 20,
        max_episode_id_bytes: 128,
    }
}

fn err_of(open: &OpenEpisode) -> ProtoError {
    open.validate(&limits()).unwrap_err()
}

fn with_id(id: &str) -> OpenEpisode {
    let mut o = sample_open();
    o.episode_id = id.into();
    o
}

#[test]
fn proto_schema_sample_is_valid_and_sized() {
    let open = sample_open();
    open.validate(&limits()).unwrap();
    assert_eq!(open.step_bytes().unwrap(), STEP_BYTES);
    assert_eq!(open.channel_step_bytes().unwrap(), vec![28, 8, 12]);
}

#[test]
fn proto_schema_episode_id_rules() {
    for ok in ["a", "A-z_0.9", &"x".repeat(128), "ep..1"] {
        with_id(ok).validate(&limits()).unwrap();
    }
    for (bad, says) in [
        ("", "is empty"),
        (".hidden", "starts with '.'"),
        ("a/b", "contains '/'"),
        ("a b", "contains ' '"),
        ("é", "contains 'é'"),
        (&"x".repeat(129), "is 129 bytes"),
    ] {
        let e = err_of(&with_id(bad));
        assert_eq!(e.error_code(), ErrorCode::BadEpisodeId, "{bad:?}");
        assert!(e.to_string().contains(says), "{bad:?}: {e}");
    }
}

fn with_channel(c: ChannelSpec) -> OpenEpisode {
    sample_open().channel(c)
}

fn f32c(name: &str, shape: Vec<u32>) -> ChannelSpec {
    ChannelSpec::new(name, Lane::Signal, DType::F32, shape)
}

#[test]
fn proto_schema_channel_name_rules() {
    with_channel(f32c("wrist/rgb", vec![1]))
        .validate(&limits())
        .unwrap();
    with_channel(f32c("a.b/..c", vec![1]))
        .validate(&limits())
        .unwrap();
    for (bad, says) in [
        ("", "is empty"),
        ("a//b", "empty path segment"),
        ("/a", "empty path segment"),
        ("a/", "empty path segment"),
        ("a/../b", "'..' path segment"),
        ("..", "'..' path segment"),
        ("a\0b", "NUL"),
        ("joints", "duplicate"),
    ] {
        let e = err_of(&with_channel(f32c(bad, vec![1])));
        assert_eq!(e.error_code(), ErrorCode::BadSchema, "{bad:?}");
        assert!(e.to_string().contains(says), "{bad:?}: {e}");
        assert!(e.to_string().contains("channels[3]"), "{bad:?}: {e}");
    }
    // duplicate across lanes is still a duplicate
    let dup = with_channel(ChannelSpec::new(
        "joints",
        Lane::Action,
        DType::F32,
        vec![7],
    ));
    assert!(err_of(&dup).to_string().contains("duplicate"));
}

#[test]
fn proto_schema_shape_and_size_rules() {
    let e = err_of(&with_channel(f32c("deep", vec![1; 9])));
    assert!(e.to_string().contains("ndim 9 exceeds 8"), "{e}");
    with_channel(f32c("deep8", vec![1; 8]))
        .validate(&limits())
        .unwrap();
    let e = err_of(&with_channel(f32c("z", vec![3, 0])));
    assert!(e.to_string().contains("dims[1] is 0"), "{e}");
    // a step must fit a TIMESTEP_BATCH of one: 5 + 21 + payload <= max_frame_bytes
    let max = limits().max_frame_bytes as usize;
    let room = max - 26 - STEP_BYTES;
    with_channel(ChannelSpec::new(
        "blob",
        Lane::Signal,
        DType::U8,
        vec![room as u32],
    ))
    .validate(&limits())
    .unwrap();
    let e = err_of(&with_channel(ChannelSpec::new(
        "blob",
        Lane::Signal,
        DType::U8,
        vec![room as u32 + 1],
    )));
    assert!(e.to_string().contains("timestep payload"), "{e}");
    let e = err_of(&with_channel(f32c("huge", vec![1 << 20])));
    assert!(
        e.to_string()
            .contains("channels[3] \"huge\": step payload 4194304"),
        "{e}"
    );
    // overflowing products are errors, not panics
    let e = err_of(&with_channel(ChannelSpec::new(
        "ovf",
        Lane::Signal,
        DType::F64,
        vec![u32::MAX; 8],
    )));
    assert_eq!(e.error_code(), ErrorCode::BadSchema);
}

#[test]
fn proto_schema_channel_count_rules() {
    let mut none = sample_open();
    none.channels.clear();
    assert!(err_of(&none)
        .to_string()
        .contains("channel_count 0 must be 1..=16"));
    let mut many = sample_open();
    for i in 0..14 {
        many = many.channel(f32c(&format!("c{i}"), vec![1]));
    }
    assert!(err_of(&many).to_string().contains("channel_count 17"));
}

#[test]
fn proto_schema_timebase_rules() {
    for hz in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mut o = sample_open();
        o.timebase = TimebaseSpec::Ticks { tick_hz: hz };
        assert!(err_of(&o).to_string().contains("tick_hz"), "{hz}");
    }
    let mut o = sample_open();
    o.timebase = TimebaseSpec::TimestampsNs { nominal_hz: 0.0 };
    o.validate(&limits()).unwrap();
    assert_eq!(o.timebase.to_wshard(), Timebase::TimestampsNs { dt_ns: 0 });
    o.timebase = TimebaseSpec::TimestampsNs { nominal_hz: 30.0 };
    assert_eq!(
        o.timebase.to_wshard(),
        Timebase::TimestampsNs { dt_ns: 33_333_333 }
    );
    o.timebase = TimebaseSpec::TimestampsNs { nominal_hz: -3.0 };
    assert!(err_of(&o).to_string().contains("tick_hz -3"));
}

#[test]
fn proto_schema_metadata_and_codec_rules() {
    for ok in ["", "  ", "{}", r#" {"a": [1, 2]} "#] {
        sample_open()
            .with_metadata_json(ok)
            .validate(&limits())
            .unwrap();
    }
    for bad in ["[]", "3", "{", "null"] {
        let e = err_of(&sample_open().with_metadata_json(bad));
        assert!(e.to_string().contains("metadata_json"), "{bad}: {e}");
        assert_eq!(e.error_code(), ErrorCode::BadSchema);
    }
    for level in [-1, 23] {
        let e = err_of(&with_channel(
            f32c("z", vec![1]).with_codec(CodecChoice::Zstd { level }),
        ));
        assert!(
            e.to_string().contains(&format!("codec_level {level}")),
            "{e}"
        );
    }
    assert_eq!(
        CodecChoice::Zstd { level: 0 }.resolve(Codec::None),
        Codec::zstd()
    );
    assert_eq!(
        CodecChoice::Zstd { level: 19 }.resolve(Codec::None),
        Codec::Zstd { level: 19 }
    );
    assert_eq!(CodecChoice::Default.resolve(Codec::Lz4), Codec::Lz4);
    assert_eq!(CodecChoice::None.resolve(Codec::Lz4), Codec::None);
}
