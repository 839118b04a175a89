//! Writing an [`Episode`] as a WShard file (role 0x05).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Cursor, Seek, Write};

use super::go_json::to_compact;
use super::meta::{channels_meta, episode_meta, wshard_meta, MetaStyle};
use super::model::{names, Episode};
use crate::codec::{Codec, CompressionPolicy};
use crate::consts::{role, DEFAULT_ALIGNMENT};
use crate::entry::content_type;
use crate::error::{FormatError, Result};
use crate::write::{BlockOptions, Reserve, ShardOptions, ShardWriter, WrittenBlock};

/// How an episode is laid out and compressed.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeWriteOptions {
    pub style: MetaStyle,
    /// Codec for blocks that name none (channels, reward, done, aux). Meta blocks are never
    /// compressed.
    pub default_codec: Codec,
    /// Per-block overrides by full block name; these win over everything else.
    pub block_codecs: BTreeMap<String, Codec>,
    pub policy: CompressionPolicy,
    pub alignment: u8,
    /// Header `compression_default`; `None` writes the default codec's code.
    pub compression_default: Option<u8>,
}

impl Default for EpisodeWriteOptions {
    fn default() -> Self {
        Self {
            style: MetaStyle::Recorder,
            default_codec: Codec::None,
            block_codecs: BTreeMap::new(),
            policy: CompressionPolicy::go(),
            alignment: DEFAULT_ALIGNMENT,
            compression_default: None,
        }
    }
}

impl EpisodeWriteOptions {
    /// The shard options these episode options imply.
    #[must_use]
    pub fn shard_options(&self) -> ShardOptions {
        ShardOptions {
            role: role::WSHARD,
            alignment: self.alignment,
            compression_default: self
                .compression_default
                .unwrap_or(self.default_codec.header_code()),
            policy: self.policy,
            ..ShardOptions::wshard()
        }
    }

    /// The reference golden generator's profile.
    #[must_use]
    pub fn golden_gen() -> Self {
        Self {
            style: MetaStyle::GoldenGen,
            policy: CompressionPolicy::any_smaller(),
            ..Self::default()
        }
    }

    fn codec_for(&self, block: &str, own: Option<Codec>) -> Codec {
        self.block_codecs
            .get(block)
            .copied()
            .or(own)
            .unwrap_or(self.default_codec)
    }
}

/// The little-endian bytes of `values`: borrowed in place on little-endian hosts, converted
/// elsewhere.
fn le_bytes<'a, T: bytemuck::NoUninit, const N: usize>(
    values: &'a [T],
    to_le: impl Fn(&T) -> [u8; N],
) -> Cow<'a, [u8]> {
    if cfg!(target_endian = "little") {
        Cow::Borrowed(bytemuck::cast_slice(values))
    } else {
        Cow::Owned(values.iter().flat_map(to_le).collect())
    }
}

/// A block ready to write: name, bytes (borrowed where possible) and options.
#[derive(Debug)]
pub struct PlannedBlock<'a> {
    pub name: String,
    pub data: Cow<'a, [u8]>,
    pub opts: BlockOptions,
}

