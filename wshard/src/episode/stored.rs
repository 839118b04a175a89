//! Reading a WShard file (role 0x05) without its data: the meta blocks decoded into an
//! [`Episode`] head, every other block kept as stored, to be written into another file
//! (e.g. a recorder copying a chunk under a new episode, chunk index and range) without
//! decompressing or hashing it again. The new file's meta blocks come from
//! [`Episode::plan_meta`], the same rules [`Episode::plan`] writes them by.

use super::meta::{parse_channels_meta, parse_episode_meta, parse_object};
use super::model::{names, AuxBlock, Episode, Timebase};
use crate::consts::role;
use crate::error::{FormatError, Result};
use crate::read::{ReadAt, ShardReader};
use crate::write::PreparedBlock;

/// Prefix of the meta blocks, which describe the file and are written anew.
const META_PREFIX: &str = "meta/";
/// Bytes per step of `reward` (f32), `done` (one byte) and `time/timestamps_ns` (i64).
const REWARD_STEP: u64 = 4;
const DONE_STEP: u64 = 1;
const TIMESTAMP_STEP: u64 = 8;

/// An episode as stored: its head (meta only) and its data blocks as they are on disk.
#[derive(Clone, Debug)]
pub struct StoredEpisode {
    /// The episode's meta: id, env, length, timebase, chunk info, range, metadata and the
    /// channels' descriptions. Its columns hold no data (channels, `reward`, `done` and the
    /// aux blocks are empty; `timestamps_ns` is `None`): only [`Episode::plan_meta`] is
    /// meant for it.
    pub head: Episode,
    /// Every block but `meta/*`, in file order, with its stored bytes, codec, original size
    /// and CRC32C ([`ShardReader::read_prepared`]).
    pub blocks: Vec<PreparedBlock<'static>>,
}

