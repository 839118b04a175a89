//! The first difference between two stream schemas: what `STREAM_OPEN` of a name already
//! used in the episode is checked with (same schema: `STREAM_EXISTS`; another schema:
//! `BAD_SCHEMA` naming the stream and this field).

use std::fmt;

use crate::schema::{ChannelSpec, OpenEpisode};

/// A field in which a requested schema differs from the recorded one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaDifference {
    /// The field, as the wire names it: `timebase_kind`, `tick_hz`, `durability`,
    /// `channel_count`, `channels[1].shape`, ...
    pub field: String,
    /// Its value in the schema recorded first.
    pub recorded: String,
    /// Its value in the schema asked for now.
    pub requested: String,
}

impl fmt::Display for SchemaDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {}, the stream was opened with {}",
            self.field, self.requested, self.recorded
        )
    }
}

fn differ(field: impl Into<String>, recorded: String, requested: String) -> SchemaDifference {
    SchemaDifference {
        field: field.into(),
        recorded,
        requested,
    }
}

impl OpenEpisode {
    /// The first field, in wire order, in which `requested` differs from this (recorded)
    /// schema: timebase kind, rate, durability, channel count, then each channel's name,
    /// lane, dtype, shape, codec, level and modality. `None` when they are the same
    /// schema. Ids, `env_id` and metadata are not part of a schema and not compared;
    /// durability and codec are compared as given (compare resolved schemas to treat the
    /// server's defaults as their values).
    #[must_use]
    pub fn schema_difference(&self, requested: &OpenEpisode) -> Option<SchemaDifference> {
        let (a, b) = (&self.timebase, &requested.timebase);
        if a.kind_code() != b.kind_code() {
            return Some(differ("timebase_kind", format!("{a:?}"), format!("{b:?}")));
        }
        if a.hz().to_bits() != b.hz().to_bits() {
            return Some(differ("tick_hz", a.hz().to_string(), b.hz().to_string()));
        }
        if self.durability != requested.durability {
            let show = |d: Option<crate::Durability>| {
                d.map_or_else(|| "server default".to_owned(), |d| d.to_string())
            };
            return Some(differ(
                "durability",
                show(self.durability),
                show(requested.durability),
            ));
        }
        if self.channels.len() != requested.channels.len() {
            return Some(differ(
                "channel_count",
                self.channels.len().to_string(),
                requested.channels.len().to_string(),
            ));
        }
        self.channels
            .iter()
            .zip(&requested.channels)
            .enumerate()
            .find_map(|(i, (a, b))| {
                channel_difference(a, b).map(|mut d| {
                    d.field = format!("channels[{i}].{}", d.field);
                    d
                })
            })
    }
}

fn channel_difference(a: &ChannelSpec, b: &ChannelSpec) -> Option<SchemaDifference> {
    let checks: [(&str, String, String); 7] = [
        ("name", format!("{:?}", a.name), format!("{:?}", b.name)),
        ("lane", format!("{:?}", a.lane), format!("{:?}", b.lane)),
        ("dtype", format!("{:?}", a.dtype), format!("{:?}", b.dtype)),
        ("shape", format!("{:?}", a.shape), format!("{:?}", b.shape)),
        (
            "codec",
            a.codec.code().to_string(),
            b.codec.code().to_string(),
        ),
        (
            "codec_level",
            a.codec.level().to_string(),
            b.codec.level().to_string(),
        ),
        (
            "modality",
            format!("{:?}", a.modality.as_deref().unwrap_or("")),
            format!("{:?}", b.modality.as_deref().unwrap_or("")),
        ),
    ];
    checks
        .into_iter()
        .find(|(_, x, y)| x != y)
        .map(|(field, x, y)| differ(field, x, y))
}
