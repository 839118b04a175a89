//! The fixtures in `golden/`, written by this project. The builders below are their
//! generator: `GOLDEN_BLESS=1 cargo test -p wshard --test golden_project` rewrites the files,
//! `golden/expected.json` (values a reader must see) and `golden/SHA256SUMS`. Without the
//! flag the test checks that (1) our writer still produces exactly the committed bytes,
//! (2) reading them gives exactly the values the builders put in, and (3) the sidecar
//! agrees with what the files hold.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};
use wshard::codec::{Codec, CompressionPolicy};
use wshard::digest::sha256_hex;
use wshard::episode::residual::multidim_bits_f32;
use wshard::episode::{AuxBlock, Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::{read_episode_chunked, split_episode, ChunkRef, Manifest};
use wshard::read::ShardReader;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../golden")
}

/// With `GOLDEN_BLESS=1`, rewrite the fixtures once, before any test reads them.
fn golden_dir_blessed() -> PathBuf {
    static BLESS: std::sync::Once = std::sync::Once::new();
    let dir = golden_dir();
    BLESS.call_once(|| {
        if std::env::var("GOLDEN_BLESS").is_ok_and(|v| v == "1") {
            let (files, _) = fixtures();
            write_all(&dir, &files);
            eprintln!(
                "golden: rewrote {} fixtures in {}",
                files.len(),
                dir.display()
            );
        }
    });
    dir
}

/// Codecs are write preferences, not file content: compare episodes without them.
fn without_codecs(mut ep: Episode) -> Episode {
    for c in &mut ep.channels {
        c.codec = None;
    }
    for a in &mut ep.aux {
        a.codec = None;
    }
    ep.reward_codec = None;
    ep.done_codec = None;
    ep
}

/// Deterministic bytes: splitmix64 of (seed, i).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|i| {
            let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// All 13 dtypes, T = 4, assorted shapes, values at the edges of each type.
fn dtype_zoo13() -> Episode {
    let mut ep = Episode::new("project_dtype_zoo13", "DtypeEnv-v1", Timebase::ticks(50.0));
    let t = 4;
    let mut add = |id: &str, dt: DType, shape: Vec<u64>, data: Vec<u8>| {
        ep.push_channel(Channel::new(id, Lane::Signal, dt, shape, data))
    };
    add(
        "f64",
        DType::F64,
        vec![2],
        le(
            &[
                0.0,
                -1.5,
                1e-300,
                f64::MAX,
                f64::MIN_POSITIVE,
                -0.0,
                3.25,
                1e21,
            ],
            f64::to_le_bytes,
        ),
    );
    add(
        "f32",
        DType::F32,
        vec![1],
        le(
            &[1.0f32, f32::MIN, f32::EPSILON, f32::INFINITY],
            f32::to_le_bytes,
        ),
    );
    let f16: Vec<half::f16> = [0.5f32, -2.0, 65504.0, 6.1e-5]
        .iter()
        .map(|&v| half::f16::from_f32(v))
        .collect();
    add(
        "f16",
        DType::F16,
        vec![],
        le(&f16, |h: half::f16| h.to_bits().to_le_bytes()),
    );
    let bf16: Vec<half::bf16> = [1.0f32, -3.0, 1e30, 0.1]
        .iter()
        .map(|&v| half::bf16::from_f32(v))
        .collect();
    add(
        "bf16",
        DType::BF16,
        vec![],
        le(&bf16, |h: half::bf16| h.to_bits().to_le_bytes()),
    );
    add(
        "i64",
        DType::I64,
        vec![],
        le(&[i64::MIN, -1, 0, i64::MAX], i64::to_le_bytes),
    );
    add(
        "i32",
        DType::I32,
        vec![],
        le(&[i32::MIN, -1, 1, i32::MAX], i32::to_le_bytes),
    );
    add(
        "i16",
        DType::I16,
        vec![],
        le(&[i16::MIN, -2, 2, i16::MAX], i16::to_le_bytes),
    );
    add(
        "i8",
        DType::I8,
        vec![],
        le(&[i8::MIN, -1, 1, i8::MAX], i8::to_le_bytes),
    );
    add(
        "u64",
        DType::U64,
        vec![],
        le(&[0u64, 1, 1 << 40, u64::MAX], u64::to_le_bytes),
    );
    add(
        "u32",
        DType::U32,
        vec![],
        le(&[0u32, 7, 1 << 31, u32::MAX], u32::to_le_bytes),
    );
    add(
        "u16",
        DType::U16,
        vec![],
        le(&[0u16, 300, 1 << 15, u16::MAX], u16::to_le_bytes),
    );
    add("u8", DType::U8, vec![2, 2], (0..16).collect());
    add(
        "bool",
        DType::Bool,
        vec![3],
        vec![0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0],
    );
    ep.set_reward(vec![0.0, 0.25, -1.0, 1.0]);
    ep.set_done(done_last(t));
    ep
}

