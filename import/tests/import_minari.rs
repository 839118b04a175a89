//! Minari datasets (HDF5 layout of the `minari` package): one episode per `episode_N`
//! group, N+1 observation rows (the step arrays padded by one zero row), nested Dict
//! spaces as `obs/{key}` channels, f64 rewards kept exactly; bad datasets name the key.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{read_back, H5};
use wshard::episode::{DType, Lane};
use wshard_import::minari::import_minari;
use wshard_import::{EpisodeSink, ImportError, ImportOptions, SinkOptions};
use wshard_storage::fsio::RealFs;

fn import(input: &Path, data: &Path) -> Result<Vec<(String, u64)>, ImportError> {
    let sink = EpisodeSink::new(&RealFs, data, SinkOptions::default())?;
    import_minari(&sink, input, &ImportOptions::default())
        .map(|w| w.into_iter().map(|w| (w.id, w.steps)).collect())
}

/// Episode `e` of `n` steps: Dict observations {pos f32[2], img u8[2,2,1]}, actions f32[2],
/// f64 rewards, terminations/truncations, infos {success bool}.
fn episode(e: &'static str, n: u64) -> Vec<(String, H5)> {
    let k = |s: &str| format!("{e}/{s}");
    let m = n as usize;
    let mut term = vec![false; m];
    term[m - 1] = true;
    vec![
        (
            k("observations/pos"),
            H5::F32(vec![n + 1, 2], (0..(m + 1) * 2).map(|i| i as f32).collect()),
        ),
        (
            k("observations/img"),
            H5::U8(
                vec![n + 1, 2, 2, 1],
                (0..(m + 1) * 4).map(|i| i as u8).collect(),
            ),
        ),
        (
            k("actions"),
            H5::F32(vec![n, 2], (0..m * 2).map(|i| i as f32 * 0.5).collect()),
        ),
        (
            k("rewards"),
            H5::F64(vec![n], (0..m).map(|i| 0.1 * i as f64).collect()),
        ),
        (k("terminations"), H5::Bool(vec![n], term)),
        (k("truncations"), H5::Bool(vec![n], vec![false; m])),
        (k("infos/success"), H5::Bool(vec![n + 1], vec![true; m + 1])),
    ]
}

fn dataset(root: &Path, sets: &[(String, H5)]) -> PathBuf {
    let ds = root.join("pointmaze").join("umaze-v1");
    let data = ds.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let spec = r#"{"id": "PointMaze_UMaze-v3", "entry_point": "x:y", "max_episode_steps": 300}"#;
    let meta = serde_json::json!({
        "dataset_id": "pointmaze/umaze-v1", "data_format": "hdf5", "jpeg_encoding": false,
        "total_episodes": 2, "env_spec": spec,
    });
    std::fs::write(data.join("metadata.json"), meta.to_string()).unwrap();
    let owned: Vec<(&str, &H5)> = sets.iter().map(|(k, v)| (k.as_str(), v)).collect();
    common::write_h5_refs(&data.join("main_data.hdf5"), &owned, false);
    ds
}

#[test]
fn import_minari_dataset_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = episode("episode_0", 3);
    sets.extend(episode("episode_1", 2));
    let ds = dataset(dir.path(), &sets);
    let data = dir.path().join("data");
    for input in [
        ds.clone(),
        ds.join("data"),
        ds.join("data").join("main_data.hdf5"),
    ] {
        let got = import(&input, &data.join(input.file_name().unwrap())).unwrap();
        assert_eq!(
            got,
            [
                ("pointmaze_umaze-v1-000000".to_owned(), 4),
                ("pointmaze_umaze-v1-000001".to_owned(), 3)
            ]
        );
    }
    let ep = read_back(&data.join("umaze-v1"), "pointmaze_umaze-v1-000000");
    assert_eq!(ep.env_id, "PointMaze_UMaze-v3");
    assert_eq!(ep.length, 4);
    let pos = ep.channel("obs/pos").unwrap();
    assert_eq!(
        (pos.lane, pos.dtype, pos.shape.clone()),
        (Lane::Signal, DType::F32, vec![2])
    );
    assert_eq!(
        pos.data,
        (0..8)
            .flat_map(|i| (i as f32).to_le_bytes())
            .collect::<Vec<_>>()
    );
    let img = ep.channel("obs/img").unwrap();
    assert_eq!((img.dtype, img.shape.clone()), (DType::U8, vec![2, 2, 1]));
    let act = ep.channel("action").unwrap();
    assert_eq!((act.lane, act.dtype), (Lane::Action, DType::F32));
    let mut want: Vec<u8> = (0..6)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    want.extend([0; 8]); // the last row: no action
    assert_eq!(act.data, want);
    let exact = ep.channel("reward").unwrap();
    assert_eq!(exact.dtype, DType::F64);
    let mut want: Vec<u8> = (0..3)
        .flat_map(|i| (0.1 * f64::from(i)).to_le_bytes())
        .collect();
    want.extend([0; 8]);
    assert_eq!(exact.data, want);
    assert_eq!(ep.reward, [0.0, 0.1, 0.2, 0.0]);
    assert_eq!(ep.channel("terminations").unwrap().data, [0, 0, 1, 0]);
    assert_eq!(ep.channel("truncations").unwrap().data, [0, 0, 0, 0]);
    assert_eq!(ep.channel("infos/success").unwrap().data, [1, 1, 1, 1]);
    assert_eq!(ep.done, [false, false, false, true]);
    assert_eq!(ep.metadata["minari"]["dataset_id"], "pointmaze/umaze-v1");
}

