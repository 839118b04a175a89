//! A reader that closes the pipe early (`wshard cat ... | head`) ends the command quietly,
//! as Unix tools end: killed by SIGPIPE (status 141 in a shell), nothing on stderr. Each
//! verb below writes far more than a pipe holds, to a real pipe whose read end the test
//! closes after the first bytes.

mod common;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::write_raw_episode;
use wshard::episode::{Channel, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::write_episode_chunked;

/// Steps of the large episode: its `signal/obs` (f32 [8]) is 1.6 MB raw, more as CSV.
const STEPS: usize = 50_000;
/// SIGPIPE's number on Linux.
const SIGPIPE: i32 = 13;

/// A single-stream episode directory `dir/big` of [`STEPS`] steps in one chunk, and that
/// chunk.
fn big_episode(dir: &Path) -> (PathBuf, PathBuf) {
    let mut ep = Episode::new("big", "SimEnv-v0", Timebase::ticks(50.0));
    #[allow(clippy::cast_precision_loss)]
    let obs: Vec<f32> = (0..STEPS * 8).map(|i| i as f32 * 0.25).collect();
    ep.push_channel(Channel::from_f32("obs", Lane::Signal, vec![8], &obs).expect("obs"));
    ep.set_reward(vec![0.5; STEPS]);
    ep.set_done((0..STEPS).map(|i| i + 1 == STEPS).collect());
    let episode_dir = dir.join("big");
    std::fs::create_dir_all(&episode_dir).expect("episode dir");
    write_episode_chunked(
        &ep,
        &episode_dir,
        STEPS as u64,
        &EpisodeWriteOptions::default(),
    )
    .expect("write episode");
    let chunk = episode_dir.join("big_chunk_0000.wshard");
    assert!(chunk.is_file(), "{}", chunk.display());
    (episode_dir, chunk)
}

/// A shard whose `meta/wshard` block is 2 MB of JSON (`inspect --verbose` prints it).
fn big_meta_shard(dir: &Path) -> PathBuf {
    let path = dir.join("big-meta.wshard");
    let doc = format!("{{\"pad\": \"{}\"}}", "x".repeat(2 << 20));
    write_raw_episode(&path, &[("meta/wshard", doc.as_bytes())]);
    path
}

/// Run `wshard ARGS` with stdout on a pipe, read its first bytes, close the pipe, and
/// return how it ended and its stderr.
fn run_into_closed_pipe(args: &[&std::ffi::OsStr]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wshard"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wshard");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("the first bytes");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    (child.wait().expect("wait"), stderr)
}

#[test]
fn cli_closed_pipe_ends_every_writing_verb_quietly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, chunk) = big_episode(tmp.path());
    let meta = big_meta_shard(tmp.path());
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec![
            "cat".as_ref(),
            chunk.as_os_str(),
            "signal/obs".as_ref(),
            "--format".as_ref(),
            "csv".as_ref(),
        ],
        vec![
            "cat".as_ref(),
            chunk.as_os_str(),
            "signal/obs".as_ref(),
            "--format".as_ref(),
            "raw".as_ref(),
        ],
        vec![
            "cat".as_ref(),
            "--aligned".as_ref(),
            dir.as_os_str(),
            "--clock".as_ref(),
            "main".as_ref(),
        ],
        vec![
            "cat".as_ref(),
            "--aligned".as_ref(),
            dir.as_os_str(),
            "--clock".as_ref(),
            "main".as_ref(),
            "--format".as_ref(),
            "jsonl".as_ref(),
        ],
        vec!["inspect".as_ref(), meta.as_os_str(), "--verbose".as_ref()],
        vec![
            "inspect".as_ref(),
            meta.as_os_str(),
            "--verbose".as_ref(),
            "--json".as_ref(),
        ],
    ];
    for args in &cases {
        let (status, stderr) = run_into_closed_pipe(args);
        assert_eq!(
            (status.code(), status.signal()),
            (None, Some(SIGPIPE)),
            "{args:?}: {status:?}, stderr: {stderr}"
        );
        assert_eq!(stderr, "", "{args:?}");
    }
}