impl StoredEpisode {
    /// Read the meta blocks of `r` and every other block as stored. Checks what can be
    /// checked without decoding: the role, the meta, and each described block's original
    /// size against T and its step size.
    ///
    /// # Errors
    /// [`FormatError::WrongRole`], [`FormatError::BlockNotFound`], [`FormatError::BadMeta`],
    /// [`FormatError::BadEpisode`] when a block's original size disagrees with T, and those
    /// of [`ShardReader::read_prepared`].
    pub fn read<R: ReadAt>(r: &ShardReader<R>) -> Result<Self> {
        r.expect_role(role::WSHARD)?;
        let wshard = parse_object(names::META_WSHARD, &r.read_block(names::META_WSHARD)?)?;
        let ep_meta = parse_object(names::META_EPISODE, &r.read_block(names::META_EPISODE)?)?;
        let ch_meta = parse_object(names::META_CHANNELS, &r.read_block(names::META_CHANNELS)?)?;
        let meta = parse_episode_meta(&ep_meta, &wshard)?;
        let defs = parse_channels_meta(&ch_meta)?;
        let (_, reward) = r.entry(names::REWARD)?;
        let t = meta.length.unwrap_or(reward.orig_size / REWARD_STEP);
        let orig_size = |block: &str| r.entry(block).map(|(_, e)| e.orig_size);
        let check_len = |block: &str, step: u64| -> Result<()> {
            let got = orig_size(block)?;
            let want = step.checked_mul(t);
            if want != Some(got) {
                return Err(FormatError::BadEpisode {
                    message: format!(
                        "block `{block}`: {got} bytes, expected {} ({step} per step x T = {t})",
                        want.map_or_else(|| "overflow".to_owned(), |w| w.to_string())
                    ),
                });
            }
            Ok(())
        };
        check_len(names::REWARD, REWARD_STEP)?;
        check_len(names::DONE, DONE_STEP)?;
        let mut head = Episode::new(meta.id, meta.env_id, meta.timebase);
        head.length = t;
        head.chunk = meta.chunk;
        head.timestep_range = meta.timestep_range;
        head.metadata = meta.metadata;
        for def in &defs {
            let ch = def.to_channel(Vec::new())?;
            check_len(&def.block, ch.step_bytes()?)?;
            head.channels.push(ch);
        }
        if matches!(head.timebase, Timebase::TimestampsNs { .. })
            || r.contains(names::TIMESTAMPS_NS)
        {
            check_len(names::TIMESTAMPS_NS, TIMESTAMP_STEP)?;
        }
        let described: Vec<String> = head.channels.iter().map(|c| c.block_name()).collect();
        let mut blocks = Vec::new();
        for (i, name) in r.index().names().enumerate() {
            if name.starts_with(META_PREFIX) {
                continue;
            }
            let own = described.iter().any(|b| b == name)
                || [names::REWARD, names::DONE, names::TIMESTAMPS_NS].contains(&name);
            if !own {
                // Named, so that the meta planned for the head says what the file holds
                // (e.g. `residual_edges` for residual blocks).
                head.aux.push(AuxBlock::new(name, Vec::new()));
            }
            blocks.push(r.read_prepared(i)?);
        }
        Ok(Self { head, blocks })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Cursor;

    use super::*;
    use crate::codec::Codec;
    use crate::episode::{Channel, ChunkInfo, DType, EpisodeWriteOptions, Lane};
    use crate::write::{Reserve, ShardWriter};

    fn episode() -> Episode {
        let mut ep = Episode::new("src", "env", Timebase::TimestampsNs { dt_ns: 10 });
        let steps = 300usize;
        ep.length = steps as u64;
        ep.chunk = Some(ChunkInfo {
            chunk_index: 4,
            total_chunks: None,
        });
        ep.timestep_range = Some([1000, 1000 + steps as u64 - 1]);
        ep.push_channel(
            Channel::new(
                "cam",
                Lane::Signal,
                DType::U8,
                vec![64],
                (0..steps * 64).map(|i| (i / 97) as u8).collect(),
            )
            .with_codec(Codec::zstd()),
        );
        ep.push_channel(Channel::new(
            "q",
            Lane::Action,
            DType::U8,
            vec![3],
            (0..steps * 3).map(|i| i as u8).collect(),
        ));
        ep.set_reward((0..steps).map(|i| i as f32).collect());
        ep.set_done((0..steps).map(|i| i + 1 == steps).collect());
        ep.timestamps_ns = Some((0..steps as i64).map(|i| 5 + 10 * i).collect());
        ep.aux.push(AuxBlock::new("time/extra", vec![1, 2, 3]));
        ep
    }

    /// A file written from a stored episode's head (its chunk index, range and id changed)
    /// and its blocks as stored reads back as the source episode with those changes, and
    /// its data blocks are byte-for-byte the source's.
    #[test]
    fn stored_episode_copies_into_a_new_file_without_decoding() {
        let src = episode();
        let opts = EpisodeWriteOptions {
            default_codec: Codec::zstd(),
            ..EpisodeWriteOptions::default()
        };
        let bytes = src.to_bytes(&opts).unwrap();
        let r = ShardReader::from_bytes(bytes).unwrap();
        let stored = StoredEpisode::read(&r).unwrap();
        assert_eq!(stored.head.length, 300);
        assert!(stored.head.channels.iter().all(|c| c.data.is_empty()));
        assert!(stored.blocks.iter().all(|b| !b.name.starts_with("meta/")));
        let cam = stored
            .blocks
            .iter()
            .find(|b| b.name == "signal/cam")
            .unwrap();
        assert_ne!(cam.meta.codec, Codec::None, "kept compressed");

        let mut head = stored.head.clone();
        head.id = "copy".into();
        head.chunk = Some(ChunkInfo {
            chunk_index: 0,
            total_chunks: None,
        });
        head.timestep_range = Some([0, 299]);
        let meta = head.plan_meta(&opts);
        let names = meta
            .iter()
            .map(|p| p.name.clone())
            .chain(stored.blocks.iter().map(|b| b.name.clone()));
        let mut w = ShardWriter::new(
            Cursor::new(Vec::new()),
            opts.shard_options(),
            &Reserve::names(names),
        )
        .unwrap();
        for p in &meta {
            w.write_block(&p.name, &p.data, p.opts).unwrap();
        }
        for b in &stored.blocks {
            w.write_precompressed(&b.name, &b.stored, b.meta).unwrap();
        }
        let out = w.finish().unwrap().0.into_inner();
        let r2 = ShardReader::from_bytes(out).unwrap();
        assert!(r2.check_all().iter().all(|c| c.ok()));
        let back = Episode::read(&r2).unwrap();
        let mut want = src.clone();
        want.id = "copy".into();
        want.chunk = head.chunk;
        want.timestep_range = head.timestep_range;
        // The codec a channel asked for is not stored; its data and description are.
        assert_eq!(back.channels.len(), want.channels.len());
        for (b, w) in back.channels.iter().zip(&want.channels) {
            assert_eq!((&b.id, b.lane, &b.shape), (&w.id, w.lane, &w.shape));
            assert!(b.data == w.data, "channel {} differs", b.id);
        }
        assert_eq!(back.reward, want.reward);
        assert_eq!(back.done, want.done);
        assert_eq!(back.timestamps_ns, want.timestamps_ns);
        assert_eq!(back.id, "copy");
        assert_eq!(back.chunk, head.chunk);
        assert_eq!(back.timestep_range, head.timestep_range);
        assert_eq!(back.aux.len(), 1);
        for b in &stored.blocks {
            let (i, _) = r2.entry(&b.name).unwrap();
            assert_eq!(r2.read_stored(i).unwrap(), *b.stored, "{}", b.name);
        }
    }

    /// A block whose original size disagrees with T is refused by name, before any copy.
    #[test]
    fn stored_episode_refuses_a_block_of_the_wrong_length() {
        let mut src = episode();
        src.length = 299;
        src.reward.pop();
        src.done.pop();
        src.timestamps_ns.as_mut().unwrap().pop();
        // The channels keep 300 steps: written by hand, as Episode::write_to validates.
        let opts = EpisodeWriteOptions::default();
        let plan = src.plan(&opts);
        let mut w = ShardWriter::new(
            Cursor::new(Vec::new()),
            opts.shard_options(),
            &Reserve::names(plan.iter().map(|p| p.name.clone())),
        )
        .unwrap();
        for p in &plan {
            w.write_block(&p.name, &p.data, p.opts).unwrap();
        }
        let out = w.finish().unwrap().0.into_inner();
        let r = ShardReader::from_bytes(out).unwrap();
        let err = StoredEpisode::read(&r).unwrap_err().to_string();
        assert!(err.contains("signal/cam"), "{err}");
    }

    /// A block without a CRC32C cannot be carried over: refused, naming it.
    #[test]
    fn stored_episode_refuses_a_block_without_a_crc() {
        let opts = EpisodeWriteOptions::default();
        let mut sopts = opts.shard_options();
        sopts.flags &= !crate::consts::header_flags::HAS_CHECKSUMS;
        let src = episode();
        let plan = src.plan(&opts);
        let mut w = ShardWriter::new(
            Cursor::new(Vec::new()),
            sopts,
            &Reserve::names(plan.iter().map(|p| p.name.clone())),
        )
        .unwrap();
        for p in &plan {
            let meta = crate::write::Precompressed {
                codec: Codec::None,
                orig_size: p.data.len() as u64,
                crc32c: if p.name == "reward" {
                    0
                } else {
                    crate::hash::crc32c(&p.data)
                },
                content_type: p.opts.content_type,
            };
            w.write_precompressed(&p.name, &p.data, meta).unwrap();
        }
        let out = w.finish().unwrap().0.into_inner();
        let r = ShardReader::from_bytes(out).unwrap();
        let err = StoredEpisode::read(&r).unwrap_err().to_string();
        assert!(
            err.contains("`reward`") && err.contains("no CRC32C"),
            "{err}"
        );
    }
}
