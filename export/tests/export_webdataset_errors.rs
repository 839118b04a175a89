//! `wshard export webdataset` (library): every failure is a typed error naming what was
//! wrong, and a failed export leaves the output directory as it was.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod support;

use std::path::{Path, PathBuf};

use support::{write_episode, Spec};
use wshard::episode_dir::index::EpisodeStatus;
use wshard::IoError;
use wshard_export::inputs::InputsError;
use wshard_export::webdataset::{
    export, parse_resize, LowdimClock, WebdatasetError, WebdatasetOptions,
};

fn try_export(
    inputs: &[PathBuf],
    out: &Path,
    opts: &WebdatasetOptions,
) -> Result<(), Box<WebdatasetError>> {
    export(inputs, out, opts, &mut |_| {})
        .map(|_| ())
        .map_err(Box::new)
}

fn one_episode(spec: &Spec) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(&data, "ep-a", spec);
    (tmp, data)
}

/// No output directory and no partial directory beside it.
fn assert_nothing_written(tmp: &Path) {
    let names: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["data"], "left behind: {names:?}");
}

#[test]
fn export_webdataset_unknown_image_channel() {
    let (tmp, data) = one_episode(&Spec::default());
    let opts = WebdatasetOptions {
        image: Some("cam/left".into()),
        ..WebdatasetOptions::default()
    };
    let e = try_export(&[data], &tmp.path().join("out"), &opts).unwrap_err();
    assert!(matches!(*e, WebdatasetError::UnknownImage { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("ep-a") && text.contains("cam/left") && text.contains("cam/rgb, cam/depth"),
        "{text}"
    );
    assert!(e.is_bad_input());
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_image_that_is_not_a_picture() {
    let (tmp, data) = one_episode(&Spec::default());
    let opts = WebdatasetOptions {
        image: Some("arm/q".into()),
        ..WebdatasetOptions::default()
    };
    let e = try_export(&[data], &tmp.path().join("out"), &opts).unwrap_err();
    assert!(matches!(*e, WebdatasetError::NotAPicture { .. }), "{e}");
    assert!(e.to_string().contains("arm/q"), "{e}");
    // Not STREAM/CHANNEL at all: an option error, before reading anything.
    let opts = WebdatasetOptions {
        image: Some("rgb".into()),
        ..WebdatasetOptions::default()
    };
    let e = try_export(&[tmp.path().join("data")], &tmp.path().join("out"), &opts).unwrap_err();
    assert!(
        matches!(
            *e,
            WebdatasetError::BadOption {
                option: "image",
                ..
            }
        ),
        "{e}"
    );
    assert!(!e.is_bad_input());
}

#[test]
fn export_webdataset_no_picture_channel() {
    let (tmp, data) = one_episode(&Spec {
        pictures: false,
        ..Spec::default()
    });
    let e = try_export(
        &[data],
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::NoPictureChannel { ref episode } if episode == "ep-a"),
        "{e}"
    );
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_nan_fails_with_fail_on_nan_else_drops() {
    let (tmp, data) = one_episode(&Spec {
        nan_at: Some(100),
        ..Spec::default()
    });
    // The arm's clock, so that the NaN's row is its step. Failing is the default.
    let opts = WebdatasetOptions {
        lowdim_clock: LowdimClock::Stream("arm".into()),
        ..WebdatasetOptions::default()
    };
    assert!(opts.fail_on_nan);
    let e = try_export(std::slice::from_ref(&data), &tmp.path().join("out"), &opts).unwrap_err();
    match &*e {
        WebdatasetError::NonFinite {
            episode,
            channel,
            row,
            ..
        } => assert_eq!(
            (episode.as_str(), channel.as_str(), *row),
            ("ep-a", "arm/q", 100)
        ),
        other => panic!("{other}"),
    }
    assert_nothing_written(tmp.path());
    // Without it (--drop-non-finite) the samples whose window holds the NaN are dropped and
    // counted.
    let opts = WebdatasetOptions {
        fail_on_nan: false,
        ..opts
    };
    export(&[data], &tmp.path().join("out"), &opts, &mut |_| {}).unwrap();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("out/processing_metadata.json")).unwrap(),
    )
    .unwrap();
    let dropped = meta["episodes"][0]["dropped_non_finite"].as_u64().unwrap();
    assert!(dropped > 0);
    let stats = std::fs::read_to_string(tmp.path().join("out/stats.json")).unwrap();
    assert!(!stats.contains("null") && !stats.contains("NaN"), "{stats}");
}

#[test]
fn export_webdataset_refuses_a_non_empty_output() {
    let (tmp, data) = one_episode(&Spec::default());
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), b"mine").unwrap();
    let e = try_export(
        std::slice::from_ref(&data),
        &out,
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(*e, WebdatasetError::OutputNotEmpty { .. }), "{e}");
    assert!(!e.is_bad_input());
    assert_eq!(std::fs::read(out.join("keep.txt")).unwrap(), b"mine");
    // An empty directory is fine; --overwrite replaces an export's output, never a
    // directory holding what no export wrote (export_output_dir.rs has the whole rule).
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    try_export(
        std::slice::from_ref(&data),
        &empty,
        &WebdatasetOptions::default(),
    )
    .unwrap();
    let opts = WebdatasetOptions {
        overwrite: true,
        ..WebdatasetOptions::default()
    };
    let e = try_export(std::slice::from_ref(&data), &out, &opts).unwrap_err();
    assert!(matches!(*e, WebdatasetError::Output(_)), "{e}");
    assert!(!e.is_bad_input());
    assert_eq!(std::fs::read(out.join("keep.txt")).unwrap(), b"mine");
    try_export(&[data], &empty, &opts).unwrap();
    assert!(empty.join("shard_000000.tar").exists());
}

