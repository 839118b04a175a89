//! Checking one file on its own: every block decoded and CRC-checked, then the episode or
//! manifest structure. Following a manifest's chunks is [the `verify` module](super)'s job.

use std::path::Path;

use wshard::consts::role;
use wshard::episode::Episode;
use wshard::manifest::Manifest;
use wshard::read::{BlockCheck, ReadAt, ShardReader};

use super::deep::check_episode;
use super::report::FileReport;
use crate::shard_view::describe::{is_block_read_error, peek_header, Kind};

/// What an episode file holds that a manifest entry must agree with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeFacts {
    /// T.
    pub length: u64,
    /// `chunk_index` from `meta/episode`, when present.
    pub chunk_index: Option<u64>,
    /// `timestep_range` from `meta/episode`, when present.
    pub timestep_range: Option<[u64; 2]>,
    /// The channel schema, one `block dtype [shape]` per channel in order; every chunk of
    /// an episode must have the same.
    pub channels: Vec<String>,
    /// The first and last `time/timestamps_ns` value, when the block has any: the next
    /// chunk of the episode must not start below the last.
    pub timestamps: Option<[i64; 2]>,
}

impl EpisodeFacts {
    fn of(ep: &Episode) -> Self {
        Self {
            length: ep.length,
            chunk_index: ep.chunk.map(|c| c.chunk_index),
            timestep_range: ep.timestep_range,
            channels: ep
                .channels
                .iter()
                .map(|c| format!("{} {} {:?}", c.block_name(), c.dtype.code(), c.shape))
                .collect(),
            timestamps: ep
                .timestamps_ns
                .as_deref()
                .and_then(|t| Some([*t.first()?, *t.last()?])),
        }
    }
}

/// One file checked.
#[derive(Clone, Debug)]
pub struct Checked {
    pub report: FileReport,
    /// Set when the file is a structurally valid episode.
    pub episode: Option<EpisodeFacts>,
    /// Set when the file is a manifest that parses.
    pub manifest: Option<Manifest>,
}

/// `block `name` (#i): message`, without repeating the block name the message may start with.
fn block_message(check: &BlockCheck, message: &str) -> String {
    let prefix = format!("block `{}`: ", check.name);
    let rest = message.strip_prefix(&prefix).unwrap_or(message);
    format!("block `{}` (#{}): {rest}", check.name, check.entry)
}

/// Every entry's `name_hash` must be the xxHash64 of its name: readers find blocks by it, so
/// a block with a wrong hash cannot be found by name. Returns whether any was wrong.
fn check_name_hashes<R: ReadAt>(reader: &ShardReader<R>, report: &mut FileReport) -> bool {
    let index = reader.index();
    let mut any_bad = false;
    for (i, e) in index.entries().iter().enumerate() {
        let Some(name) = index.name(i) else { continue };
        let want = wshard::hash::name_hash(name);
        if e.name_hash != want {
            any_bad = true;
            report.problem(format!(
                "block `{name}` (#{i}): name_hash {:#018x} is not the xxHash64 of the name \
                 ({want:#018x}); readers cannot find this block by name",
                e.name_hash
            ));
        }
    }
    any_bad
}

/// Decode every block and report each bad one. Returns whether any block was bad.
fn check_blocks<R: ReadAt>(reader: &ShardReader<R>, report: &mut FileReport) -> bool {
    let mut any_bad = check_name_hashes(reader, report);
    for check in reader.check_all() {
        let Some(message) = &check.error else {
            continue;
        };
        any_bad = true;
        let text = block_message(&check, message);
        // check_all keeps only the text; read again to learn whether it was an I/O failure.
        let io = check.computed_crc.is_none()
            && reader
                .read_entry(check.entry)
                .err()
                .is_some_and(|e| e.is_io());
        if io {
            report.io_error(text);
        } else {
            report.problem(text);
        }
    }
    any_bad
}

/// Check the file at `path`: open it, decode every block and check every CRC; for an episode
/// (role 0x05) also read it as an episode (meta blocks, required blocks, lengths against
/// shapes); for a manifest (role 0x04) parse the manifest. Never stops at the first problem.
/// With `deep`, an episode also gets [`check_episode`]: every block against its meta, each
/// problem reported.
#[must_use]
pub fn check_file(path: &Path, deep: bool) -> Checked {
    let mut report = FileReport::new(path);
    let reader = match ShardReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            if let Some(h) = peek_header(path) {
                report.kind = Kind::from_role(h.role);
            }
            report.error(&e);
            return Checked {
                report,
                episode: None,
                manifest: None,
            };
        }
    };
    report.kind = Kind::from_role(reader.header().role);
    report.blocks = reader.index().len();
    let blocks_bad = check_blocks(&reader, &mut report);
    let mut episode = None;
    let mut manifest = None;
    let deep_problems = if deep && reader.header().role == role::WSHARD {
        let found = check_episode(&reader);
        for w in found.warnings {
            report.warning(w);
        }
        let any = !found.problems.is_empty();
        for p in found.problems {
            report.problem(p);
        }
        any
    } else {
        false
    };
    match reader.header().role {
        role::WSHARD => match Episode::read(&reader) {
            Ok(ep) => episode = Some(EpisodeFacts::of(&ep)),
            Err(e) if blocks_bad && is_block_read_error(&e) => {}
            // The deep checks already named this problem, with all the others.
            Err(_) if deep_problems => {}
            Err(e) => report.error(&e),
        },
        role::MANIFEST => match Manifest::read(&reader) {
            Ok(m) => manifest = Some(m),
            Err(e) if blocks_bad && is_block_read_error(&e) => {}
            Err(e) => report.error(&e),
        },
        _ => {}
    }
    Checked {
        report,
        episode,
        manifest,
    }
}
