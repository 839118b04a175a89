//! `wshard export webdataset` (library): windows and padding counts, the low-dimensional
//! clock, pictures (JPEG, depth PNG in millimetres, other cameras matched in time),
//! instructions, the still filter, and the same bytes for the same input and options.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{arm_t, cam_t, files, tar_members, wrist_t, write_episode, Spec, H, W};
use wshard_export::webdataset::image::metres_to_mm;
use wshard_export::webdataset::percentile::percentile_sorted;
use wshard_export::webdataset::window::{image_frames, window};
use wshard_export::webdataset::{export, LowdimClock, WebdatasetOptions};

fn run(inputs: &[PathBuf], out: &Path, opts: &WebdatasetOptions) -> Value {
    export(inputs, out, opts, &mut |_| {}).unwrap();
    serde_json::from_slice(&std::fs::read(out.join("processing_metadata.json")).unwrap()).unwrap()
}

/// Every sample's metadata and files, in shard order.
/// A sample: its metadata and its `(suffix, bytes)` members.
type Sample = (Value, Vec<(String, Vec<u8>)>);

fn samples(out: &Path) -> Vec<Sample> {
    let mut shards: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tar"))
        .collect();
    shards.sort();
    let mut out: Vec<Sample> = Vec::new();
    for shard in shards {
        for (name, bytes) in tar_members(&shard) {
            let (key, ext) = name.split_once('.').unwrap();
            if ext == "lowdim.npz" {
                out.push((Value::Null, Vec::new()));
            }
            let last = out.last_mut().unwrap();
            assert!(name.starts_with(key));
            if ext == "metadata.json" {
                last.0 = serde_json::from_slice(&bytes).unwrap();
            }
            last.1.push((ext.to_owned(), bytes));
        }
    }
    out
}

#[test]
fn export_webdataset_window_clamps_and_counts_padding() {
    let w = window(1, 10, 2, 3, 2);
    assert_eq!(w.rows, [0, 0, 1, 3, 5, 7]);
    assert_eq!((w.pad_left, w.pad_right), (2, 0));
    let w = window(8, 10, 1, 3, 1);
    assert_eq!(w.rows, [7, 8, 9, 9, 9]);
    assert_eq!((w.pad_left, w.pad_right), (0, 2));
    let w = window(0, 1, 1, 1, 5);
    assert_eq!(w.rows, [0, 0, 0]);
    assert_eq!((w.pad_left, w.pad_right), (1, 1));
    assert_eq!(image_frames(0, 5, &[-2, 0, 7]), (vec![0, 0, 4], 1, 1));
}

#[test]
fn export_webdataset_percentile_is_numpy_linear() {
    // np.percentile([1, 2, 3, 4], q) for q = 1, 50, 99, 100.
    let v = [1.0, 2.0, 3.0, 4.0];
    assert!((percentile_sorted(&v, 1).unwrap() - 1.03).abs() < 1e-12);
    assert_eq!(percentile_sorted(&v, 50).unwrap(), 2.5);
    assert!((percentile_sorted(&v, 99).unwrap() - 3.97).abs() < 1e-12);
    assert_eq!(percentile_sorted(&v, 100).unwrap(), 4.0);
    assert_eq!(percentile_sorted(&[7.0], 5).unwrap(), 7.0);
    assert_eq!(percentile_sorted(&[], 5), None);
}

