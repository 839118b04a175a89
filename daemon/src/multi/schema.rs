//! A stream's schema as the episode index lists it, built from its `EpisodeSchema`, and
//! the first difference between two of them (a `STREAM_OPEN` of a name already used with
//! another schema is refused naming it).

use wshard::episode::Timebase;
use wshard::episode_dir::index::{ChannelEntry, EpisodeStatus, StreamEntry};
use wshard::episode_dir::index::{TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS};
use wshard::manifest::manifest_file_name;

use crate::episode::layout::STREAMS_DIR;
use crate::episode::EpisodeSchema;

/// The index entry of a stream about to record with `schema` (its `episode_id` is the
/// stream name), `tick_hz` as the producer gave it, recorded by `producer`.
#[must_use]
pub fn stream_entry(schema: &EpisodeSchema, tick_hz: f64, producer: &str) -> StreamEntry {
    let name = schema.episode_id.clone();
    let timebase = match schema.timebase {
        Timebase::Ticks { .. } => TIMEBASE_TICKS,
        Timebase::TimestampsNs { .. } => TIMEBASE_TIMESTAMPS,
    };
    StreamEntry {
        manifest: format!("{STREAMS_DIR}/{name}/{}", manifest_file_name(&name)),
        timebase: timebase.to_owned(),
        tick_hz: if tick_hz.is_finite() { tick_hz } else { 0.0 },
        channels: schema
            .channels
            .iter()
            .map(|c| ChannelEntry {
                name: c.name.clone(),
                lane: c.lane.prefix().to_owned(),
                dtype: c.dtype.code().to_owned(),
                shape: c.shape.clone(),
            })
            .collect(),
        producer: producer.to_owned(),
        status: EpisodeStatus::Recording,
        steps: 0,
        chunks: 0,
        first_t_ns: None,
        last_t_ns: None,
        name,
    }
}

/// The first field in which `new` differs from `old` (clock, channel count, a channel's
/// name, lane, dtype or shape), as `(field, message)`; `None` when the schemas match.
#[must_use]
pub fn first_difference(old: &StreamEntry, new: &StreamEntry) -> Option<(String, String)> {
    let differs = |field: String, was: String, now: String| {
        Some((field.clone(), format!("{field} is {now}, was {was}")))
    };
    if old.timebase != new.timebase {
        return differs(
            "timebase".into(),
            old.timebase.clone(),
            new.timebase.clone(),
        );
    }
    if old.tick_hz.to_bits() != new.tick_hz.to_bits() {
        return differs(
            "tick_hz".into(),
            old.tick_hz.to_string(),
            new.tick_hz.to_string(),
        );
    }
    if old.channels.len() != new.channels.len() {
        return differs(
            "channel_count".into(),
            old.channels.len().to_string(),
            new.channels.len().to_string(),
        );
    }
    for (i, (a, b)) in old.channels.iter().zip(&new.channels).enumerate() {
        let f = |what: &str| format!("channels[{i}].{what}");
        if a.name != b.name {
            return differs(f("name"), format!("{:?}", a.name), format!("{:?}", b.name));
        }
        if a.lane != b.lane {
            return differs(f("lane"), a.lane.clone(), b.lane.clone());
        }
        if a.dtype != b.dtype {
            return differs(f("dtype"), a.dtype.clone(), b.dtype.clone());
        }
        if a.shape != b.shape {
            return differs(
                f("shape"),
                format!("{:?}", a.shape),
                format!("{:?}", b.shape),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::Map;
    use wshard::codec::Codec;
    use wshard::episode::{DType, Lane};

    use super::*;
    use crate::episode::Durability;

    fn schema(shape: u64, hz: f64) -> EpisodeSchema {
        EpisodeSchema::new(
            "joints".into(),
            String::new(),
            Timebase::ticks(hz),
            Durability::Ack,
            vec![(
                "q".into(),
                Lane::Signal,
                DType::F32,
                vec![shape],
                Codec::None,
                None,
            )],
            Map::new(),
        )
        .unwrap()
    }

    #[test]
    fn multirate_schema_difference_names_the_field() {
        let a = stream_entry(&schema(7, 1000.0), 1000.0, "p");
        assert_eq!(a.manifest, "streams/joints/joints_manifest.wshard");
        assert_eq!(a.channels[0].dtype, "f32");
        assert!(first_difference(&a, &stream_entry(&schema(7, 1000.0), 1000.0, "other")).is_none());
        let (field, msg) =
            first_difference(&a, &stream_entry(&schema(6, 1000.0), 1000.0, "p")).unwrap();
        assert_eq!(field, "channels[0].shape");
        assert!(msg.contains("[6]") && msg.contains("[7]"), "{msg}");
        let (field, _) =
            first_difference(&a, &stream_entry(&schema(7, 500.0), 500.0, "p")).unwrap();
        assert_eq!(field, "tick_hz");
    }
}
