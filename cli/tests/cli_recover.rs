//! `wshard recover`, run as the real binary on crash-like directories.

mod common;
mod live_episode;

use std::path::Path;

use common::wshard;
use live_episode::{record_and_crash, tree, EPISODE};
use serde_json::Value;
use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_recorder::runtime::lock;
use wshard_storage::layout::EpisodeLayout;

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A crashed data directory: chunks 0 and 1 published (100 steps each), 50 more steps in
/// `journal_0002.wal`, whose last batch of 10 is torn when `tear` is set.
fn crashed(tear: bool) -> (tempfile::TempDir, tempfile::TempDir) {
    let live = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    record_and_crash(live.path(), crashed.path(), 100, 250, 10);
    if tear {
        let j = EpisodeLayout::new(crashed.path(), EPISODE).journal(2);
        let len = std::fs::metadata(&j).expect("journal").len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&j)
            .expect("open journal");
        f.set_len(len - 300).expect("tear");
    }
    (live, crashed)
}

fn manifest(data_dir: &Path) -> Manifest {
    Manifest::read_file(EpisodeLayout::new(data_dir, EPISODE).manifest()).expect("manifest")
}

#[test]
fn cli_recover_dry_run_then_apply_on_a_torn_journal() {
    let (_live, dir) = crashed(true);
    let ep = dir.path().join(EPISODE);
    let before = tree(dir.path());

    // Dry run: the whole plan, data loss announced, nothing changed.
    let run = wshard(["recover".as_ref(), ep.as_os_str()]);
    assert_eq!(run.code, 3, "{run:?}");
    let out = &run.stdout;
    for needle in [
        "dry run on episode directory",
        "nothing was changed",
        "[dry run] episode ep: was recording, recovered 40 timesteps in 1 chunks",
        "to remove: journal_0002.wal",
        "journal_0002.wal",
        "end of the file",
        "planned:",
        "publish chunk 2 (40 timesteps from 200)",
        "(status recovering)",
        "remove ",
        "(status recovered)",
        "data would be lost",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert_eq!(tree(dir.path()), before, "a dry run changed files");

    let dry = wshard(["recover".as_ref(), ep.as_os_str(), "--json".as_ref()]);
    assert_eq!(dry.code, 3, "{dry:?}");
    let dry = json(&dry.stdout);
    assert_eq!(dry["mode"], "dry-run");
    assert_eq!(dry["scope"], "episode");
    assert_eq!(dry["exit_code"], 3);
    let report = &dry["episodes"][0]["report"];
    assert_eq!(report["timesteps_recovered"], 40);
    let region = &report["discarded"][0];
    assert_eq!(region["file"], "journal_0002.wal");
    assert!(region["len"].as_u64().is_some_and(|l| l > 0), "{region}");
    assert!(region["offset"].as_u64().is_some(), "{region}");
    let actions = dry["episodes"][0]["actions"].as_array().expect("actions");
    assert_eq!(actions[0]["action"], "publish_chunk");
    assert_eq!(
        actions.last().expect("an action")["action"],
        "commit_manifest"
    );
    assert_eq!(tree(dir.path()), before, "a dry run changed files");

    // Apply: the same decisions, now done.
    let applied = wshard([
        "recover".as_ref(),
        ep.as_os_str(),
        "--apply".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(applied.code, 3, "{applied:?}");
    let applied = json(&applied.stdout);
    assert_eq!(applied["mode"], "apply");
    assert_eq!(
        applied["episodes"][0]["report"], *report,
        "dry run and apply must decide the same"
    );
    assert_eq!(
        applied["episodes"][0]["actions"],
        dry["episodes"][0]["actions"]
    );
    let m = manifest(dir.path());
    assert_eq!(m.status.as_deref(), Some("recovered"));
    assert_eq!(m.total_timesteps, 240);
    assert_eq!(
        m.extra["recovery"]["discarded"][0]["file"],
        "journal_0002.wal"
    );
    assert!(!EpisodeLayout::new(dir.path(), EPISODE).journal(2).exists());
    let joined = read_episode_chunked(&EpisodeLayout::new(dir.path(), EPISODE).manifest())
        .expect("read recovered episode");
    let want: Vec<u8> = (0..240).flat_map(live_episode::payload).collect();
    assert_eq!(joined.channel("state").expect("state").data, want);
    let verify = wshard(["verify".as_ref(), "--deep".as_ref(), ep.as_os_str()]);
    assert_eq!(verify.code, 0, "{verify:?}");

    // Again: nothing left to do.
    let again = wshard(["recover".as_ref(), ep.as_os_str(), "--apply".as_ref()]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains("episode ep: nothing to do"),
        "{again:?}"
    );
}

#[test]
fn cli_recover_clean_crash_exits_zero_for_a_data_dir() {
    let (_live, dir) = crashed(false);
    let before = tree(dir.path());
    let run = wshard(["recover".as_ref(), dir.path().as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("dry run on data directory"), "{run:?}");
    assert!(run.stdout.contains("recovered 50 timesteps"), "{run:?}");
    assert!(!run.stdout.contains("lost"), "{run:?}");
    assert_eq!(tree(dir.path()), before);

    let run = wshard([
        "recover".as_ref(),
        dir.path().as_os_str(),
        "--apply".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("done:"), "{run:?}");
    let m = manifest(dir.path());
    assert_eq!(m.status.as_deref(), Some("recovered"));
    assert_eq!(m.total_timesteps, 250);
    assert!(dir.path().join(lock::LOCK_FILE).exists());

    let run = wshard([
        "recover".as_ref(),
        dir.path().as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(json(&run.stdout)["episodes"], serde_json::json!([]));
}

#[test]
fn cli_recover_refuses_while_the_lock_is_held() {
    let (_live, dir) = crashed(true);
    let ep = dir.path().join(EPISODE);
    let held = lock::acquire(dir.path()).expect("take the lock as wshardd does");
    let before = tree(dir.path());
    for args in [vec!["--apply"], vec![], vec!["--apply", "--json"]] {
        let mut argv: Vec<&std::ffi::OsStr> = vec!["recover".as_ref(), ep.as_os_str()];
        argv.extend(args.iter().map(std::ffi::OsStr::new));
        let run = wshard(&argv);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains("is in use"), "{run:?}");
        assert!(run.stderr.contains("wshardd"), "{run:?}");
        assert!(
            run.stderr
                .contains(&format!("by pid {}", std::process::id())),
            "{run:?}"
        );
        assert!(run.stdout.is_empty(), "{run:?}");
    }
    assert_eq!(tree(dir.path()), before, "a refused run changed files");
    drop(held);
    let run = wshard(["recover".as_ref(), ep.as_os_str(), "--apply".as_ref()]);
    assert_eq!(run.code, 3, "{run:?}");
}

#[test]
fn cli_recover_usage_errors_exit_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope");
    let run = wshard(["recover".as_ref(), missing.as_os_str()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("nope"), "{run:?}");
    let file = dir.path().join("f.txt");
    std::fs::write(&file, b"x").expect("write");
    let run = wshard(["recover".as_ref(), file.as_os_str()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not a directory"), "{run:?}");
    // An empty data directory: nothing to do.
    let run = wshard(["recover".as_ref(), dir.path().as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("nothing to do"), "{run:?}");
}

#[test]
fn cli_recover_quarantined_partial_is_data_loss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = dir.path().join("cam");
    std::fs::create_dir_all(&ep).expect("mkdir");
    std::fs::write(ep.join("cam_chunk_0000.wshard.partial"), vec![0u8; 4096]).expect("write");
    let run = wshard(["recover".as_ref(), ep.as_os_str()]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stdout.contains("quarantine "), "{run:?}");
    assert!(ep.join("cam_chunk_0000.wshard.partial").exists());
    assert!(!dir.path().join("quarantine").exists());
    let run = wshard(["recover".as_ref(), ep.as_os_str(), "--apply".as_ref()]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(dir
        .path()
        .join("quarantine/cam/cam_chunk_0000.wshard.partial")
        .exists());
}

/// A listed chunk that rotted while its journal still exists (a crash between the manifest
/// commit and the journal's removal, then bit rot): `wshard recover` plans to quarantine
/// the bad file and rebuild the chunk from the journal, and does so with `--apply`; the
/// episode then verifies and reads back bit-exact.
#[test]
fn cli_recover_rebuilds_a_rotted_listed_chunk_from_its_journal() {
    // Chunk 0 (timesteps 0..100) listed, 50 more timesteps in journal_0001.wal.
    let live = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    record_and_crash(live.path(), dir.path(), 100, 150, 10);
    // The journal of chunk 0 as it was before its removal: the same 100 timesteps, in the
    // same batches, recorded without rotation.
    let live2 = tempfile::tempdir().expect("tempdir");
    let dir2 = tempfile::tempdir().expect("tempdir");
    record_and_crash(live2.path(), dir2.path(), 1000, 100, 10);
    let layout = EpisodeLayout::new(dir.path(), EPISODE);
    std::fs::copy(
        EpisodeLayout::new(dir2.path(), EPISODE).journal(0),
        layout.journal(0),
    )
    .expect("copy journal");
    let mut chunk = std::fs::read(layout.chunk(0)).expect("chunk 0");
    let at = chunk.len() / 2;
    chunk[at] ^= 0x10;
    std::fs::write(layout.chunk(0), &chunk).expect("rot chunk 0");
    let ep = dir.path().join(EPISODE);

    // Nothing is lost: the chunk is rebuilt whole (exit 0, not 3).
    let run = wshard(["recover".as_ref(), ep.as_os_str()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("data would be lost"), "{run:?}");
    for needle in [
        "recovered 150 timesteps in 2 chunks (1 rebuilt from the journal)",
        "ep_chunk_0000.wshard (a chunk rebuilt whole from its journal: nothing lost)",
        "(listed chunk 0 fails verification (ep_chunk_0000.wshard has sha256",
        "rebuild chunk 0 (100 timesteps) from ",
        "publish chunk 1 (50 timesteps from 100)",
    ] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle:?} in:\n{}",
            run.stdout
        );
    }

    let run = wshard([
        "recover".as_ref(),
        ep.as_os_str(),
        "--apply".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let v = json(&run.stdout);
    assert_eq!(v["episodes"][0]["lost_data"], false, "{v}");
    let report = &v["episodes"][0]["report"];
    assert_eq!(report["chunks_rebuilt"], 1, "{report}");
    assert_eq!(report["timesteps_recovered"], 150, "{report}");
    let actions = v["episodes"][0]["actions"].as_array().expect("actions");
    let rebuilt = actions
        .iter()
        .find(|a| a["action"] == "rebuild_chunk")
        .expect("a rebuild_chunk action");
    assert_eq!(rebuilt["chunk_index"], 0);
    assert_eq!(rebuilt["timesteps"], 100);
    assert!(actions.iter().any(|a| a["action"] == "remove"
        && a["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("journal_0000.wal"))));
    let quarantined = dir
        .path()
        .join("quarantine")
        .join(EPISODE)
        .join("ep_chunk_0000.wshard");
    assert_eq!(std::fs::read(quarantined).expect("bad chunk kept"), chunk);

    let verify = wshard(["verify".as_ref(), "--deep".as_ref(), ep.as_os_str()]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let joined = read_episode_chunked(&layout.manifest()).expect("read recovered episode");
    let want: Vec<u8> = (0..150).flat_map(live_episode::payload).collect();
    assert_eq!(joined.channel("state").expect("state").data, want);
}

/// A crash during a manifest commit left `ep_manifest.wshard.tmp`, and the manifest itself
/// is corrupt: one `wshard recover --apply` finishes (the manifest quarantined, the chunks
/// adopted, the journal replayed, no temporary file left), and a second run has nothing to
/// do. (Before, the run failed removing the `.tmp` its own first commit had just renamed,
/// exit 2, leaving the episode `recovering`; only a second run finished.)
#[test]
fn recovery_cli_stale_manifest_tmp_beside_a_corrupt_manifest_finishes_in_one_run() {
    let (_live, dir) = crashed(false);
    let layout = EpisodeLayout::new(dir.path(), EPISODE);
    let good = std::fs::read(layout.manifest()).expect("manifest");
    let tmp = dir.path().join(EPISODE).join("ep_manifest.wshard.tmp");
    std::fs::write(&tmp, &good).expect("write the stale tmp");
    let mut bad = good;
    bad[0] ^= 0xFF;
    std::fs::write(layout.manifest(), &bad).expect("corrupt the manifest");
    let ep = dir.path().join(EPISODE);

    let dry = wshard(["recover".as_ref(), ep.as_os_str(), "--json".as_ref()]);
    assert_eq!(dry.code, 3, "{dry:?}");
    let run = wshard([
        "recover".as_ref(),
        ep.as_os_str(),
        "--apply".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 3, "the manifest was quarantined: {run:?}");
    let v = json(&run.stdout);
    assert_eq!(v["episodes"][0]["status"], "recovered", "{v}");
    assert_eq!(
        v["episodes"][0]["actions"],
        json(&dry.stdout)["episodes"][0]["actions"],
        "dry run and apply must decide the same"
    );
    let m = manifest(dir.path());
    assert_eq!(m.status.as_deref(), Some("recovered"));
    assert_eq!(m.total_timesteps, 250);
    for name in std::fs::read_dir(&ep)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
    {
        assert!(
            !(name.ends_with(".tmp") || name.ends_with(".partial") || name.ends_with(".wal")),
            "{name} left after one run"
        );
    }
    let q = dir
        .path()
        .join("quarantine")
        .join(EPISODE)
        .join("ep_manifest.wshard");
    assert_eq!(std::fs::read(q).expect("manifest kept"), bad);
    let again = wshard(["recover".as_ref(), ep.as_os_str(), "--apply".as_ref()]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("nothing to do"), "{again:?}");
}

/// `wshard recover` on a copy of an episode under another name refuses it (exit 2, naming
/// the episode it is a copy of) and changes nothing; on the data directory holding it, the
/// copy is left alone and listed.
#[test]
fn recovery_cli_copy_of_an_episode_is_not_an_episode() {
    let (_live, dir) = crashed(false);
    std::fs::rename(dir.path().join(EPISODE), dir.path().join("ep.bak")).expect("rename");
    let copy = dir.path().join("ep.bak");
    let before = tree(dir.path());
    for apply in [false, true] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["recover".as_ref(), copy.as_os_str()];
        if apply {
            args.push("--apply".as_ref());
        }
        let run = wshard(&args);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains("episode `ep`"), "{run:?}");
        assert_eq!(tree(dir.path()), before, "a refused run changed files");
    }
    let run = wshard([
        "recover".as_ref(),
        dir.path().as_os_str(),
        "--apply".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let v = json(&run.stdout);
    assert_eq!(v["episodes"], serde_json::json!([]), "{v}");
    assert_eq!(v["left_alone"][0]["directory"], "ep.bak", "{v}");
    let text = wshard(["recover".as_ref(), dir.path().as_os_str()]);
    assert!(
        text.stdout.contains("left alone: ") && text.stdout.contains("ep.bak"),
        "{text:?}"
    );
    let mut after = tree(dir.path());
    after.remove(&dir.path().join(lock::LOCK_FILE));
    assert_eq!(after, before, "the data directory run changed the copy");
}
