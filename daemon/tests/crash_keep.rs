//! `crash_keep_*`: the keep mark (`data_dir/.keep/EP`, `wshard keep`) made and removed with
//! a power loss at every filesystem operation. Whatever the cut, after the reboot the mark
//! is there or not (an empty file, nothing else), the episode is untouched, recovery
//! leaves `.keep` alone (neither an episode nor a stranger), and doing it again completes
//! it durably.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wshard_recorder::recovery::recover_data_dir;
use wshard_recorder::session::SessionSettings;
use wshard_storage::fsio::sim::{PowerLoss, SimFs};
use wshard_storage::fsio::Fs;
use wshard_storage::keep;

const DATA: &str = "/d";
const EP: &str = "kept-ep";

/// The files of the episode: relative path and content.
fn episode_files() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            format!("{EP}_manifest.wshard"),
            format!("manifest of {EP}").into_bytes(),
        ),
        (format!("{EP}_chunk_0000.wshard"), vec![7_u8; 3000]),
    ]
}

fn write_durable(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let mut f = fs.create(path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(path.parent().unwrap()).unwrap();
}

/// A data directory holding one finished episode (and, with `marked`, its durable mark).
fn setup(marked: bool) -> SimFs {
    let fs = SimFs::new();
    fs.mkdir_durable(&Path::new(DATA).join(EP)).unwrap();
    for (rel, bytes) in episode_files() {
        write_durable(&fs, &Path::new(DATA).join(EP).join(rel), &bytes);
    }
    if marked {
        keep::mark(&fs, Path::new(DATA), EP).unwrap();
    }
    fs
}

fn episode_image(fs: &SimFs) -> BTreeMap<PathBuf, Vec<u8>> {
    fs.files(&Path::new(DATA).join(EP)).unwrap()
}

/// After a cut: the episode is untouched, `.keep` holds nothing but the (empty) mark,
/// and recovery neither touches nor reports `.keep`. Returns whether the mark is there.
fn check_image(image: &SimFs, k: u64, mode: PowerLoss) -> bool {
    let want: BTreeMap<PathBuf, Vec<u8>> = episode_files()
        .into_iter()
        .map(|(rel, b)| (Path::new(DATA).join(EP).join(rel), b))
        .collect();
    assert!(
        episode_image(image) == want,
        "k={k} {mode:?}: episode touched"
    );
    let dir = keep::keep_dir(Path::new(DATA));
    let marks = image.files(&dir).unwrap_or_default();
    let there = keep::is_kept(image, Path::new(DATA), EP);
    match marks.len() {
        0 => assert!(!there, "k={k} {mode:?}"),
        1 => assert_eq!(
            marks.get(&keep::mark_path(Path::new(DATA), EP)),
            Some(&Vec::new()),
            "k={k} {mode:?}: {marks:?}"
        ),
        _ => panic!("k={k} {mode:?}: more than the mark under .keep: {marks:?}"),
    }
    // Recovery (on a copy: the episode's stand-in files are no real episode, and it would
    // quarantine them) neither touches nor reports `.keep`.
    let copy = image.power_cut_image(PowerLoss::DropUnsynced);
    let dyn_fs: Arc<dyn Fs> = Arc::new(copy.clone());
    let rec = recover_data_dir(&dyn_fs, Path::new(DATA), &SessionSettings::default());
    assert!(
        rec.left_alone.iter().all(|l| l.name != keep::KEEP_DIR),
        "k={k}: recovery reports .keep: {:?}",
        rec.left_alone
    );
    assert_eq!(copy.files(&dir).unwrap_or_default(), marks, "k={k}");
    there
}

/// The number of filesystem operations `op` performs on a fresh `setup(marked)`.
fn ops_of(marked: bool, op: impl Fn(&SimFs)) -> u64 {
    let probe = setup(marked);
    let before = probe.ops();
    op(&probe);
    probe.ops() - before
}

#[test]
fn crash_keep_power_cut_at_every_operation_of_making_the_mark() {
    let make = |fs: &SimFs| keep::mark(fs, Path::new(DATA), EP);
    let n = ops_of(false, |fs| make(fs).unwrap());
    assert!(n >= 5, "only {n} operations");
    let mut seen = (false, false);
    for k in 0..n {
        let fs = setup(false);
        fs.crash_after(k);
        assert!(make(&fs).is_err(), "k={k}: no error at the cut");
        assert!(fs.is_crashed(), "k={k}: no crash");
        for mode in [
            PowerLoss::DropUnsynced,
            PowerLoss::KeepTailGarbage { seed: k },
        ] {
            let image = fs.power_cut_image(mode);
            let there = check_image(&image, k, mode);
            if there {
                seen.0 = true;
            } else {
                seen.1 = true;
            }
            // Asking again completes it, durably.
            make(&image).unwrap();
            let after = image.power_cut_image(PowerLoss::DropUnsynced);
            assert!(check_image(&after, k, mode), "k={k}: mark not durable");
        }
    }
    assert!(seen.1, "no cut left the mark out");
    // A cut after the last operation: the mark is durable.
    let fs = setup(false);
    make(&fs).unwrap();
    assert!(check_image(
        &fs.power_cut_image(PowerLoss::DropUnsynced),
        n,
        PowerLoss::DropUnsynced
    ));
}

#[test]
fn crash_keep_power_cut_at_every_operation_of_removing_the_mark() {
    let remove = |fs: &SimFs| keep::release(fs, Path::new(DATA), EP);
    let n = ops_of(true, |fs| assert!(remove(fs).unwrap()));
    assert!(n >= 2, "only {n} operations");
    for k in 0..n {
        let fs = setup(true);
        fs.crash_after(k);
        assert!(remove(&fs).is_err(), "k={k}: no error at the cut");
        for mode in [
            PowerLoss::DropUnsynced,
            PowerLoss::KeepTailGarbage { seed: k },
        ] {
            let image = fs.power_cut_image(mode);
            let there = check_image(&image, k, mode);
            // Asking again completes it, durably.
            assert_eq!(remove(&image).unwrap(), there, "k={k}");
            let after = image.power_cut_image(PowerLoss::DropUnsynced);
            assert!(!check_image(&after, k, mode), "k={k}: removal not durable");
        }
    }
    let fs = setup(true);
    assert!(remove(&fs).unwrap());
    assert!(!check_image(
        &fs.power_cut_image(PowerLoss::DropUnsynced),
        n,
        PowerLoss::DropUnsynced
    ));
}
