//! One journal segment, once the chunks before it are settled: replayed into its chunk when
//! it continues the episode (or checked against its chunk when that is listed already:
//! [`super::listed`]), then removed or quarantined as [`journal_fate`] decides. A `.partial`
//! of the same chunk goes with it: removed only when the segment reads cleanly to its end
//! and is removed, since only then is everything the partial can hold in the chunk.

use std::path::Path;
use std::sync::Arc;

use super::changes::{file_name, Run, RECOVERING};
use super::fate::{self, journal_fate, Coverage};
use super::listed;
use super::plan::Action;
use super::replay;
use super::report::{Discarded, RecoveryReport};
use super::settle::{settle, settle_file, settle_partial};
use crate::chunk::{gaps, ChunkColumns};
use crate::error::StorageError;
use crate::journal::segment::{read_segment, SegmentContents};

/// Settle journal segment `k` at `path`, and chunk `k`'s `.partial` if there is one.
pub(super) fn settle_journal(
    run: &mut Run<'_>,
    k: u64,
    path: &Path,
    partial: Option<&Path>,
) -> Result<(), StorageError> {
    let bytes = run
        .fs
        .read(path)
        .map_err(|e| StorageError::io("read journal", path, e))?;
    if bytes.iter().all(|&b| b == 0) {
        // Created but never written (a crash right after creation): it holds nothing, and
        // nothing a partial chunk holds can be re-derived from it.
        if let Some(p) = partial {
            run.quarantine(p, "a partial chunk whose journal holds nothing")?;
        }
        return run.remove(path);
    }
    let seg = read_segment(&bytes);
    if k < run.listed {
        return listed::settle_listed(run, k, path, partial, &seg);
    }
    let name = file_name(path);
    for c in &seg.scan.corruptions {
        run.report.discard(Discarded {
            file: name.clone(),
            offset: c.offset,
            len: c.len,
            reason: c.reason.clone(),
        });
    }
    for (off, why) in &seg.problems {
        run.report.discard(Discarded {
            file: name.clone(),
            offset: *off,
            len: 0,
            reason: why.clone(),
        });
    }
    let len = bytes.len() as u64;
    let Some(header) = seg.header.clone() else {
        let why = "no readable segment header";
        discard_rest(&mut run.report, &name, len, why);
        return settle(run, path, partial, &seg, &Coverage::Nothing(why.into()));
    };
    if k != run.listed || header.chunk_index != k || header.first_timestep != run.next_timestep {
        let why = format!(
            "segment of chunk {} starting at timestep {} does not continue chunk {} at timestep {}",
            header.chunk_index, header.first_timestep, run.listed, run.next_timestep
        );
        discard_rest(&mut run.report, &name, len, &why);
        return settle(run, path, partial, &seg, &Coverage::Nothing(why));
    }
    if run.manifest.env_id.is_empty() {
        run.manifest.env_id.clone_from(&header.schema.env_id);
    }
    let schema = Arc::new(header.schema);
    let mut columns = ChunkColumns::new(schema.clone(), k, run.next_timestep);
    let (seq_end, stopped) =
        replay::replay(&seg, schema.step_payload_bytes, &mut columns, run.next_seq);
    run.next_seq = seq_end;
    if let Some(st) = &stopped {
        for d in dropped_regions(&seg, st.at, &name, &st.reason) {
            run.report.discard(d);
        }
    }
    let coverage = fate::replayed(&seg, stopped.as_ref());
    let fate = journal_fate(&seg, &coverage);
    // Before publishing: the chunk is written under the partial's name.
    settle_partial(run, partial, &seg, &fate)?;
    if !columns.is_empty() {
        let n = columns.len();
        let dropped = columns.gaps.total();
        let mut ep = columns.into_episode();
        let mut chunk = run.write_chunk(&mut ep)?;
        gaps::set_chunk_dropped(&mut chunk, dropped);
        run.report.actions.push(Action::PublishChunk {
            chunk_index: k,
            journal: path.to_path_buf(),
            chunk: run.layout.chunk(k),
            first_timestep: run.next_timestep,
            timesteps: n,
        });
        run.manifest.push_chunk(chunk);
        run.listed += 1;
        run.next_timestep += n;
        run.report.timesteps_recovered += n;
        run.report.chunks_recovered += 1;
        run.commit(RECOVERING)?;
    }
    settle_file(run, path, &seg, fate)
}

/// Discard all `len` bytes of `file`: the parts not already reported for it become regions
/// with `reason`, so that no byte is counted twice (a note of length 0 when every byte
/// was reported already).
pub(super) fn discard_rest(report: &mut RecoveryReport, file: &str, len: u64, reason: &str) {
    let mut covered: Vec<(u64, u64)> = report
        .discarded
        .iter()
        .filter(|d| d.file == file && d.len > 0)
        .map(|d| (d.offset, d.offset.saturating_add(d.len)))
        .collect();
    covered.sort_unstable();
    let mut rest = Vec::new();
    let mut at = 0;
    for (start, end) in covered.into_iter().chain([(len, len)]) {
        if start > at {
            rest.push((at, start - at));
        }
        at = at.max(end);
    }
    if rest.is_empty() {
        rest.push((0, 0));
    }
    report
        .discarded
        .extend(rest.into_iter().map(|(offset, len)| Discarded {
            file: file.to_owned(),
            offset,
            len,
            reason: reason.to_owned(),
        }));
}

/// The file regions of the STEPS records holding `seg.steps[from..]` (dropped after a seq
/// gap): one region per run of records not interrupted by a region the scan already
/// reported, so that no byte is counted twice.
pub(super) fn dropped_regions(
    seg: &SegmentContents,
    from: usize,
    file: &str,
    reason: &str,
) -> Vec<Discarded> {
    let first = seg
        .spans
        .partition_point(|s| s.steps_at <= from)
        .saturating_sub(1);
    let mut out: Vec<Discarded> = Vec::new();
    for span in seg.spans.get(first..).unwrap_or_default() {
        let joins = out.last().is_some_and(|d: &Discarded| {
            let prev_end = d.offset + d.len;
            !seg.scan
                .corruptions
                .iter()
                .any(|c| c.offset >= prev_end && c.offset < span.offset)
        });
        match out.last_mut() {
            Some(d) if joins => d.len = span.end - d.offset,
            _ => out.push(Discarded {
                file: file.to_owned(),
                offset: span.offset,
                len: span.end - span.offset,
                reason: reason.to_owned(),
            }),
        }
    }
    out
}