#[test]
fn export_webdataset_samples_padding_and_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let spec = Spec::default();
    write_episode(&data, "ep-a", &spec);
    let opts = WebdatasetOptions {
        past_steps: 2,
        future_steps: 8,
        stride: 7,
        max_padding_left: 1,
        max_padding_right: 2,
        samples_per_shard: 4,
        lowdim_clock: LowdimClock::Stream("arm".into()),
        ..WebdatasetOptions::default()
    };
    let meta = run(&[data], &tmp.path().join("out"), &opts);
    // Expected from the documented rule, computed here: the anchor row is the last arm row
    // at or before the camera frame; steps 7 rows apart; padding counted at both ends.
    let rows = spec.arm_steps as i64;
    let mut kept = Vec::new();
    let mut dropped = 0;
    for f in 0..spec.cam_steps {
        let r = (0..spec.arm_steps)
            .filter(|&s| arm_t(s) <= cam_t(f))
            .count() as i64
            - 1;
        let left = (1..=2).filter(|j| r - j * 7 < 0).count();
        let right = (1..=8).filter(|j| r + j * 7 > rows - 1).count();
        if left > 1 || right > 2 {
            dropped += 1;
        } else {
            kept.push((f, r, left, right));
        }
    }
    assert_eq!(dropped, 3);
    assert!(kept.iter().any(|k| k.2 == 1) && kept.iter().any(|k| k.3 == 1));
    let ep = &meta["episodes"][0];
    assert_eq!(ep["samples"], kept.len());
    assert_eq!(ep["dropped_padding"], dropped);
    assert_eq!(ep["anchors"], spec.cam_steps);
    assert_eq!(ep["anchor_channel"], "cam/rgb");
    assert_eq!(ep["lowdim_clock"], "stream arm");
    assert_eq!(ep["lowdim_keys"], serde_json::json!(["arm/q", "arm/cmd"]));
    let got = samples(&tmp.path().join("out"));
    assert_eq!(got.len(), kept.len());
    assert_eq!(meta["shards"], kept.len().div_ceil(4));
    for ((m, files), (f, r, left, right)) in got.iter().zip(&kept) {
        assert_eq!(m["anchor_frame"], *f);
        assert_eq!(m["lowdim_anchor_row"], *r);
        assert_eq!(
            (m["padding_left"].clone(), m["padding_right"].clone()),
            ((*left).into(), (*right).into())
        );
        let names: Vec<&str> = files.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "lowdim.npz",
                "metadata.json",
                "language_instructions.json",
                "cam__rgb_t-1.jpg",
                "cam__rgb_t0.jpg",
                "cam__depth_t-1.depth.png",
                "cam__depth_t0.depth.png"
            ]
        );
        let instr: Value = serde_json::from_slice(&files[2].1).unwrap();
        assert_eq!(instr, serde_json::json!({"original": ["task of ep-a"]}));
        // JPEG start marker; PNG signature.
        assert_eq!(&files[4].1[..2], [0xff, 0xd8]);
        assert_eq!(&files[6].1[..8], b"\x89PNG\r\n\x1a\n");
    }
}

#[test]
fn export_webdataset_depth_png_is_millimetres() {
    assert_eq!(metres_to_mm(0.5004), 500);
    assert_eq!(metres_to_mm(1.2346), 1235);
    assert_eq!(metres_to_mm(f32::NAN), 0);
    assert_eq!(metres_to_mm(-1.0), 0);
    assert_eq!(metres_to_mm(100.0), u16::MAX);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(&data, "ep-a", &Spec::default());
    let opts = WebdatasetOptions {
        max_padding_right: 100,
        resize: None,
        ..WebdatasetOptions::default()
    };
    run(&[data], &tmp.path().join("out"), &opts);
    let got = samples(&tmp.path().join("out"));
    let (m, files) = &got[3];
    let frame = m["anchor_frame"].as_u64().unwrap() as usize;
    let png_bytes = &files
        .iter()
        .find(|f| f.0 == "cam__depth_t0.depth.png")
        .unwrap()
        .1;
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes.as_slice()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (W as u32, H as u32));
    assert_eq!(info.bit_depth, png::BitDepth::Sixteen);
    for y in 0..H {
        for x in 0..W {
            let i = (y * W + x) * 2;
            // PNG samples are big-endian.
            let mm = u16::from(buf[i]) << 8 | u16::from(buf[i + 1]);
            assert_eq!(mm, metres_to_mm(support::depth_m(frame, y, x)), "{y},{x}");
        }
    }
}

