//! The torn tail of an events file, cut at recovery.
//!
//! Each event is appended and `fdatasync`ed before the next is written, so a crash can only
//! damage the last line: what survives of an append that was not synced is a prefix of it,
//! possibly ending in a sector of zeros or garbage, and the garbage may hold a `\n`. So the
//! intact part is the longest prefix of complete lines that are events with the seqs 0, 1,
//! 2, ...; when nothing after it is an event, the rest is that torn append (never
//! acknowledged) and is cut. An event after the damage means the damage is not a torn
//! append (bit rot, or an operator's edit): the file is left as it is, and the reader names
//! the bad line.

use std::path::Path;

use wshard::episode_dir::events::parse_events;
use wshard::episode_dir::names::events_file_name;

use super::super::changes::file_name;
use super::super::plan::{Action, RecoveryMode};
use super::super::report::{Discarded, RecoveryReport};
use crate::episode_files::cut_torn_tail;
use crate::error::StorageError;
use wshard_storage::fsio::Fs;

/// The event on `line` (a complete line) when it is one with `seq`.
fn is_event(line: &[u8], path: &Path, seq: Option<u64>) -> bool {
    match parse_events(line, path) {
        Ok(p) => {
            let seq_ok = match (seq, p.events.first()) {
                (Some(s), Some(e)) => e.seq == s,
                (None, Some(_)) => true,
                (_, None) => false,
            };
            p.torn_tail_bytes == 0 && p.events.len() == 1 && seq_ok
        }
        Err(_) => false,
    }
}

/// Where the intact events of `bytes` end, and whether an event follows the damage.
fn intact_end(bytes: &[u8], path: &Path) -> (usize, bool) {
    let mut end = 0;
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let mut first_bad = None;
    for (next_seq, line) in (0u64..).zip(lines.by_ref()) {
        if !line.ends_with(b"\n") || !is_event(line, path, Some(next_seq)) {
            first_bad = Some(line);
            break;
        }
        end += line.len();
    }
    // An event out of sequence counts as one after the damage.
    let event_after = first_bad
        .into_iter()
        .chain(lines)
        .any(|l| l.ends_with(b"\n") && is_event(l, path, None));
    (end, event_after)
}

/// Cut the torn tail of episode `id`'s events file in `dir` (see the module doc); true
/// when there was one. The cut is reported as discarded bytes and a `cut_events_tail`
/// action.
///
/// # Errors
/// Reading the file, or the cut, failed.
pub(crate) fn cut_events_tail(
    fs: &dyn Fs,
    dir: &Path,
    id: &str,
    mode: RecoveryMode,
    report: &mut RecoveryReport,
) -> Result<bool, StorageError> {
    let path = dir.join(events_file_name(id));
    if !fs.exists(&path) {
        return Ok(false);
    }
    let bytes = fs
        .read(&path)
        .map_err(|e| StorageError::io("read events file", &path, e))?;
    let (end, event_after) = intact_end(&bytes, &path);
    if end == bytes.len() {
        return Ok(false);
    }
    if event_after {
        tracing::warn!(
            path = %path.display(),
            offset = end,
            "events file damaged before its last event: left as it is"
        );
        return Ok(false);
    }
    let (end, len) = (end as u64, (bytes.len() - end) as u64);
    if mode.applies() {
        cut_torn_tail(fs, &path, end)?;
    }
    report.discard(Discarded {
        file: file_name(&path),
        offset: end,
        len,
        reason: "a torn last event (never acknowledged)".into(),
    });
    report.actions.push(Action::CutEventsTail {
        path,
        from_len: bytes.len() as u64,
        to_len: end,
    });
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &[u8] = b"{\"data\":\"a\",\"kind\":\"text\",\"label\":\"l\",\"seq\":0,\"source\":\"s\",\"t_ns\":1}\n";
    const B: &[u8] = b"{\"data\":\"b\",\"kind\":\"text\",\"label\":\"l\",\"seq\":1,\"source\":\"s\",\"t_ns\":2}\n";

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn recovery_events_intact_prefix_and_torn_tails() {
        let p = Path::new("e.jsonl");
        assert_eq!(intact_end(&cat(&[A, B]), p), (A.len() + B.len(), false));
        // A torn append: a prefix, zeros, or garbage holding a newline.
        assert_eq!(intact_end(&cat(&[A, &B[..20]]), p), (A.len(), false));
        assert_eq!(intact_end(&cat(&[A, &[0u8; 40]]), p), (A.len(), false));
        assert_eq!(
            intact_end(&cat(&[A, &B[..9], b"\x17\n\xff{"]), p),
            (A.len(), false)
        );
        // Damage with an event after it is not a torn append.
        assert_eq!(intact_end(&cat(&[A, b"xx\n", B]), p), (A.len(), true));
        // An event out of sequence ends the intact part.
        assert_eq!(intact_end(&cat(&[B]), p), (0, true));
    }
}
