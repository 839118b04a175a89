//! `export_output_dir_*`: the output directory rule every export follows
//! (`wshard_export::output_marker`): the export leaves a marker listing the files it wrote;
//! `--overwrite` replaces an export's own output and never removes a file no export wrote: a
//! directory without the marker, or holding a file the marker does not list, is refused
//! with a typed error naming it, and left as it was.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod lerobot_support;
mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use wshard_export::lerobot::{LerobotError, LerobotOptions};
use wshard_export::mcap::{export_mcap, McapError, McapOptions};
use wshard_export::output_marker::{list_files, read, MarkerError, MARKER_FILE};
use wshard_export::webdataset::{WebdatasetError, WebdatasetOptions};

/// The three exports, run the same way.
#[derive(Clone, Copy, Debug)]
enum Format {
    Webdataset,
    Lerobot,
    Mcap,
}

const FORMATS: [Format; 3] = [Format::Webdataset, Format::Lerobot, Format::Mcap];

/// How an export run ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Written,
    /// Refused by the output rule: no export made the directory.
    NotAnExport(String),
    /// Refused by the output rule: a file the marker does not list (its path).
    ForeignFile(PathBuf, String),
    Failed(String),
}

fn marker_outcome(e: &MarkerError) -> Outcome {
    match e {
        MarkerError::NotAnExport { .. } => Outcome::NotAnExport(e.to_string()),
        MarkerError::ForeignFile { file, .. } => Outcome::ForeignFile(file.clone(), e.to_string()),
        other => Outcome::Failed(other.to_string()),
    }
}

impl Format {
    /// An episode this export takes, in `data` (a LeRobot episode without pictures: no
    /// ffmpeg needed).
    fn episode(self, data: &Path, id: &'static str) -> PathBuf {
        match self {
            Format::Lerobot => lerobot_support::write(
                data,
                &lerobot_support::Spec {
                    rgb: false,
                    depth: false,
                    ..lerobot_support::Spec::new(id, 1)
                },
            ),
            Format::Webdataset | Format::Mcap => {
                support::write_episode(data, id, &support::Spec::default())
            }
        }
    }