#[test]
fn export_webdataset_other_camera_takes_the_nearest_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(
        &data,
        "ep-a",
        &Spec {
            wrist: true,
            ..Spec::default()
        },
    );
    let opts = WebdatasetOptions {
        image_offsets: vec![0],
        max_padding_right: 100,
        ..WebdatasetOptions::default()
    };
    run(&[data], &tmp.path().join("out"), &opts);
    for (m, files) in samples(&tmp.path().join("out")) {
        let f = m["anchor_frame"].as_u64().unwrap() as usize;
        let t = cam_t(f);
        let nearest = (0..25)
            .min_by_key(|&k| ((wrist_t(k) - t).abs(), k))
            .unwrap();
        assert_eq!(
            m["images"]["wrist__mono"]["frames"],
            serde_json::json!([nearest])
        );
        assert!(files.iter().any(|x| x.0 == "wrist__mono_t0.jpg"));
    }
}

#[test]
fn export_webdataset_rate_clock_and_still_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(
        &data,
        "ep-a",
        &Spec {
            still_steps: 120,
            ..Spec::default()
        },
    );
    let opts = WebdatasetOptions {
        lowdim_clock: LowdimClock::Rate(20.0),
        past_steps: 0,
        future_steps: 2,
        stride: 1,
        max_padding_right: 2,
        filter_still_samples: true,
        still_threshold: 0.01,
        ..WebdatasetOptions::default()
    };
    let meta = run(&[data], &tmp.path().join("out"), &opts);
    let ep = &meta["episodes"][0];
    assert_eq!(ep["lowdim_clock"], "rate 20 Hz");
    // The episode spans the arm's 1.99 s: a 20 Hz clock has 40 rows.
    assert_eq!(ep["lowdim_rows"], 40);
    // cmd is still up to arm step 120 (1.2 s). Frame f anchors at rate row 2f (0.1 f s);
    // its window reaches row 2f + 2 (0.1 f + 0.1 s, held from arm step 10 f + 10): still
    // for f <= 11.
    assert_eq!(ep["dropped_still"], 12);
    assert_eq!(ep["samples"], 18 - 12);
}

#[test]
fn export_webdataset_same_bytes_twice_whatever_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for id in ["ep-b", "ep-a"] {
        write_episode(
            &data,
            id,
            &Spec {
                wrist: true,
                ..Spec::default()
            },
        );
    }
    let one = WebdatasetOptions {
        workers: 1,
        samples_per_shard: 7,
        resize: Some((8, 10)),
        ..WebdatasetOptions::default()
    };
    let four = WebdatasetOptions {
        workers: 4,
        ..one.clone()
    };
    run(std::slice::from_ref(&data), &tmp.path().join("one"), &one);
    run(&[data], &tmp.path().join("four"), &four);
    let (a, b) = (
        files(&tmp.path().join("one")),
        files(&tmp.path().join("four")),
    );
    assert!(a.len() > 4);
    assert_eq!(a, b);
    // Episodes in id order: the first sample is ep-a's.
    let first = &samples(&tmp.path().join("one"))[0].0;
    assert_eq!(first["episode_id"], "ep-a");
}

