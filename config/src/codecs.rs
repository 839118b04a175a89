//! `[codecs]`: the default block codec and per-channel overrides by name pattern.

use std::collections::BTreeMap;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use wshard::codec::Codec;

/// `[codecs]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodecsConfig {
    /// Codec of every channel no pattern of `channels` matches. Written `"none"`, `"lz4"`,
    /// `"zstd"` (level 3) or `"zstd-N"` (N in 1..=22). Default `zstd-3`.
    #[serde(with = "codec_text")]
    pub default: Codec,
    /// Channel name pattern -> codec. A pattern is an exact channel name, or a prefix followed
    /// by a single trailing `*` (`"cam*"`). Default: empty.
    #[serde(with = "codec_map")]
    pub channels: BTreeMap<String, Codec>,
}

impl Default for CodecsConfig {
    fn default() -> Self {
        Self {
            default: Codec::zstd(),
            channels: BTreeMap::new(),
        }
    }
}

impl CodecsConfig {
    /// The codec for `channel`: an exact pattern if there is one, else the longest matching
    /// `prefix*` pattern, else [`CodecsConfig::default`].
    #[must_use]
    pub fn codec_for(&self, channel: &str) -> Codec {
        if let Some(codec) = self.channels.get(channel) {
            if !channel.ends_with('*') {
                return *codec;
            }
        }
        self.channels
            .iter()
            .filter_map(|(pattern, codec)| {
                let prefix = pattern.strip_suffix('*')?;
                channel
                    .starts_with(prefix)
                    .then_some((prefix.len(), *codec))
            })
            .max_by_key(|(len, _)| *len)
            .map_or(self.default, |(_, codec)| codec)
    }
}

/// Why `pattern` is not a valid channel pattern, `None` when it is.
pub(crate) fn pattern_problem(pattern: &str) -> Option<&'static str> {
    let body = pattern.strip_suffix('*').unwrap_or(pattern);
    if pattern.is_empty() {
        Some("a channel pattern must not be empty")
    } else if body.contains('*') {
        Some("`*` is only allowed once, as the last character of a pattern")
    } else {
        None
    }
}

/// The text form of a codec, the inverse of [`Codec::parse`]: `none`, `lz4`, `zstd-N`.
#[must_use]
pub fn codec_to_string(codec: Codec) -> String {
    match codec {
        Codec::Zstd { level } => format!("zstd-{level}"),
        Codec::None | Codec::Lz4 => codec.name().to_owned(),
    }
}

/// Why a text is not a codec; the message is fit for a config error (the caller names the
/// key and the value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecTextError {
    /// Not one of the codec names.
    #[error("must be \"none\", \"lz4\", \"zstd\" or \"zstd-1\"..\"zstd-22\"")]
    Unknown,
}

/// [`Codec::parse`] with an error fit for a config error (the caller names the value).
///
/// # Errors
/// [`CodecTextError::Unknown`], whose message says which names are accepted.
pub fn parse_codec(text: &str) -> Result<Codec, CodecTextError> {
    Codec::parse(text).map_err(|_| CodecTextError::Unknown)
}

mod codec_text {
    use super::{codec_to_string, de, parse_codec, Codec, Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(codec: &Codec, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&codec_to_string(*codec))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Codec, D::Error> {
        let text = String::deserialize(d)?;
        parse_codec(&text).map_err(de::Error::custom)
    }
}

mod codec_map {
    use super::{
        codec_to_string, de, parse_codec, BTreeMap, Codec, Deserialize, Deserializer, Serialize,
        Serializer,
    };

    pub(crate) fn serialize<S: Serializer>(
        map: &BTreeMap<String, Codec>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        map.iter()
            .map(|(pattern, codec)| (pattern.as_str(), codec_to_string(*codec)))
            .collect::<BTreeMap<_, _>>()
            .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Codec>, D::Error> {
        BTreeMap::<String, String>::deserialize(d)?
            .into_iter()
            .map(|(pattern, text)| Ok((pattern, parse_codec(&text).map_err(de::Error::custom)?)))
            .collect()
    }
}