fn bad(sets: Vec<(String, H5)>) -> ImportError {
    let dir = tempfile::tempdir().unwrap().keep();
    let ds = dataset(&dir, &sets);
    let e = import(&ds, &dir.join("data")).unwrap_err();
    assert!(e.is_bad_input(), "{e}");
    assert!(e.to_string().contains("main_data.hdf5"), "{e}");
    e
}

#[test]
fn import_minari_bad_datasets_name_the_key() {
    let mut s = episode("episode_0", 3);
    s.retain(|(k, _)| k != "episode_0/truncations");
    let e = bad(s);
    assert!(
        matches!(e, ImportError::MissingKey { ref key, .. } if key == "episode_0/truncations"),
        "{e}"
    );

    let mut s = episode("episode_0", 3);
    s.retain(|(k, _)| k != "episode_0/actions");
    s.push((
        "episode_0/actions".into(),
        H5::F32(vec![5, 2], vec![0.0; 10]),
    ));
    let e = bad(s);
    assert!(
        matches!(e, ImportError::LengthMismatch { ref key, .. } if key == "episode_0/actions"),
        "{e}"
    );

    let mut s = episode("episode_0", 3);
    s.retain(|(k, _)| k != "episode_0/observations/img");
    let mut jpeg = vec![0u8; 4 * 16];
    for row in jpeg.chunks_mut(16) {
        row[..3].copy_from_slice(&[0xFF, 0xD8, 0xFF]);
    }
    s.push((
        "episode_0/observations/img".into(),
        H5::U8(vec![4, 16], jpeg),
    ));
    let e = bad(s);
    assert!(
        matches!(e, ImportError::Unsupported { ref key, ref what, .. } if key == "episode_0/observations/img" && what.contains("JPEG")),
        "{e}"
    );

    let mut s = episode("episode_0", 3);
    s.push((
        "episode_0/observations/text".into(),
        H5::Text(vec!["a", "b", "c", "d"]),
    ));
    let e = bad(s);
    assert!(
        matches!(e, ImportError::Unsupported { ref key, .. } if key == "episode_0/observations/text"),
        "{e}"
    );

    let e = bad(vec![("other".into(), H5::F32(vec![1], vec![0.0]))]);
    assert!(matches!(e, ImportError::Empty { .. }), "{e}");
}

#[test]
fn import_minari_not_a_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let e = import(dir.path(), &dir.path().join("data")).unwrap_err();
    assert!(matches!(e, ImportError::NotFormat { .. }), "{e}");
    let data = dir.path().join("ds").join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("main_data.hdf5"), b"garbage").unwrap();
    let e = import(&dir.path().join("ds"), &dir.path().join("out")).unwrap_err();
    assert!(
        matches!(e, ImportError::NotFormat { expected, .. } if expected.contains("HDF5")),
        "{e}"
    );
    std::fs::write(data.join("metadata.json"), r#"{"data_format": "arrow"}"#).unwrap();
    let e = import(&dir.path().join("ds"), &dir.path().join("out")).unwrap_err();
    assert!(
        matches!(e, ImportError::Unsupported { ref key, .. } if key == "data_format"),
        "{e}"
    );
}