#[test]
fn export_webdataset_exclude_leaves_channels_out() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_episode(&data, "ep-a", &Spec::default());
    let out = tmp.path().join("out");
    let opts = WebdatasetOptions {
        exclude: vec!["arm/cmd".into(), "*/depth".into()],
        ..WebdatasetOptions::default()
    };
    let meta = run(std::slice::from_ref(&data), &out, &opts);
    assert_eq!(
        meta["episodes"][0]["lowdim_keys"],
        serde_json::json!(["arm/q"])
    );
    assert_eq!(
        meta["episodes"][0]["pictures"],
        serde_json::json!(["cam/rgb"])
    );
    let all = samples(&out);
    assert!(!all.is_empty());
    for (_, members) in &all {
        let exts: Vec<&str> = members.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            exts,
            [
                "lowdim.npz",
                "metadata.json",
                "language_instructions.json",
                "cam__rgb_t-1.jpg",
                "cam__rgb_t0.jpg"
            ]
        );
    }
    let stats: Value =
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(
        stats.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["arm/q"]
    );
    // A pattern that matches no channel is refused, naming it; so is an excluded anchor.
    let opts = WebdatasetOptions {
        exclude: vec!["arm/qq".into()],
        ..WebdatasetOptions::default()
    };
    let e = export(
        std::slice::from_ref(&data),
        &tmp.path().join("o2"),
        &opts,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(!e.is_bad_input());
    assert!(
        e.to_string().contains("arm/qq") && e.to_string().contains("arm/q, arm/cmd"),
        "{e}"
    );
    let opts = WebdatasetOptions {
        exclude: vec!["cam/rgb".into()],
        image: Some("cam/rgb".into()),
        ..WebdatasetOptions::default()
    };
    let e = export(&[data], &tmp.path().join("o3"), &opts, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--exclude"), "{e}");
    assert!(!tmp.path().join("o2").exists() && !tmp.path().join("o3").exists());
}

/// `(width, height)` of a JPEG (libjpeg-turbo reads its header).
fn jpeg_size(b: &[u8]) -> (usize, usize) {
    let h = turbojpeg::read_header(b).unwrap();
    (h.width, h.height)
}

/// `(width, height)` of a PNG.
fn png_size(b: &[u8]) -> (usize, usize) {
    let reader = png::Decoder::new(std::io::Cursor::new(b))
        .read_info()
        .unwrap();
    let info = reader.info();
    (info.width as usize, info.height as usize)
}

#[test]
fn export_webdataset_defaults_follow_the_shardify_seed() {
    // rd shardify's defaults: the window's stride counts raw frames of the image stream
    // (stride 3 of 30 Hz frames: 10 Hz, 19 future steps 1.9 s), pictures resized to
    // 384x384 (Lanczos), a NaN fails the export.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let spec = Spec::default();
    write_episode(&data, "ep-a", &spec);
    let out = tmp.path().join("out");
    let meta = run(
        std::slice::from_ref(&data),
        &out,
        &WebdatasetOptions::default(),
    );
    assert_eq!(meta["episodes"][0]["lowdim_clock"], "stream cam");
    let got = samples(&out);
    assert!(!got.is_empty());
    let last = spec.cam_steps as i64 - 1;
    for (m, files) in &got {
        let f = m["anchor_frame"].as_i64().unwrap();
        let want: Vec<i64> = (-1..=19)
            .map(|j| cam_t((f + 3 * j).clamp(0, last) as usize))
            .collect();
        assert_eq!(m["lowdim_t_ns"], serde_json::json!(want), "frame {f}");
        for (ext, bytes) in files {
            if ext.ends_with(".jpg") {
                assert_eq!(jpeg_size(bytes), (384, 384), "{ext}");
            } else if ext.ends_with(".png") {
                assert_eq!(png_size(bytes), (384, 384), "{ext}");
            }
        }
    }
    let config = std::fs::read_to_string(out.join("preprocessing_config.yaml")).unwrap();
    for line in [
        "lowdim_clock: \"anchor\"",
        "resize: \"384x384\"",
        "fail_on_nan: true",
    ] {
        assert!(config.contains(line), "{line} in {config}");
    }
    // A NaN fails the export by default.
    let nan = tmp.path().join("nan");
    write_episode(
        &nan,
        "ep-n",
        &Spec {
            nan_at: Some(100),
            ..Spec::default()
        },
    );
    let e = export(
        &[nan],
        &tmp.path().join("o2"),
        &WebdatasetOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("non-finite"), "{e}");
}