/// zstd and lz4 blocks under the Go thresholds (compressible data), plus an incompressible
/// block that stays raw although a codec was asked for.
fn codecs() -> Episode {
    let t = 64;
    let mut ep = Episode::new("project_codecs", "CodecEnv-v1", Timebase::ticks(100.0));
    let smooth: Vec<f32> = (0..t * 16)
        .map(|i| ((i / 16) as f32 * 0.01).sin())
        .collect();
    ep.push_channel(
        Channel::from_f32("smooth_zstd", Lane::Signal, vec![16], &smooth)
            .unwrap()
            .with_codec(Codec::zstd()),
    );
    let ramp: Vec<u8> = (0..t * 64).map(|i| (i / 64) as u8).collect();
    ep.push_channel(
        Channel::new("ramp_lz4", Lane::Signal, DType::U8, vec![64], ramp).with_codec(Codec::Lz4),
    );
    ep.push_channel(
        Channel::new(
            "noise_raw",
            Lane::Signal,
            DType::U8,
            vec![32],
            noise(7, t * 32),
        )
        .with_codec(Codec::Zstd { level: 19 }),
    );
    ep.push_channel(
        Channel::from_f32("cmd_zstd1", Lane::Action, vec![8], &vec![0.5; t * 8])
            .unwrap()
            .with_codec(Codec::Zstd { level: 1 }),
    );
    ep.set_reward(vec![1.0; t]);
    ep.reward_codec = Some(Codec::Lz4);
    ep.set_done(done_last(t));
    ep
}

/// Multimodal observations, an action, a language-like u8 channel, free-form metadata.
fn multimodal() -> Episode {
    let t = 3;
    let mut ep = Episode::new("project_multimodal", "VLAEnv-v2", Timebase::ticks(15.0));
    ep.push_channel(Channel::multimodal(
        "cam",
        "rgb",
        DType::U8,
        vec![4, 6, 3],
        (0..t * 72).map(|i| (i * 3 % 256) as u8).collect(),
    ));
    ep.push_channel(Channel::multimodal(
        "cam",
        "depth",
        DType::F32,
        vec![4, 6],
        f32_bytes(&scaled_f32(t * 24, 0.125)),
    ));
    ep.push_channel(Channel::multimodal(
        "robot",
        "proprioception",
        DType::F32,
        vec![7],
        f32_bytes(&scaled_f32(t * 7, 0.5)),
    ));
    ep.push_channel(
        Channel::from_f32("ee_delta", Lane::Action, vec![6], &scaled_f32(t * 6, -0.25)).unwrap(),
    );
    ep.set_reward(vec![0.0, 0.0, 1.0]);
    ep.set_done(done_last(t));
    ep.metadata.insert("operator".into(), json!("tele<op>&co"));
    ep.metadata
        .insert("task".into(), json!("pick the red cube ✓"));
    ep
}