    fn run(self, inputs: &[PathBuf], out: &Path, overwrite: bool) -> Outcome {
        match self {
            Format::Webdataset => {
                let opts = WebdatasetOptions {
                    overwrite,
                    resize: None,
                    ..WebdatasetOptions::default()
                };
                match wshard_export::webdataset::export(inputs, out, &opts, &mut |_| {}) {
                    Ok(_) => Outcome::Written,
                    Err(WebdatasetError::Output(e)) => marker_outcome(&e),
                    Err(e) => Outcome::Failed(e.to_string()),
                }
            }
            Format::Lerobot => {
                let opts = LerobotOptions {
                    overwrite,
                    ..LerobotOptions::default()
                };
                match wshard_export::lerobot::export(inputs, out, &opts, &mut |_, _, _, _| {}) {
                    Ok(_) => Outcome::Written,
                    Err(LerobotError::Output(e)) => marker_outcome(&e),
                    Err(e) => Outcome::Failed(e.to_string()),
                }
            }
            Format::Mcap => {
                let opts = McapOptions {
                    overwrite,
                    ..McapOptions::default()
                };
                match export_mcap(inputs, out, &opts, &|_, _| {}) {
                    Ok(r) => match r.failures().next() {
                        None => Outcome::Written,
                        Some((_, e)) => Outcome::Failed(e.to_string()),
                    },
                    Err(McapError::Output(e)) => marker_outcome(&e),
                    Err(e) => Outcome::Failed(e.to_string()),
                }
            }
        }
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    list_files(dir)
        .unwrap()
        .into_iter()
        .map(|f| {
            let bytes = fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

/// The names in `dir` (no partial directory left beside an output).
fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn export_output_dir_overwrite_never_removes_a_file_no_export_wrote() {
    for format in FORMATS {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        format.episode(&data, "ep-a");
        let out = tmp.path().join("out");
        fs::create_dir_all(out.join("notes")).unwrap();
        fs::write(out.join("notes/plan.txt"), b"mine").unwrap();
        fs::write(out.join("keep.txt"), b"also mine").unwrap();
        let before = snapshot(&out);
        let outcome = format.run(std::slice::from_ref(&data), &out, true);
        let Outcome::NotAnExport(text) = outcome else {
            panic!("{format:?}: {outcome:?}");
        };
        assert!(
            text.contains(&out.display().to_string()) && text.contains(MARKER_FILE),
            "{format:?}: {text}"
        );
        assert_eq!(snapshot(&out), before, "{format:?}");
        assert_eq!(
            names(tmp.path()),
            BTreeSet::from(["data".to_owned(), "out".to_owned()]),
            "{format:?}"
        );
    }
}

#[test]
fn export_output_dir_overwrite_replaces_an_exports_own_output() {
    for format in FORMATS {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        format.episode(&data, "ep-a");
        let out = tmp.path().join("out");
        assert_eq!(
            format.run(std::slice::from_ref(&data), &out, false),
            Outcome::Written,
            "{format:?}"
        );
        // The marker lists every file the export wrote, and nothing else is there.
        let marker = read(&out).unwrap().unwrap();
        let mut written = list_files(&out).unwrap();
        assert!(written.remove(MARKER_FILE));
        assert_eq!(marker.files, written, "{format:?}");
        assert!(!written.is_empty());
        let first = snapshot(&out);

        // Its own output is replaced (the same inputs give the same bytes).
        assert_eq!(
            format.run(std::slice::from_ref(&data), &out, true),
            Outcome::Written,
            "{format:?}"
        );
        assert_eq!(snapshot(&out), first, "{format:?}");

        // A file someone added is never removed: the export is refused, naming it.
        let sub = written
            .iter()
            .find_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_owned()))
            .unwrap_or_default();
        let added = out.join(&sub).join("README.txt");
        fs::write(&added, b"added by hand").unwrap();
        let with_added = snapshot(&out);
        let outcome = format.run(std::slice::from_ref(&data), &out, true);
        let Outcome::ForeignFile(file, text) = outcome else {
            panic!("{format:?}: {outcome:?}");
        };
        assert_eq!(file, added, "{format:?}: {text}");
        assert!(text.contains("README.txt"), "{format:?}: {text}");
        assert_eq!(snapshot(&out), with_added, "{format:?}");
        assert_eq!(
            names(tmp.path()),
            BTreeSet::from(["data".to_owned(), "out".to_owned()]),
            "{format:?}"
        );
    }
}

#[test]
fn export_output_dir_a_marker_naming_a_path_outside_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    Format::Webdataset.episode(&data, "ep-a");
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    fs::write(tmp.path().join("precious.txt"), b"outside").unwrap();
    fs::write(
        out.join(MARKER_FILE),
        br#"{"export": "webdataset", "files": ["../precious.txt"]}"#,
    )
    .unwrap();
    let outcome = Format::Webdataset.run(&[data], &out, true);
    let Outcome::Failed(text) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        text.contains(MARKER_FILE) && text.contains("../precious.txt"),
        "{text}"
    );
    assert_eq!(
        fs::read(tmp.path().join("precious.txt")).unwrap(),
        b"outside"
    );
}

#[test]
fn export_output_dir_mcap_keeps_the_files_of_other_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = Format::Mcap.episode(&data, "ep-a");
    let b = Format::Mcap.episode(&data, "ep-b");
    let out = tmp.path().join("out");
    assert_eq!(
        Format::Mcap.run(&[a, b.clone()], &out, false),
        Outcome::Written
    );
    let a_bytes = fs::read(out.join("ep-a.mcap")).unwrap();
    // One episode again: its file is replaced, the other episode's file stays listed.
    assert_eq!(Format::Mcap.run(&[b], &out, true), Outcome::Written);
    assert_eq!(fs::read(out.join("ep-a.mcap")).unwrap(), a_bytes);
    let marker = read(&out).unwrap().unwrap();
    assert_eq!(marker.export, "mcap");
    assert_eq!(
        marker.files,
        BTreeSet::from(["ep-a.mcap".to_owned(), "ep-b.mcap".to_owned()])
    );
}

#[test]
fn export_output_dir_empty_directories_hold_nothing_to_keep() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    Format::Webdataset.episode(&data, "ep-a");
    let out = tmp.path().join("out");
    assert_eq!(
        Format::Webdataset.run(std::slice::from_ref(&data), &out, false),
        Outcome::Written
    );
    fs::create_dir_all(out.join("empty/inside")).unwrap();
    assert_eq!(
        Format::Webdataset.run(std::slice::from_ref(&data), &out, true),
        Outcome::Written
    );
    assert!(!out.join("empty").exists());
    // A directory that holds a file is kept, and the export refused.
    fs::create_dir_all(out.join("kept")).unwrap();
    fs::write(out.join("kept/file"), b"x").unwrap();
    let outcome = Format::Webdataset.run(&[data], &out, true);
    assert!(
        matches!(outcome, Outcome::ForeignFile(ref f, _) if *f == out.join("kept/file")),
        "{outcome:?}"
    );
}
