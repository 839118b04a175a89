//! D4RL HDF5 files: split into episodes at terminals | timeouts (a last unterminated run is
//! an episode too), lanes and dtypes kept; bad files give errors naming the file and key.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{read_back, write_h5, H5};
use wshard::episode::{DType, Lane};
use wshard_import::d4rl::import_d4rl;
use wshard_import::{EpisodeSink, ImportError, ImportOptions, SinkOptions};
use wshard_storage::fsio::RealFs;

const N: u64 = 12;

fn import(file: &Path, data: &Path) -> Result<Vec<(String, u64)>, ImportError> {
    let sink = EpisodeSink::new(&RealFs, data, SinkOptions::default())?;
    import_d4rl(&sink, file, &ImportOptions::default())
        .map(|w| w.into_iter().map(|w| (w.id, w.steps)).collect())
}

fn flags(set: &[usize]) -> Vec<bool> {
    (0..N as usize).map(|i| set.contains(&i)).collect()
}

/// The datasets of a D4RL-style file of [`N`] steps: a terminal at 3, a timeout at 7,
/// then an unterminated run of 4.
fn d4rl_sets() -> Vec<(&'static str, H5)> {
    let n = N as usize;
    vec![
        (
            "observations",
            H5::F32(vec![N, 3], (0..n * 3).map(|i| i as f32).collect()),
        ),
        (
            "actions",
            H5::F32(vec![N, 2], (0..n * 2).map(|i| -(i as f32)).collect()),
        ),
        (
            "rewards",
            H5::F32(vec![N], (0..n).map(|i| i as f32 * 0.25).collect()),
        ),
        ("terminals", H5::Bool(vec![N], flags(&[3]))),
        ("timeouts", H5::Bool(vec![N], flags(&[7]))),
        (
            "next_observations",
            H5::F32(vec![N, 3], (0..n * 3).map(|i| i as f32 + 3.0).collect()),
        ),
        (
            "infos/qpos",
            H5::F64(vec![N, 2], (0..n * 2).map(|i| i as f64 / 8.0).collect()),
        ),
        (
            "infos/goal/xy",
            H5::F64(vec![N, 2], (0..n * 2).map(|i| i as f64).collect()),
        ),
        ("metadata/algorithm_seed", H5::I64(vec![], vec![7])),
    ]
}

#[test]
fn import_d4rl_splits_at_terminals_and_timeouts() {
    for gzip in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hopper-medium-v2.hdf5");
        write_h5(&f, &d4rl_sets(), gzip);
        let data = dir.path().join("data");
        let got = import(&f, &data).unwrap();
        assert_eq!(
            got,
            [
                ("hopper-medium-v2-000000".to_owned(), 4),
                ("hopper-medium-v2-000001".to_owned(), 4),
                ("hopper-medium-v2-000002".to_owned(), 4)
            ]
        );
        for (k, (id, _)) in got.iter().enumerate() {
            let ep = read_back(&data, id);
            let s = k * 4;
            let obs = ep.channel("obs").unwrap();
            assert_eq!(
                (obs.lane, obs.dtype, obs.shape.clone()),
                (Lane::Signal, DType::F32, vec![3])
            );
            let want: Vec<u8> = (s * 3..(s + 4) * 3)
                .flat_map(|i| (i as f32).to_le_bytes())
                .collect();
            assert_eq!(obs.data, want);
            let act = ep.channel("action").unwrap();
            assert_eq!((act.lane, act.dtype), (Lane::Action, DType::F32));
            let want: Vec<u8> = (s * 2..(s + 4) * 2)
                .flat_map(|i| (-(i as f32)).to_le_bytes())
                .collect();
            assert_eq!(act.data, want);
            assert_eq!(ep.channel("next_obs").unwrap().dtype, DType::F32);
            let qpos = ep.channel("infos/qpos").unwrap();
            assert_eq!((qpos.dtype, qpos.shape.clone()), (DType::F64, vec![2]));
            assert!(ep.channel("infos/goal/xy").is_some());
            let reward: Vec<f32> = (s..s + 4).map(|i| i as f32 * 0.25).collect();
            assert_eq!(ep.reward, reward);
            assert!(
                ep.channel("reward").is_none(),
                "f32 rewards need no exact copy"
            );
            let term = ep.channel("terminals").unwrap();
            assert_eq!(term.dtype, DType::Bool);
            assert_eq!(term.data, [0, 0, 0, u8::from(k == 0)]);
            assert_eq!(
                ep.channel("timeouts").unwrap().data,
                [0, 0, 0, u8::from(k == 1)]
            );
            assert_eq!(ep.done, [false, false, false, true]);
            let meta = ep.metadata.get("d4rl").unwrap();
            assert_eq!(meta["first_step"], s as u64);
            assert_eq!(meta["algorithm_seed"], 7.0);
        }
    }
}