impl Episode {
    /// The blocks [`Episode::write_to`] writes, in order, with the codec each one asks for
    /// (meta blocks: raw, content type JSON). Callers that compress on a worker pool run
    /// [`crate::write::prepare_block`] on each and write them with
    /// [`ShardWriter::write_precompressed`] in this order.
    #[must_use]
    pub fn plan(&self, opts: &EpisodeWriteOptions) -> Vec<PlannedBlock<'_>> {
        let mut plan = self.plan_meta(opts);
        for ch in &self.channels {
            let name = ch.block_name();
            let codec = opts.codec_for(&name, ch.codec);
            plan.push(PlannedBlock {
                name,
                data: ch.data.as_slice().into(),
                opts: BlockOptions::codec(codec),
            });
        }
        plan.push(PlannedBlock {
            name: names::REWARD.into(),
            data: le_bytes(&self.reward, |r| r.to_le_bytes()),
            opts: BlockOptions::codec(opts.codec_for(names::REWARD, self.reward_codec)),
        });
        plan.push(PlannedBlock {
            name: names::DONE.into(),
            // bool is one byte, 0 or 1: exactly the on-disk form.
            data: Cow::Borrowed(bytemuck::cast_slice::<bool, u8>(&self.done)),
            opts: BlockOptions::codec(opts.codec_for(names::DONE, self.done_codec)),
        });
        if let Some(ts) = &self.timestamps_ns {
            plan.push(PlannedBlock {
                name: names::TIMESTAMPS_NS.into(),
                data: le_bytes(ts, |t| t.to_le_bytes()),
                opts: BlockOptions::codec(opts.codec_for(names::TIMESTAMPS_NS, None)),
            });
        }
        for a in &self.aux {
            plan.push(PlannedBlock {
                name: a.name.clone(),
                data: a.data.as_slice().into(),
                opts: BlockOptions::codec(opts.codec_for(&a.name, a.codec)),
            });
        }
        plan
    }

    /// The three meta blocks [`Episode::plan`] starts with (`meta/wshard`, `meta/episode`,
    /// `meta/channels`: raw, content type JSON). They depend on the episode's description
    /// only (its data by T and the names of its aux blocks), so a head read with
    /// [`super::StoredEpisode::read`] plans them too.
    #[must_use]
    pub fn plan_meta(&self, opts: &EpisodeWriteOptions) -> Vec<PlannedBlock<'static>> {
        let json = |name: &str, v: &serde_json::Value| PlannedBlock {
            name: name.to_owned(),
            data: to_compact(v).into_bytes().into(),
            opts: BlockOptions::raw(content_type::JSON),
        };
        vec![
            json(names::META_WSHARD, &wshard_meta(self, opts.style)),
            json(names::META_EPISODE, &episode_meta(self, opts.style)),
            json(names::META_CHANNELS, &channels_meta(self)),
        ]
    }

    /// Write the episode to `out` (rewound to offset 0) and return it, flushed, not synced.
    /// Block order: the three meta blocks, the channels in order, `reward`, `done`,
    /// `time/timestamps_ns` when present, then the aux blocks in order.
    ///
    /// # Errors
    /// [`FormatError::BadEpisode`] from [`Episode::validate`], writer and I/O errors.
    pub fn write_to<W: Write + Seek>(
        &self,
        out: W,
        opts: &EpisodeWriteOptions,
    ) -> Result<(W, Vec<WrittenBlock>)> {
        self.validate()?;
        let plan = self.plan(opts);
        let shard_opts = ShardOptions {
            role: role::WSHARD,
            alignment: opts.alignment,
            compression_default: opts
                .compression_default
                .unwrap_or(opts.default_codec.header_code()),
            policy: opts.policy,
            ..ShardOptions::wshard()
        };
        let mut w = ShardWriter::new(
            out,
            shard_opts,
            &Reserve::names(plan.iter().map(|p| p.name.clone())),
        )?;
        for p in &plan {
            w.write_block(&p.name, &p.data, p.opts)?;
        }
        w.finish()
    }

    /// The episode's file bytes.
    ///
    /// # Errors
    /// As [`Episode::write_to`].
    pub fn to_bytes(&self, opts: &EpisodeWriteOptions) -> Result<Vec<u8>> {
        Ok(self.write_to(Cursor::new(Vec::new()), opts)?.0.into_inner())
    }

    /// Create (or truncate) `path` and write the episode. Not synced: callers that need
    /// durability fsync the file and its directory themselves.
    ///
    /// # Errors
    /// As [`Episode::write_to`], I/O errors with the path.
    pub fn write_file(
        &self,
        path: impl AsRef<std::path::Path>,
        opts: &EpisodeWriteOptions,
    ) -> Result<()> {
        let path = path.as_ref();
        let file =
            std::fs::File::create(path).map_err(|e| FormatError::io_at("create", path, e))?;
        let (buf, _) = self.write_to(std::io::BufWriter::new(file), opts)?;
        buf.into_inner()
            .map_err(|e| FormatError::io_at("flush", path, e.into_error()))?;
        Ok(())
    }
}