#[test]
fn export_webdataset_bad_options() {
    let (tmp, data) = one_episode(&Spec::default());
    let cases = [
        (
            "stride",
            WebdatasetOptions {
                stride: 0,
                ..WebdatasetOptions::default()
            },
        ),
        (
            "samples-per-shard",
            WebdatasetOptions {
                samples_per_shard: 0,
                ..WebdatasetOptions::default()
            },
        ),
        (
            "image-offsets",
            WebdatasetOptions {
                image_offsets: vec![],
                ..WebdatasetOptions::default()
            },
        ),
        (
            "image-offsets",
            WebdatasetOptions {
                image_offsets: vec![0, 0],
                ..WebdatasetOptions::default()
            },
        ),
        (
            "resize",
            WebdatasetOptions {
                resize: Some((0, 4)),
                ..WebdatasetOptions::default()
            },
        ),
        (
            "lowdim-hz",
            WebdatasetOptions {
                lowdim_clock: LowdimClock::Rate(0.0),
                ..WebdatasetOptions::default()
            },
        ),
        (
            "still-threshold",
            WebdatasetOptions {
                still_threshold: f64::NAN,
                ..WebdatasetOptions::default()
            },
        ),
        (
            "max-episodes",
            WebdatasetOptions {
                max_episodes: Some(0),
                ..WebdatasetOptions::default()
            },
        ),
    ];
    for (name, opts) in cases {
        let e =
            try_export(std::slice::from_ref(&data), &tmp.path().join("out"), &opts).unwrap_err();
        assert!(
            matches!(*e, WebdatasetError::BadOption { option, .. } if option == name),
            "{name}: {e}"
        );
    }
    assert!(parse_resize("64x48").is_ok_and(|r| r == Some((64, 48))));
    assert!(parse_resize("none").is_ok_and(|r| r.is_none()));
    assert!(parse_resize("64").is_err() && parse_resize("ax4").is_err());
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_unknown_lowdim_clock_stream() {
    let (tmp, data) = one_episode(&Spec::default());
    let opts = WebdatasetOptions {
        lowdim_clock: LowdimClock::Stream("imu".into()),
        ..WebdatasetOptions::default()
    };
    let e = try_export(&[data], &tmp.path().join("out"), &opts).unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::UnknownLowdimClock { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("imu") && e.to_string().contains("arm"),
        "{e}"
    );
}

#[test]
fn export_webdataset_inputs_left_out_and_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(&data, "ep-b", &Spec::default());
    write_episode(
        &data,
        "ep-rec",
        &Spec {
            status: EpisodeStatus::Recording,
            ..Spec::default()
        },
    );
    std::fs::create_dir_all(data.join(".upload")).unwrap();
    std::fs::create_dir_all(data.join("junk")).unwrap();
    let mut left = Vec::new();
    let summary = export(
        std::slice::from_ref(&data),
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
        &mut |p| {
            if let wshard_export::webdataset::Progress::LeftOut { path, reason } = p {
                left.push(format!(
                    "{} {reason}",
                    path.file_name().unwrap().to_string_lossy()
                ));
            }
        },
    )
    .unwrap();
    assert_eq!(summary.episodes.len(), 1);
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left[0].starts_with(".upload hidden"), "{left:?}");
    assert!(left[1].starts_with("ep-rec status recording"), "{left:?}");
    assert!(left[2].starts_with("junk not an episode"), "{left:?}");
    // A data directory without a finished episode; a path that does not exist.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = try_export(
        &[empty],
        &tmp.path().join("o2"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::Inputs(InputsError::NoEpisodes { .. })),
        "{e}"
    );
    let e = try_export(
        &[tmp.path().join("nope")],
        &tmp.path().join("o2"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::Inputs(InputsError::Io(_))),
        "{e}"
    );
    assert!(!tmp.path().join("o2").exists());
}

