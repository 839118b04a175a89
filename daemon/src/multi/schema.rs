//! A stream's schema as the episode index lists it, built from its `EpisodeSchema`.

use wshard::episode::Timebase;
use wshard::episode_dir::index::{ChannelEntry, EpisodeStatus, StreamEntry};
use wshard::episode_dir::index::{TIMEBASE_TICKS, TIMEBASE_TIMESTAMPS};
use wshard::manifest::manifest_file_name;

use crate::episode::EpisodeSchema;
use wshard_storage::layout::STREAMS_DIR;

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
    fn multirate_stream_entry_lists_clock_and_channels() {
        let a = stream_entry(&schema(7, 1000.0), 1000.0, "p");
        assert_eq!(a.manifest, "streams/joints/joints_manifest.wshard");
        assert_eq!(a.timebase, "ticks");
        assert_eq!(a.tick_hz.to_bits(), 1000.0f64.to_bits());
        assert_eq!(a.channels[0].dtype, "f32");
        assert_eq!(a.channels[0].lane, "signal");
        assert_eq!(a.channels[0].shape, vec![7]);
        assert_eq!(a.status, EpisodeStatus::Recording);
    }
}
