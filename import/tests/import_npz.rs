//! DreamerV3 NPZ episode files: stored and deflated archives become episodes with the
//! right lanes, dtypes and values; bad files give errors naming the file and key.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{bools, dreamer_members, f32s, npy, read_back, write_npz};
use wshard::episode::{DType, Lane, Timebase};
use wshard_import::dreamer::import_npz;
use wshard_import::{EpisodeSink, ImportError, ImportOptions, SinkOptions};
use wshard_storage::fsio::RealFs;

fn import(
    inputs: &[PathBuf],
    data: &Path,
    opts: &ImportOptions,
) -> Result<Vec<String>, ImportError> {
    let sink = EpisodeSink::new(&RealFs, data, SinkOptions::default())?;
    import_npz(&sink, inputs, opts).map(|w| w.into_iter().map(|w| w.id).collect())
}

#[test]
fn import_npz_dreamer_episodes_stored_and_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("episodes");
    std::fs::create_dir(&src).unwrap();
    write_npz(
        &src.join("20240101T000000-abc-7.npz"),
        &dreamer_members(7),
        false,
    );
    write_npz(
        &src.join("20240101T000001-def-4.npz"),
        &dreamer_members(4),
        true,
    );
    std::fs::write(src.join("notes.txt"), "not an episode").unwrap();
    let data = dir.path().join("data");
    let ids = import(
        &[src],
        &data,
        &ImportOptions {
            hz: Some(20.0),
            ..ImportOptions::default()
        },
    )
    .unwrap();
    assert_eq!(ids, ["20240101T000000-abc-7", "20240101T000001-def-4"]);
    for (id, t) in [(&ids[0], 7u64), (&ids[1], 4)] {
        let ep = read_back(&data, id);
        assert_eq!(ep.length, t);
        assert_eq!(ep.timebase, Timebase::Ticks { tick_hz: 20.0 });
        let want = dreamer_members(t);
        let raw = |k: &str| {
            let b = &want.iter().find(|(n, _)| *n == k).unwrap().1;
            b[b.len()
                - ep.channel(match k {
                    "image" => "obs/image",
                    "state" => "obs/state",
                    other => other,
                })
                .unwrap()
                .data
                .len()..]
                .to_vec()
        };
        let image = ep.channel("obs/image").unwrap();
        assert_eq!(
            (image.lane, image.dtype, image.shape.clone()),
            (Lane::Signal, DType::U8, vec![4, 5, 3])
        );
        assert_eq!(image.data, raw("image"));
        let state = ep.channel("obs/state").unwrap();
        assert_eq!(
            (state.dtype, state.data.clone()),
            (DType::F64, raw("state"))
        );
        let action = ep.channel("action").unwrap();
        assert_eq!(
            (action.lane, action.dtype, action.shape.clone()),
            (Lane::Action, DType::F32, vec![3])
        );
        assert_eq!(action.data, raw("action"));
        for flag in ["is_first", "is_last", "is_terminal"] {
            let c = ep.channel(flag).unwrap();
            assert_eq!(
                (c.lane, c.dtype, c.shape.clone()),
                (Lane::Signal, DType::Bool, vec![])
            );
            assert_eq!(c.data, raw(flag), "{flag}");
        }
        assert_eq!(ep.channel("discount").unwrap().dtype, DType::F32);
        assert_eq!(ep.channel("log_len").unwrap().dtype, DType::I64);
        // f32 rewards: the reward block only, no exact copy.
        assert!(ep.channel("reward").is_none());
        let want_r: Vec<f32> = (0..t).map(|i| i as f32 * 0.5).collect();
        assert_eq!(ep.reward, want_r);
        let mut done = vec![false; usize::try_from(t).unwrap()];
        *done.last_mut().unwrap() = true;
        assert_eq!(ep.done, done);
    }
}

#[test]
fn import_npz_prefix_ids_and_f64_rewards_kept() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a b.npz");
    let mut m = dreamer_members(3);
    m.retain(|(k, _)| *k != "reward");
    m.push(("reward", npy("<f8", &[3], &common::f64s(&[0.1, 0.2, 0.3]))));
    write_npz(&f, &m, true);
    let data = dir.path().join("data");
    let opts = ImportOptions {
        prefix: Some("run".into()),
        ..ImportOptions::default()
    };
    assert_eq!(
        import(std::slice::from_ref(&f), &data, &opts).unwrap(),
        ["run-000000"]
    );
    let ep = read_back(&data, "run-000000");
    let exact = ep.channel("reward").unwrap();
    assert_eq!(
        (exact.dtype, exact.data.clone()),
        (DType::F64, common::f64s(&[0.1, 0.2, 0.3]))
    );
    assert_eq!(ep.reward, vec![0.1f32, 0.2, 0.3]);
    // Without a prefix the stem is made id-safe.
    let data2 = dir.path().join("data2");
    assert_eq!(
        import(&[f], &data2, &ImportOptions::default()).unwrap(),
        ["a_b"]
    );
}