#[test]
fn export_webdataset_max_episodes_takes_the_first_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for id in ["ep-c", "ep-a", "ep-b"] {
        write_episode(&data, id, &Spec::default());
    }
    let opts = WebdatasetOptions {
        max_episodes: Some(2),
        ..WebdatasetOptions::default()
    };
    let s = export(&[data], &tmp.path().join("out"), &opts, &mut |_| {}).unwrap();
    let ids: Vec<&str> = s.episodes.iter().map(|e| e.episode_id.as_str()).collect();
    assert_eq!(ids, ["ep-a", "ep-b"]);
}

#[test]
fn export_webdataset_no_lowdim_channel() {
    let (tmp, data) = one_episode(&Spec {
        no_arm: true,
        ..Spec::default()
    });
    let e = try_export(
        &[data],
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::NoLowDim { ref episode } if episode == "ep-a"),
        "{e}"
    );
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_picture_stream_without_frames() {
    let (tmp, data) = one_episode(&Spec {
        empty_camera: true,
        ..Spec::default()
    });
    let e = try_export(
        &[data],
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::EmptyPictureStream { ref stream, .. } if stream == "cam2"),
        "{e}"
    );
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_two_channels_one_file_name() {
    let (tmp, data) = one_episode(&Spec {
        clash: true,
        ..Spec::default()
    });
    let e = try_export(
        &[data],
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    match &*e {
        WebdatasetError::NameClash {
            first,
            second,
            name,
            ..
        } => assert_eq!(
            (first.as_str(), second.as_str(), name.as_str()),
            ("cam/rgb.x", "cam/rgb_x", "cam__rgb_x")
        ),
        other => panic!("{other}"),
    }
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_key_width_differs_between_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(&data, "ep-a", &Spec::default());
    write_episode(
        &data,
        "ep-b",
        &Spec {
            q_width: 3,
            ..Spec::default()
        },
    );
    let e = try_export(
        &[data],
        &tmp.path().join("out"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(*e, WebdatasetError::Stats(_)), "{e}");
    assert!(e.to_string().contains("arm/q"), "{e}");
    assert_nothing_written(tmp.path());
}

#[test]
fn export_webdataset_output_that_cannot_be_created() {
    let (tmp, data) = one_episode(&Spec::default());
    let file = tmp.path().join("data").join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let e = try_export(&[data], &file.join("out"), &WebdatasetOptions::default()).unwrap_err();
    assert!(
        matches!(*e, WebdatasetError::Io(IoError { op: "create", .. })),
        "{e}"
    );
    assert!(!e.is_bad_input());
}

#[test]
fn export_webdataset_encoder_refuses_a_short_frame() {
    use wshard_export::channel_kind::{ChannelKind, DepthUnit};
    use wshard_export::webdataset::image::encode_picture;
    let colour = ChannelKind::Color {
        height: 8,
        width: 8,
    };
    let e = encode_picture(colour, &[0; 10], None).unwrap_err();
    assert_eq!(e.what, "frame");
    assert!(e.message.contains("10 bytes, 192 expected"), "{e}");
    let depth = ChannelKind::Depth {
        height: 8,
        width: 8,
        unit: DepthUnit::Metres,
    };
    assert!(encode_picture(depth, &[0; 255], None).is_err());
    assert!(encode_picture(ChannelKind::LowDim, &[0; 4], None).is_err());
    // The right sizes encode.
    assert_eq!(
        encode_picture(colour, &[7; 192], Some((4, 4))).unwrap().ext,
        "jpg"
    );
    assert_eq!(
        encode_picture(depth, &[0; 256], None).unwrap().ext,
        "depth.png"
    );
}

#[test]
fn export_webdataset_inputs_follow_the_shared_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_episode(&tmp.path().join("a"), "ep-x", &Spec::default());
    let b = write_episode(&tmp.path().join("b"), "ep-x", &Spec::default());
    // Two directories of one episode id: refused (a usage error, exit 2).
    let e = try_export(
        &[a.clone(), b],
        &tmp.path().join("o1"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&*e, WebdatasetError::Inputs(InputsError::DuplicateEpisode { episode, .. }) if episode == "ep-x"),
        "{e}"
    );
    assert!(!e.is_bad_input());
    // The same directory twice (also through its data directory) is one episode.
    try_export(
        &[a.clone(), tmp.path().join("a")],
        &tmp.path().join("o2"),
        &WebdatasetOptions::default(),
    )
    .unwrap();
    // An episode directory of a data directory that cannot be read fails the export,
    // named, instead of being left out.
    let broken = tmp.path().join("a").join("ep-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("ep-broken_index.json"), "not json").unwrap();
    let e = try_export(
        &[tmp.path().join("a")],
        &tmp.path().join("o3"),
        &WebdatasetOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&*e, WebdatasetError::Episode { episode, .. } if episode == "ep-broken"),
        "{e}"
    );
    assert!(e.is_bad_input());
    assert!(!tmp.path().join("o3").exists());
}
