//! Reading a WShard file (role 0x05) into an [`Episode`].

use std::collections::HashSet;
use std::path::Path;

use super::meta::{parse_channels_meta, parse_episode_meta, parse_object};
use super::model::{names, AuxBlock, Episode, Timebase};
use crate::consts::role;
use crate::error::{FormatError, Result};
use crate::read::{ReadAt, ShardReader};

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn i64s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}

impl Episode {
    /// Read an episode from a file.
    ///
    /// # Errors
    /// Those of [`Episode::read`], I/O errors with the path.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self> {
        Self::read(&ShardReader::open(path)?)
    }

    /// Read an episode from bytes.
    ///
    /// # Errors
    /// As [`Episode::read`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::read(&ShardReader::from_bytes(bytes)?)
    }

    /// Read every block of a WShard shard into an episode. Requires role 0x05 and the
    /// blocks Go requires (`meta/*`, `reward`, `done`, every described channel); accepts the
    /// legacy keys and forms of spec 16. Undescribed `signal/*` / `action/*` blocks and
    /// every other block become [`AuxBlock`]s.
    ///
    /// # Errors
    /// [`FormatError::WrongRole`], [`FormatError::BlockNotFound`], [`FormatError::BadMeta`],
    /// [`FormatError::BadEpisode`] when a block's length disagrees with T and its shape, and
    /// every block read error.
    pub fn read<R: ReadAt>(r: &ShardReader<R>) -> Result<Self> {
        r.expect_role(role::WSHARD)?;
        let wshard = parse_object(names::META_WSHARD, &r.read_block(names::META_WSHARD)?)?;
        let ep_meta = parse_object(names::META_EPISODE, &r.read_block(names::META_EPISODE)?)?;
        let ch_meta = parse_object(names::META_CHANNELS, &r.read_block(names::META_CHANNELS)?)?;
        let meta = parse_episode_meta(&ep_meta, &wshard)?;
        let defs = parse_channels_meta(&ch_meta)?;

        let reward_bytes = r.read_block(names::REWARD)?;
        if reward_bytes.len() % 4 != 0 {
            return Err(FormatError::BadEpisode {
                message: format!(
                    "reward data length {} is not a multiple of 4",
                    reward_bytes.len()
                ),
            });
        }
        let done_bytes = r.read_block(names::DONE)?;
        let t = meta.length.unwrap_or(reward_bytes.len() as u64 / 4);
        let check_len = |block: &str, got: usize, step: u64| -> Result<()> {
            let want = step.checked_mul(t);
            if want != Some(got as u64) {
                return Err(FormatError::BadEpisode {
                    message: format!(
                        "block `{block}`: {got} bytes, expected {} ({step} per step x T = {t})",
                        want.map_or_else(|| "overflow".to_owned(), |w| w.to_string())
                    ),
                });
            }
            Ok(())
        };
        check_len(names::REWARD, reward_bytes.len(), 4)?;
        check_len(names::DONE, done_bytes.len(), 1)?;

        let mut ep = Episode::new(meta.id, meta.env_id, meta.timebase);
        ep.length = t;
        ep.chunk = meta.chunk;
        ep.timestep_range = meta.timestep_range;
        ep.metadata = meta.metadata;
        ep.reward = f32s(&reward_bytes);
        ep.done = done_bytes.iter().map(|&b| b != 0).collect();

        let mut owned: HashSet<String> = [
            names::META_WSHARD,
            names::META_EPISODE,
            names::META_CHANNELS,
            names::REWARD,
            names::DONE,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for def in &defs {
            let data = r.read_block(&def.block)?;
            let ch = def.to_channel(data)?;
            check_len(&def.block, ch.data.len(), ch.step_bytes()?)?;
            owned.insert(def.block.clone());
            ep.channels.push(ch);
        }
        if matches!(ep.timebase, Timebase::TimestampsNs { .. }) || r.contains(names::TIMESTAMPS_NS)
        {
            // A missing block is BlockNotFound; a corrupt one keeps its own error.
            let bytes = r.read_block(names::TIMESTAMPS_NS)?;
            check_len(names::TIMESTAMPS_NS, bytes.len(), 8)?;
            ep.timestamps_ns = Some(i64s(&bytes));
            owned.insert(names::TIMESTAMPS_NS.to_owned());
        }
        for (i, name) in r.index().names().enumerate() {
            if owned.contains(name) {
                continue;
            }
            ep.aux.push(AuxBlock::new(name, r.read_entry(i)?));
        }
        Ok(ep)
    }
}
