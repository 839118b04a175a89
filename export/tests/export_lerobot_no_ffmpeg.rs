//! `wshard export lerobot` on a machine without ffmpeg on its PATH: a typed error naming
//! the program and how to install it, before anything is written. Its own test binary: it
//! empties this process's PATH.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod lerobot_support;

use lerobot_support::{write, Spec};
use wshard_export::lerobot::{export, LerobotError, LerobotOptions};

#[test]
fn export_lerobot_without_ffmpeg_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write(&data, &Spec::new("ep-a", 1));
    let empty = tmp.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    // The only test of this binary: nothing else reads PATH meanwhile.
    std::env::set_var("PATH", &empty);
    let out = tmp.path().join("out");
    let e = export(
        &[data],
        &out,
        &LerobotOptions::default(),
        &mut |_, _, _, _| {},
    )
    .unwrap_err();
    match &e {
        LerobotError::FfmpegMissing { program } => assert_eq!(program.to_str(), Some("ffmpeg")),
        other => panic!("{other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("ffmpeg") && text.contains("apt-get install ffmpeg"),
        "{text}"
    );
    assert!(!e.is_bad_input());
    assert!(!out.exists());
}