fn bad(sets: Vec<(&'static str, H5)>) -> (std::path::PathBuf, ImportError) {
    let dir = tempfile::tempdir().unwrap().keep();
    let f = dir.join("bad.hdf5");
    write_h5(&f, &sets, false);
    let e = import(&f, &dir.join("data")).unwrap_err();
    assert!(e.is_bad_input(), "{e}");
    assert!(
        common::listing(&dir.join("data")).is_empty(),
        "nothing written for {e}"
    );
    assert!(e.to_string().contains(&f.display().to_string()), "{e}");
    (f, e)
}

fn without(key: &str) -> Vec<(&'static str, H5)> {
    d4rl_sets().into_iter().filter(|(k, _)| *k != key).collect()
}

#[test]
fn import_d4rl_bad_files_name_the_key() {
    let (_, e) = bad(without("timeouts"));
    assert!(
        matches!(e, ImportError::MissingKey { ref key, .. } if key == "timeouts"),
        "{e}"
    );

    let mut s = without("actions");
    s.push((
        "actions",
        H5::F32(vec![N - 1, 2], vec![0.0; (N as usize - 1) * 2]),
    ));
    let (_, e) = bad(s);
    assert!(
        matches!(e, ImportError::LengthMismatch { ref key, found, expected: N, .. } if key == "actions" && found == N - 1),
        "{e}"
    );

    let mut s = without("infos/qpos");
    s.push((
        "infos/qpos",
        H5::F64(vec![N + 1], vec![0.0; N as usize + 1]),
    ));
    let (_, e) = bad(s);
    assert!(
        matches!(e, ImportError::LengthMismatch { ref key, .. } if key == "infos/qpos"),
        "{e}"
    );

    let mut s = without("rewards");
    s.push(("rewards", H5::F32(vec![N, 2], vec![0.0; N as usize * 2])));
    let (_, e) = bad(s);
    assert!(
        matches!(e, ImportError::WrongRank { ref key, .. } if key == "rewards"),
        "{e}"
    );

    let mut s = without("observations");
    s.push(("observations", H5::F32(vec![], vec![0.0])));
    let (_, e) = bad(s);
    assert!(
        matches!(e, ImportError::WrongRank { ref key, .. } if key == "observations"),
        "{e}"
    );

    let mut s = d4rl_sets();
    s.push(("infos/name", H5::Text(vec!["a"; N as usize])));
    let (_, e) = bad(s);
    assert!(
        matches!(e, ImportError::Unsupported { ref key, .. } if key == "infos/name"),
        "{e}"
    );
}

#[test]
fn import_d4rl_not_hdf5_and_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.hdf5");
    std::fs::write(&f, b"not an HDF5 file at all").unwrap();
    let e = import(&f, &dir.path().join("data")).unwrap_err();
    assert!(
        matches!(e, ImportError::NotFormat { ref path, .. } if *path == f),
        "{e}"
    );
    let e = import(&dir.path().join("none.hdf5"), &dir.path().join("data")).unwrap_err();
    assert!(matches!(e, ImportError::Io(_)), "{e}");
}

#[test]
fn import_d4rl_u8_observations_keep_their_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pixels.hdf5");
    let mut s = without("observations");
    s.push((
        "observations",
        H5::U8(
            vec![N, 2, 2, 3],
            (0..N as usize * 12).map(|i| i as u8).collect(),
        ),
    ));
    write_h5(&f, &s, true);
    let data = dir.path().join("data");
    import(&f, &data).unwrap();
    let ep = read_back(&data, "pixels-000002");
    let obs = ep.channel("obs").unwrap();
    assert_eq!((obs.dtype, obs.shape.clone()), (DType::U8, vec![2, 2, 3]));
    assert_eq!(obs.data, (96..144).map(|i| i as u8).collect::<Vec<_>>());
}

#[test]
fn import_d4rl_output_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("same.hdf5");
    write_h5(&f, &d4rl_sets(), true);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    import(&f, &a).unwrap();
    import(&f, &b).unwrap();
    for id in common::listing(&a).iter().filter(|n| !n.starts_with('.')) {
        for file in common::listing(&a.join(id)) {
            let (x, y) = (a.join(id).join(&file), b.join(id).join(&file));
            assert_eq!(
                std::fs::read(x).unwrap(),
                std::fs::read(y).unwrap(),
                "{id}/{file}"
            );
        }
    }
}

#[test]
fn import_d4rl_channel_name_collision_is_a_format_error() {
    // f64 rewards are kept exactly as channel `reward`; a per-step dataset named `reward`
    // would be a second `signal/reward`.
    let mut s = without("rewards");
    s.push(("rewards", H5::F64(vec![N], vec![0.5; N as usize])));
    s.push(("reward", H5::F32(vec![N], vec![0.0; N as usize])));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("clash.hdf5");
    write_h5(&f, &s, false);
    let e = import(&f, &dir.path().join("data")).unwrap_err();
    assert!(matches!(e, ImportError::Format { .. }), "{e}");
    assert!(
        e.is_bad_input() && e.to_string().contains("signal/reward"),
        "{e}"
    );
    assert!(common::listing(&dir.path().join("data")).is_empty(), "{e}");
}

#[test]
fn import_d4rl_corrupt_chunk_names_key_chunk_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.hdf5");
    write_h5(&f, &d4rl_sets(), true);
    let index = 1;
    let addr = common::spoil_chunk_zlib_header(&f, "observations", index);
    let data = dir.path().join("data");
    let e = import(&f, &data).unwrap_err();
    let msg = e.to_string();
    assert!(e.is_bad_input(), "{msg}");
    assert!(
        msg.contains("bad.hdf5")
            && msg.contains("`observations`")
            && msg.contains(&format!("chunk {index} at file offset {addr}")),
        "{msg}"
    );
}