/// Omen, uncertainty, multi-dimensional residual and latent actions.
fn omen_uncert_residual() -> Episode {
    let t = 12;
    let mut ep = Episode::new("project_omen", "OmenEnv-v2", Timebase::ticks(30.0));
    let pos: Vec<f32> = (0..t * 2)
        .map(|i| ((i / 2) as f32 * 0.3).sin() * if i % 2 == 0 { 1.0 } else { 2.0 })
        .collect();
    ep.push_channel(Channel::from_f32("pos", Lane::Signal, vec![2], &pos).unwrap());
    ep.push_channel(
        Channel::from_f32("vel", Lane::Action, vec![2], &scaled_f32(t * 2, 0.05)).unwrap(),
    );
    ep.set_reward(scaled_f32(t, 0.1));
    ep.set_done(done_last(t));
    let omen: Vec<f32> = pos.iter().map(|v| v + 0.001).collect();
    ep.aux
        .push(AuxBlock::omen("pos", "world_model", f32_bytes(&omen)));
    ep.aux.push(AuxBlock::uncert(
        "pos",
        "world_model",
        "std",
        f32_bytes(&vec![0.02; t * 2]),
    ));
    ep.aux
        .push(AuxBlock::residual("pos", multidim_bits_f32(&pos, 2)));
    ep.aux.push(AuxBlock::latent_actions(
        "lam",
        f32_bytes(&scaled_f32(t * 4, 0.01)),
    ));
    ep.aux.push(AuxBlock::latent_action_codebook(
        "lam",
        le(&(0..t as i32).collect::<Vec<_>>(), i32::to_le_bytes),
    ));
    ep
}

/// A `timestamps_ns` timebase with jittered per-step stamps.
fn timestamps() -> Episode {
    let t = 10;
    let mut ep = Episode::new(
        "project_timestamps",
        "TeleopArm-v1",
        Timebase::TimestampsNs { dt_ns: 1_000_000 },
    );
    ep.timestamps_ns = Some(
        (0..t as i64)
            .map(|i| 1_700_000_000_000_000_000 + i * 1_000_000 + (i % 3) * 1_000)
            .collect(),
    );
    ep.push_channel(
        Channel::from_f32("joint_pos", Lane::Signal, vec![7], &scaled_f32(t * 7, 0.01)).unwrap(),
    );
    ep.push_channel(
        Channel::from_f32("joint_cmd", Lane::Action, vec![7], &scaled_f32(t * 7, 0.02)).unwrap(),
    );
    ep.set_reward(vec![0.0; t]);
    ep.set_done(done_last(t));
    ep
}

/// The episode split into three chunks under a manifest.
fn chunked_source() -> Episode {
    let t = 25;
    let mut ep = Episode::new("project_chunked", "ChunkEnv-v1", Timebase::ticks(20.0));
    ep.push_channel(Channel::from_f32("state", Lane::Signal, vec![3], &iota_f32(t * 3)).unwrap());
    ep.push_channel(
        Channel::from_f32("ctrl", Lane::Action, vec![1], &scaled_f32(t, 0.5))
            .unwrap()
            .with_codec(Codec::zstd()),
    );
    ep.set_reward(scaled_f32(t, 0.04));
    ep.set_done(done_last(t));
    ep
}

const CHUNK_T: u64 = 10;

fn options() -> EpisodeWriteOptions {
    EpisodeWriteOptions::default()
}

/// Every fixture: file name -> bytes, and the episodes to compare on read.
fn fixtures() -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Episode>) {
    let mut files = BTreeMap::new();
    let mut eps = BTreeMap::new();
    let mut small_opts = options();
    small_opts.policy = CompressionPolicy::go();
    for (name, ep) in [
        ("dtype_zoo13.wshard", dtype_zoo13()),
        ("codecs.wshard", codecs()),
        ("multimodal.wshard", multimodal()),
        ("omen_uncert_residual.wshard", omen_uncert_residual()),
        ("timestamps_ns.wshard", timestamps()),
    ] {
        files.insert(name.to_owned(), ep.to_bytes(&small_opts).unwrap());
        eps.insert(name.to_owned(), ep);
    }
    let src = chunked_source();
    let mut manifest = Manifest::new(src.id.clone(), src.env_id.clone());
    for c in split_episode(&src, CHUNK_T).unwrap() {
        let info = c.chunk.unwrap();
        let name = wshard::manifest::chunk_file_name(&src.id, info.chunk_index);
        let bytes = c.to_bytes(&small_opts).unwrap();
        manifest.push_chunk(ChunkRef {
            chunk_index: info.chunk_index,
            uri: name.clone(),
            sha256: sha256_hex(&bytes),
            timestep_range: c.timestep_range.unwrap(),
            length_t: c.length,
            extra: serde_json::Map::new(),
        });
        files.insert(name.clone(), bytes);
        eps.insert(name, c);
    }
    manifest.status = Some("complete".into());
    files.insert(
        wshard::manifest::manifest_file_name(&src.id),
        manifest.to_bytes().unwrap(),
    );
    (files, eps)
}

