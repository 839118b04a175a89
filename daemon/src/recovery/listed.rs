//! A journal segment whose chunk the manifest lists already (a crash between the manifest
//! commit and the journal's removal, or a recovery cut there). The journal may be the only
//! good copy of that chunk, so the chunk is verified first ([`check_listed`]): a good
//! chunk covers the records the segment replays to it (as many timesteps, and seqs dropped,
//! as the chunk lists); a bad one is rebuilt from the segment when the segment replays to
//! exactly the chunk's timesteps, and otherwise left listed (`wshard verify` reports it)
//! with the segment kept in quarantine. [`journal_fate`] then decides as for any segment.

use std::path::Path;
use std::sync::Arc;

use wshard::manifest::ChunkRef;

use super::changes::{file_name, Run, RECOVERING};
use super::chunks::check_listed;
use super::fate::{self, journal_fate, Coverage};
use super::plan::Action;
use super::replay;
use super::report::Discarded;
use super::settle::{settle, settle_file, settle_partial};
use crate::chunk::{gaps, ChunkColumns};
use crate::error::StorageError;
use crate::journal::segment::SegmentContents;

/// Settle journal segment `k` of listed chunk `k` (and chunk `k`'s `.partial`).
pub(super) fn settle_listed(
    run: &mut Run<'_>,
    k: u64,
    path: &Path,
    partial: Option<&Path>,
    seg: &SegmentContents,
) -> Result<(), StorageError> {
    let name = file_name(path);
    let Some(idx) = run.manifest.chunks.iter().position(|c| c.chunk_index == k) else {
        let nothing = Coverage::Nothing(format!("the manifest lists no chunk {k}"));
        return settle(run, path, partial, seg, &nothing);
    };
    let entry = run.manifest.chunks[idx].clone();
    let bad = check_listed(run.fs, &run.layout.dir, &entry).err();
    // Replay the segment as the chunk was made: from the chunk's first timestep, whose seq
    // is that timestep plus every seq dropped before it.
    let dropped_before = run
        .manifest
        .chunks
        .iter()
        .filter(|c| c.chunk_index < k)
        .map(gaps::chunk_dropped)
        .fold(gaps::ring_dropped(&run.manifest), u64::saturating_add);
    let first = entry.timestep_range[0];
    let replayed = seg
        .header
        .as_ref()
        .filter(|h| h.chunk_index == k && h.first_timestep == first)
        .map(|h| {
            let schema = Arc::new(h.schema.clone());
            let mut columns = ChunkColumns::new(schema.clone(), k, first);
            let (_, stopped) = replay::replay(
                seg,
                schema.step_payload_bytes,
                &mut columns,
                first.saturating_add(dropped_before),
            );
            (columns, stopped)
        });
    let coverage = match &replayed {
        None => Coverage::Nothing(format!(
            "it is not the journal of listed chunk {k} (timesteps from {first})"
        )),
        Some((columns, stopped))
            if columns.len() == entry.length_t
                && columns.gaps.total() == gaps::chunk_dropped(&entry) =>
        {
            fate::replayed(seg, stopped.as_ref())
        }
        Some((columns, _)) => Coverage::Nothing(format!(
            "it holds {} of the {} timesteps of listed chunk {k}",
            columns.len(),
            entry.length_t
        )),
    };
    let Some(why) = bad else {
        return settle(run, path, partial, seg, &coverage);
    };
    let rebuild = match (replayed, &coverage) {
        (Some((columns, _)), Coverage::UpTo(_)) if !columns.is_empty() => Some(columns),
        _ => None,
    };
    let Some(columns) = rebuild else {
        // Nothing can replace it: it stays listed, and the journal is kept.
        let why =
            format!("listed chunk {k} fails verification ({why}) and {name} cannot rebuild it");
        run.report.discard(Discarded {
            file: entry.uri.clone(),
            offset: 0,
            len: 0,
            reason: why.clone(),
        });
        return settle(run, path, partial, seg, &Coverage::Nothing(why));
    };
    let fate = journal_fate(seg, &coverage);
    settle_partial(run, partial, seg, &fate)?;
    let old = match wshard::manifest::validate_uri(&entry.uri) {
        Ok(()) => run.layout.dir.join(&entry.uri),
        Err(_) => run.layout.chunk(k),
    };
    if run.fs.exists(&old) {
        run.quarantine_rebuilt(
            &old,
            &format!("listed chunk {k} fails verification ({why}); rebuilt from {name}"),
        )?;
    }
    let n = columns.len();
    let mut ep = columns.into_episode();
    let chunk = run.write_chunk(&mut ep)?;
    run.report.actions.push(Action::RebuildChunk {
        chunk_index: k,
        journal: path.to_path_buf(),
        chunk: run.layout.chunk(k),
        timesteps: n,
        reason: why.to_string(),
    });
    run.manifest.chunks[idx] = ChunkRef {
        extra: entry.extra,
        ..chunk
    };
    run.report.timesteps_recovered += n;
    run.report.chunks_recovered += 1;
    run.report.chunks_rebuilt += 1;
    run.commit(RECOVERING)?;
    settle_file(run, path, seg, fate)
}