fn one_bad(members: Vec<(&str, Vec<u8>)>) -> (PathBuf, ImportError) {
    let dir = tempfile::tempdir().unwrap().keep();
    let f = dir.join("ep.npz");
    write_npz(&f, &members, false);
    let e = import(
        std::slice::from_ref(&f),
        &dir.join("data"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(e.is_bad_input(), "{e}");
    assert!(
        !dir.join("data").join("ep").exists(),
        "no episode for a bad file"
    );
    (f, e)
}

#[test]
fn import_npz_object_array_is_refused_naming_file_and_key() {
    let mut m = dreamer_members(3);
    m.push((
        "log_info",
        npy("|O", &[3], &[0x80, 0x04, 0x95, 0, 0, 0, 0, 0]),
    ));
    let (f, e) = one_bad(m);
    let text = e.to_string();
    assert!(
        matches!(e, ImportError::Unsupported { ref key, .. } if key == "log_info"),
        "{text}"
    );
    assert!(
        text.contains(&f.display().to_string()) && text.contains("pickled"),
        "{text}"
    );
}

#[test]
fn import_npz_missing_key_length_mismatch_and_rank() {
    let mut m = dreamer_members(3);
    m.retain(|(k, _)| *k != "is_last");
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::MissingKey { ref key, .. } if key == "is_last"),
        "{e}"
    );

    let mut m = dreamer_members(3);
    m.retain(|(k, _)| *k != "action");
    m.push(("action", npy("<f4", &[2, 3], &f32s(&[0.0; 6]))));
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::LengthMismatch { ref key, found: 2, expected: 3, .. } if key == "action"),
        "{e}"
    );

    let mut m = dreamer_members(3);
    m.push(("log_total", npy("<f4", &[], &f32s(&[1.0]))));
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::WrongRank { ref key, .. } if key == "log_total"),
        "{e}"
    );

    let mut m = dreamer_members(3);
    m.retain(|(k, _)| *k != "is_first");
    m.push(("is_first", npy("|b1", &[3, 2], &bools(&[true; 6]))));
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::WrongRank { ref key, .. } if key == "is_first"),
        "{e}"
    );

    let mut m = dreamer_members(3);
    m.push(("text", npy("<U3", &[3], &[0; 36])));
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::Unsupported { ref key, .. } if key == "text"),
        "{e}"
    );

    let mut m = dreamer_members(3);
    m.push(("cut", npy("<f4", &[3], &[0; 11])));
    let (_, e) = one_bad(m);
    assert!(
        matches!(e, ImportError::BadData { ref key, .. } if key == "cut"),
        "{e}"
    );
}

#[test]
fn import_npz_not_a_zip_and_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.npz");
    std::fs::write(&f, b"this is not a zip archive").unwrap();
    let e = import(
        std::slice::from_ref(&f),
        &dir.path().join("data"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, ImportError::NotFormat { ref path, .. } if *path == f),
        "{e}"
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = import(
        &[empty],
        &dir.path().join("data"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ImportError::Empty { .. }), "{e}");
    let e = import(
        &[dir.path().join("missing.npz")],
        &dir.path().join("data"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ImportError::Io(_)), "{e}");
}

#[test]
fn import_npz_duplicate_and_bad_ids_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    write_npz(&a.join("ep.npz"), &dreamer_members(2), false);
    write_npz(&b.join("ep.npz"), &dreamer_members(2), false);
    let data = dir.path().join("data");
    let e = import(&[a.clone(), b], &data, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(e, ImportError::DuplicateEpisodeId { ref id, .. } if id == "ep"),
        "{e}"
    );
    assert!(!data.join("ep").exists());
    let opts = ImportOptions {
        prefix: Some("bad/prefix".into()),
        ..ImportOptions::default()
    };
    let e = import(&[a], &data, &opts).unwrap_err();
    assert!(matches!(e, ImportError::BadEpisodeId { .. }), "{e}");
}