fn values_json(dtype: DType, data: &[u8]) -> Value {
    let take = 8;
    let vals: Vec<Value> = match dtype {
        DType::F64 => data
            .chunks_exact(8)
            .take(take)
            .map(|c| json!(f64::from_le_bytes(c.try_into().unwrap()).to_string()))
            .collect(),
        DType::F32 => data
            .chunks_exact(4)
            .take(take)
            .map(|c| json!(f32::from_le_bytes(c.try_into().unwrap()).to_string()))
            .collect(),
        DType::F16 => data
            .chunks_exact(2)
            .take(take)
            .map(|c| json!(half::f16::from_le_bytes([c[0], c[1]]).to_f32().to_string()))
            .collect(),
        DType::BF16 => data
            .chunks_exact(2)
            .take(take)
            .map(|c| json!(half::bf16::from_le_bytes([c[0], c[1]]).to_f32().to_string()))
            .collect(),
        DType::I64 => data
            .chunks_exact(8)
            .take(take)
            .map(|c| json!(i64::from_le_bytes(c.try_into().unwrap()).to_string()))
            .collect(),
        DType::U64 => data
            .chunks_exact(8)
            .take(take)
            .map(|c| json!(u64::from_le_bytes(c.try_into().unwrap()).to_string()))
            .collect(),
        DType::I32 => data
            .chunks_exact(4)
            .take(take)
            .map(|c| json!(i32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        DType::U32 => data
            .chunks_exact(4)
            .take(take)
            .map(|c| json!(u32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        DType::I16 => data
            .chunks_exact(2)
            .take(take)
            .map(|c| json!(i16::from_le_bytes([c[0], c[1]])))
            .collect(),
        DType::U16 => data
            .chunks_exact(2)
            .take(take)
            .map(|c| json!(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        DType::I8 => data.iter().take(take).map(|&b| json!(b as i8)).collect(),
        DType::U8 | DType::Bool => data.iter().take(take).map(|&b| json!(b)).collect(),
    };
    Value::Array(vals)
}

/// The sidecar entry of one file: header, blocks (codec, sizes, CRC) and, for episodes,
/// per-channel dtype/shape, SHA-256 of the decoded data and the first values as strings.
fn describe(bytes: &[u8]) -> Value {
    let r = ShardReader::from_bytes(bytes.to_vec()).unwrap();
    let h = r.header();
    let blocks: Vec<Value> = r
        .index()
        .entries()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            json!({
                "name": r.index().name(i).unwrap(),
                "codec": r.index().stored_codec(i).unwrap().name(),
                "data_offset": e.data_offset,
                "disk_size": e.disk_size,
                "orig_size": e.orig_size,
                "crc32c": format!("{:#010x}", e.checksum),
                "content_type": e.content_type,
                "decoded_sha256": sha256_hex(&r.read_entry(i).unwrap()),
            })
        })
        .collect();
    let mut out = json!({
        "sha256": sha256_hex(bytes),
        "size": bytes.len(),
        "role": h.role,
        "flags": format!("{:#06x}", h.flags),
        "alignment": h.alignment,
        "blocks": blocks,
    });
    if h.role == wshard::consts::role::WSHARD {
        let ep = Episode::read(&r).unwrap();
        let channels: Vec<Value> = ep
            .channels
            .iter()
            .map(|c| json!({"id": c.id, "block": c.block_name(), "dtype": c.dtype.code(), "shape": c.shape, "first_values": values_json(c.dtype, &c.data)}))
            .collect();
        out["episode"] = json!({
            "episode_id": ep.id, "env_id": ep.env_id, "length_T": ep.length, "dt_ns": ep.timebase.dt_ns(),
            "timebase": ep.timebase.type_name(), "channels": channels,
            "reward": ep.reward.iter().take(8).map(|r| r.to_string()).collect::<Vec<_>>(),
        });
    } else {
        out["manifest"] = Manifest::read(&r).unwrap().to_json();
    }
    out
}

fn write_all(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let sidecar: BTreeMap<&String, Value> = files.iter().map(|(n, b)| (n, describe(b))).collect();
    let mut text = serde_json::to_string_pretty(&sidecar).unwrap();
    text.push('\n');
    std::fs::write(dir.join("expected.json"), text).unwrap();
    let sums: String = files
        .iter()
        .map(|(n, b)| format!("{}  {n}\n", sha256_hex(b)))
        .collect();
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

#[test]
fn golden_project_fixtures_are_reproduced_exactly() {
    let dir = golden_dir_blessed();
    let (files, _) = fixtures();
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS"))
        .expect("golden/SHA256SUMS missing (GOLDEN_BLESS=1 writes it)");
    let listed: BTreeMap<String, String> = sums
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(h, n)| (n.to_owned(), h.to_owned()))
        .collect();
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        files.keys().collect::<Vec<_>>(),
        "fixture set changed: run with GOLDEN_BLESS=1"
    );
    for (name, bytes) in &files {
        let on_disk = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(
            sha256_hex(&on_disk),
            listed[name],
            "{name}: file does not match SHA256SUMS"
        );
        assert!(
            on_disk == *bytes,
            "{name}: the writer no longer reproduces the committed bytes"
        );
    }
}

#[test]
fn golden_project_values_read_back_exactly() {
    let dir = golden_dir_blessed();
    let (_, eps) = fixtures();
    for (name, want) in &eps {
        let got = Episode::read_file(dir.join(name)).unwrap();
        assert!(
            got == without_codecs(want.clone()),
            "{name}: read-back episode differs"
        );
    }
    let joined = read_episode_chunked(&dir.join("project_chunked_manifest.wshard")).unwrap();
    let src = chunked_source();
    assert_eq!(joined.length, src.length);
    assert_eq!(joined.channels, without_codecs(src.clone()).channels);
    assert_eq!(joined.reward, src.reward);
    assert_eq!(joined.done, src.done);
    let m = Manifest::read_file(dir.join("project_chunked_manifest.wshard")).unwrap();
    m.validate_continuity().unwrap();
    assert_eq!(m.chunks.len(), 3);
    assert_eq!(
        m.chunks
            .iter()
            .map(|c| c.timestep_range)
            .collect::<Vec<_>>(),
        [[0, 9], [10, 19], [20, 24]]
    );
    assert_eq!(m.status.as_deref(), Some("complete"));
}

#[test]
fn golden_project_sidecar_matches_files() {
    let dir = golden_dir_blessed();
    let sidecar: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let (files, _) = fixtures();
    for name in files.keys() {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(describe(&bytes), sidecar[name.as_str()], "{name}");
    }
    // The codecs fixture must really hold zstd and lz4 blocks, and a raw one despite a codec.
    let codecs = &sidecar["codecs.wshard"]["blocks"];
    let codec_of = |n: &str| {
        codecs
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == n)
            .unwrap()["codec"]
            .clone()
    };
    assert_eq!(codec_of("signal/smooth_zstd"), "zstd");
    assert_eq!(codec_of("signal/ramp_lz4"), "lz4");
    assert_eq!(codec_of("signal/noise_raw"), "none");
    assert_eq!(codec_of("action/cmd_zstd1"), "zstd");
}
