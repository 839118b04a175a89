//! The six upstream golden files: exact values of spec section 15, and byte-exact rewrites.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod common;

use common::*;
use wshard::codec::Codec;
use wshard::episode::{AuxBlock, Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::read::ShardReader;

fn open(name: &str) -> Option<(Vec<u8>, ShardReader<Vec<u8>>)> {
    let dir = upstream_dir()?;
    let bytes = std::fs::read(dir.join(name)).unwrap();
    let reader = ShardReader::from_bytes(bytes.clone()).unwrap();
    Some((bytes, reader))
}

/// (name, offset, disk, orig, crc) for each block, in file order.
fn assert_layout(r: &ShardReader<Vec<u8>>, want: &[(&str, u64, u64, u64, u32)]) {
    let names: Vec<&str> = r.index().names().collect();
    assert_eq!(names, want.iter().map(|w| w.0).collect::<Vec<_>>());
    for (e, w) in r.index().entries().iter().zip(want) {
        assert_eq!(
            (e.data_offset, e.disk_size, e.orig_size, e.checksum),
            (w.1, w.2, w.3, w.4),
            "{}",
            w.0
        );
        let ct = if w.0.starts_with("meta/") { 2 } else { 0 };
        assert_eq!(e.content_type, ct, "{}", w.0);
    }
    assert!(r.check_all().iter().all(wshard::read::BlockCheck::ok));
}

/// Our golden-generator profile must reproduce `bytes` exactly.
fn assert_golden_bytes(ep: &Episode, bytes: &[u8]) {
    let ours = ep.to_bytes(&EpisodeWriteOptions::golden_gen()).unwrap();
    assert!(
        ours == bytes,
        "episode `{}`: rewritten bytes differ from the golden file",
        ep.id
    );
}

fn assert_header(r: &ShardReader<Vec<u8>>, len: u64, count: u32, st: u64, ds: u64, cdef: u8) {
    let h = r.header();
    assert_eq!(
        (h.version, h.role, h.flags, h.alignment),
        (2, 5, 0x00A2, 64)
    );
    assert_eq!(
        (
            h.total_file_size,
            h.entry_count,
            h.string_table_offset,
            h.data_section_offset
        ),
        (len, count, st, ds)
    );
    assert_eq!(
        (h.compression_default, h.schema_offset, h.index_entry_size),
        (cdef, 0, 48)
    );
}

fn simple_episode() -> Episode {
    let mut ep = Episode::new("golden_simple", "TestEnv-v1", Timebase::ticks(30.0));
    ep.push_channel(Channel::from_f32("state", Lane::Signal, vec![4], &iota_f32(40)).unwrap());
    let ctrl: Vec<f32> = (0..20)
        .map(|i| if i % 2 == 0 { 0.1 } else { 0.2 })
        .collect();
    ep.push_channel(Channel::from_f32("ctrl", Lane::Action, vec![2], &ctrl).unwrap());
    ep.set_reward(
        (0..10)
            .map(|i| if i % 2 == 0 { 1.0 } else { 0.5 })
            .collect(),
    );
    ep.set_done(done_last(10));
    ep
}

#[test]
fn golden_upstream_simple_episode() {
    let Some((bytes, r)) = open("simple_episode.wshard") else {
        return;
    };
    assert_header(&r, 1354, 7, 400, 512, 0);
    assert_layout(
        &r,
        &[
            ("meta/wshard", 512, 54, 54, 0x17a7_9d5d),
            ("meta/episode", 576, 135, 135, 0x9e1b_6aa5),
            ("meta/channels", 768, 154, 154, 0x1b52_051f),
            ("signal/state", 960, 160, 160, 0x22d3_25db),
            ("action/ctrl", 1152, 80, 80, 0xa85f_b6f6),
            ("reward", 1280, 40, 40, 0x357b_93e0),
            ("done", 1344, 10, 10, 0x11b6_7368),
        ],
    );
    let ep = Episode::read(&r).unwrap();
    assert_eq!(ep, simple_episode_read_form());
    assert_eq!(ep.timebase, Timebase::ticks(30.0));
    assert_eq!(ep.timebase.dt_ns(), 33_333_333);
    assert_eq!(as_f32(&ep.channel("state").unwrap().data), iota_f32(40));
    assert_eq!(
        simple_episode()
            .to_bytes(&EpisodeWriteOptions::golden_gen())
            .unwrap(),
        bytes
    );
    // Read -> write round trip gives the same bytes too.
    assert_eq!(
        ep.to_bytes(&EpisodeWriteOptions::golden_gen()).unwrap(),
        bytes
    );
}

fn simple_episode_read_form() -> Episode {
    let mut ep = simple_episode();
    ep.timestep_range = Some([0, 10]);
    ep
}

#[test]
fn golden_upstream_dtype_zoo() {
    let Some((bytes, r)) = open("dtype_zoo.wshard") else {
        return;
    };
    assert_header(&r, 1732, 10, 544, 704, 0);
    let offsets: Vec<u64> = r.index().entries().iter().map(|e| e.data_offset).collect();
    assert_eq!(
        offsets,
        [704, 768, 960, 1344, 1408, 1472, 1536, 1600, 1664, 1728]
    );
    let crcs: Vec<u32> = r.index().entries().iter().map(|e| e.checksum).collect();
    assert_eq!(
        crcs,
        [
            0x7389_d71b,
            0x78cd_d12a,
            0x516a_d554,
            0x9eba_690a,
            0xeeaf_701c,
            0x83ad_0d98,
            0xbaf9_9549,
            0xabcb_42fa,
            0x4270_9aea,
            0xba0c_c8c4
        ]
    );
    let ep = Episode::read(&r).unwrap();
    assert_eq!(ep.id, "golden_dtypes");
    assert_eq!(ep.env_id, "DtypeTestEnv-v0");
    assert_eq!(ep.timebase.dt_ns(), 1_000_000_000);
    let data = |id: &str| ep.channel(id).unwrap().data.clone();
    assert_eq!(as_f32(&data("f32_ch")), [1.0, 2.0, 3.0, 4.0]);
    let f64s: Vec<f64> = data("f64_ch")
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(f64s, [10.0, 20.0, 30.0, 40.0]);
    let i32s: Vec<i32> = data("i32_ch")
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(i32s, [-1, 0, 1, 2_147_483_647]);
    assert_eq!(data("u8_ch"), [0, 127, 255, 42]);
    let bf16: Vec<u16> = data("bf16_ch")
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(bf16, [0x3F80, 0x4000, 0x4040, 0x4080]);
    let as_f: Vec<f32> = bf16
        .iter()
        .map(|&b| half::bf16::from_bits(b).to_f32())
        .collect();
    assert_eq!(as_f, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(ep.channel("bf16_ch").unwrap().dtype, DType::BF16);
    assert_eq!(ep.reward, [0.0; 4]);
    assert_eq!(ep.done, done_last(4));

    let mut rebuilt = Episode::new("golden_dtypes", "DtypeTestEnv-v0", Timebase::ticks(1.0));
    let chans: [(&str, DType, Vec<u8>); 5] = [
        ("f32_ch", DType::F32, f32_bytes(&[1.0, 2.0, 3.0, 4.0])),
        (
            "f64_ch",
            DType::F64,
            [10.0f64, 20.0, 30.0, 40.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        (
            "i32_ch",
            DType::I32,
            [-1i32, 0, 1, i32::MAX]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        ("u8_ch", DType::U8, vec![0, 127, 255, 42]),
        (
            "bf16_ch",
            DType::BF16,
            [0x3F80u16, 0x4000, 0x4040, 0x4080]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
    ];
    for (id, dt, d) in chans {
        rebuilt.push_channel(Channel::new(id, Lane::Signal, dt, vec![1], d));
    }
    rebuilt.set_reward(vec![0.0; 4]);
    rebuilt.set_done(done_last(4));
    assert_golden_bytes(&rebuilt, &bytes);
}

#[test]
fn golden_upstream_per_block_compressed() {
    let Some((bytes, r)) = open("per_block_compressed.wshard") else {
        return;
    };
    assert_header(&r, 1060, 6, 352, 448, 1);
    let flags: Vec<u16> = r.index().entries().iter().map(|e| e.flags).collect();
    assert_eq!(flags, [0, 0, 0, 3, 3, 0]);
    assert_layout(
        &r,
        &[
            ("meta/wshard", 448, 54, 54, 0x8871_0915),
            ("meta/episode", 512, 149, 149, 0xcef2_d48f),
            ("meta/channels", 704, 81, 81, 0x3cc8_33a0),
            ("signal/obs", 832, 26, 3200, 0x4c54_7284),
            ("reward", 896, 27, 400, 0x10d8_c418),
            ("done", 960, 100, 100, 0xf5a0_1cf5),
        ],
    );
    let ep = Episode::read(&r).unwrap();
    assert_eq!(ep.timebase, Timebase::ticks(60.0));
    assert_eq!(ep.timebase.dt_ns(), 16_666_667);
    assert_eq!(as_f32(&ep.channel("obs").unwrap().data), vec![1.25; 800]);
    assert_eq!(ep.reward, vec![1.0; 100]);

    // Rewrite: same bytes except the two zstd payloads, whose decoded bytes match.
    let mut rebuilt = Episode::new(
        "golden_compressed",
        "CompressTestEnv-v0",
        Timebase::ticks(60.0),
    );
    rebuilt.push_channel(
        Channel::from_f32("obs", Lane::Signal, vec![8], &[1.25; 800])
            .unwrap()
            .with_codec(Codec::zstd()),
    );
    rebuilt.set_reward(vec![1.0; 100]);
    rebuilt.reward_codec = Some(Codec::zstd());
    rebuilt.set_done(done_last(100));
    let mut opts = EpisodeWriteOptions::golden_gen();
    opts.compression_default = Some(1);
    let ours = rebuilt.to_bytes(&opts).unwrap();
    let ro = ShardReader::from_bytes(ours.clone()).unwrap();
    let spliced = splice_payloads(&ro, &r, &ours);
    assert_eq!(spliced, bytes);
    for name in ["signal/obs", "reward"] {
        assert_eq!(ro.read_block(name).unwrap(), r.read_block(name).unwrap());
        let (_, e) = ro.entry(name).unwrap();
        assert_eq!(e.flags, 3, "{name} must be zstd-compressed");
    }
}

/// Rebuild `ours` with the payload bytes of the golden's compressed blocks, re-laying out
/// offsets the way the golden generator would (so any difference left is a real one).
fn splice_payloads(
    ours: &ShardReader<Vec<u8>>,
    golden: &ShardReader<Vec<u8>>,
    _ours_bytes: &[u8],
) -> Vec<u8> {
    use wshard::write::{Precompressed, Reserve, ShardOptions, ShardWriter};
    let mut opts = ShardOptions::wshard();
    opts.compression_default = ours.header().compression_default;
    let names: Vec<String> = ours.index().names().map(str::to_owned).collect();
    let mut w = ShardWriter::new(
        std::io::Cursor::new(Vec::new()),
        opts,
        &Reserve::names(names.clone()),
    )
    .unwrap();
    for (i, name) in names.iter().enumerate() {
        let e = ours.index().entries()[i];
        let (src, entry) = if e.flags & 1 != 0 {
            let (gi, ge) = golden.entry(name).unwrap();
            (golden.read_stored(gi).unwrap(), *ge)
        } else {
            (ours.read_stored(i).unwrap(), e)
        };
        let codec = if entry.flags & 1 != 0 {
            Codec::zstd()
        } else {
            Codec::None
        };
        w.write_precompressed(
            name,
            &src,
            Precompressed {
                codec,
                orig_size: entry.orig_size,
                crc32c: entry.checksum,
                content_type: entry.content_type,
            },
        )
        .unwrap();
    }
    w.finish().unwrap().0.into_inner()
}

#[test]
fn golden_upstream_omen_uncert() {
    let Some((bytes, r)) = open("omen_uncert.wshard") else {
        return;
    };
    assert_header(&r, 1858, 10, 544, 704, 0);
    let offsets: Vec<u64> = r.index().entries().iter().map(|e| e.data_offset).collect();
    assert_eq!(
        offsets,
        [704, 832, 1024, 1216, 1344, 1472, 1536, 1600, 1728, 1856]
    );
    let ep = Episode::read(&r).unwrap();
    let joint_pos = scaled_f32(30, 0.1);
    assert_eq!(as_f32(&ep.channel("joint_pos").unwrap().data), joint_pos);
    assert_eq!(ep.channel("torque").unwrap().lane, Lane::Action);
    assert_eq!(
        as_f32(&ep.channel("torque").unwrap().data),
        scaled_f32(30, 0.01)
    );
    assert_eq!(ep.reward, scaled_f32(10, 0.5));
    let omen: Vec<f32> = joint_pos.iter().map(|v| v + 0.01f32).collect();
    assert_eq!(
        as_f32(&ep.aux_block("omen/joint_pos/dreamer").unwrap().data),
        omen
    );
    assert_eq!(
        as_f32(
            &ep.aux_block("uncert/joint_pos/dreamer/variance")
                .unwrap()
                .data
        ),
        vec![0.05; 30]
    );
    let residual = &ep.aux_block("residual/joint_pos/sign2nddiff").unwrap().data;
    assert_eq!(residual, &[0x90, 0x00]);
    assert_eq!(
        wshard::episode::residual::unpack_bits(residual, 10),
        [-1, -1, -1, -1, 1, -1, -1, 1, -1, -1]
    );
    let meta_crcs: Vec<u32> = r.index().entries()[..3]
        .iter()
        .map(|e| e.checksum)
        .collect();
    assert_eq!(meta_crcs, [0xcf6d_f9e5, 0x1847_4581, 0xd8cd_d776]);

    let mut rebuilt = Episode::new(
        "golden_omen_uncert",
        "OmenTestEnv-v1",
        Timebase::ticks(30.0),
    );
    rebuilt
        .push_channel(Channel::from_f32("joint_pos", Lane::Signal, vec![3], &joint_pos).unwrap());
    rebuilt.push_channel(
        Channel::from_f32("torque", Lane::Action, vec![3], &scaled_f32(30, 0.01)).unwrap(),
    );
    rebuilt.set_reward(scaled_f32(10, 0.5));
    rebuilt.set_done(done_last(10));
    rebuilt
        .aux
        .push(AuxBlock::omen("joint_pos", "dreamer", f32_bytes(&omen)));
    rebuilt.aux.push(AuxBlock::uncert(
        "joint_pos",
        "dreamer",
        "variance",
        f32_bytes(&[0.05; 30]),
    ));
    let bits = wshard::episode::residual::column_bits_f32(&joint_pos, 3, 0);
    rebuilt.aux.push(AuxBlock::residual("joint_pos", bits));
    assert_golden_bytes(&rebuilt, &bytes);
    assert_eq!(
        ep.to_bytes(&EpisodeWriteOptions::golden_gen()).unwrap(),
        bytes
    );
}

#[test]
fn golden_upstream_multimodal() {
    let Some((bytes, r)) = open("multimodal.wshard") else {
        return;
    };
    assert_header(&r, 3909, 9, 496, 640, 0);
    let offsets: Vec<u64> = r.index().entries().iter().map(|e| e.data_offset).collect();
    assert_eq!(offsets, [640, 704, 896, 1344, 2304, 3584, 3776, 3840, 3904]);
    let crcs: Vec<u32> = r.index().entries().iter().map(|e| e.checksum).collect();
    assert_eq!(
        crcs[3..],
        [
            0xf35d_bb76,
            0x6bc7_1a62,
            0xa8bb_b745,
            0x17e6_5a49,
            0xbcc5_563e,
            0xb719_f536
        ]
    );
    let ep = Episode::read(&r).unwrap();
    let ids: Vec<&str> = ep.channels.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["obs/rgb", "obs/depth", "obs/proprioception", "ctrl"]);
    let rgb: Vec<u8> = (0..960u32).map(|i| (i % 256) as u8).collect();
    let c = ep.channel("obs/rgb").unwrap();
    assert_eq!(
        (c.dtype, c.shape.as_slice(), c.modality.as_deref()),
        (DType::U8, &[8, 8, 3][..], Some("rgb"))
    );
    assert_eq!(c.data, rgb);
    assert_eq!(
        as_f32(&ep.channel("obs/depth").unwrap().data),
        scaled_f32(320, 0.001)
    );
    assert_eq!(
        as_f32(&ep.channel("obs/proprioception").unwrap().data),
        scaled_f32(35, 0.1)
    );
    assert_eq!(
        as_f32(&ep.channel("ctrl").unwrap().data),
        scaled_f32(15, 0.01)
    );

    let mut rebuilt = Episode::new("golden_multimodal", "VLAEnv-v1", Timebase::ticks(10.0));
    rebuilt.push_channel(Channel::multimodal(
        "obs",
        "rgb",
        DType::U8,
        vec![8, 8, 3],
        rgb,
    ));
    rebuilt.push_channel(Channel::multimodal(
        "obs",
        "depth",
        DType::F32,
        vec![8, 8],
        f32_bytes(&scaled_f32(320, 0.001)),
    ));
    rebuilt.push_channel(Channel::multimodal(
        "obs",
        "proprioception",
        DType::F32,
        vec![7],
        f32_bytes(&scaled_f32(35, 0.1)),
    ));
    rebuilt.push_channel(
        Channel::from_f32("ctrl", Lane::Action, vec![3], &scaled_f32(15, 0.01)).unwrap(),
    );
    rebuilt.set_reward(vec![0.0; 5]);
    rebuilt.set_done(done_last(5));
    assert_golden_bytes(&rebuilt, &bytes);
}

#[test]
fn golden_upstream_latent_action() {
    let Some((bytes, r)) = open("latent_action.wshard") else {
        return;
    };
    assert_header(&r, 1760, 8, 448, 576, 0);
    let offsets: Vec<u64> = r.index().entries().iter().map(|e| e.data_offset).collect();
    assert_eq!(offsets, [576, 640, 832, 960, 1088, 1152, 1216, 1728]);
    let crcs: Vec<u32> = r.index().entries().iter().map(|e| e.checksum).collect();
    assert_eq!(
        crcs,
        [
            0x17a7_9d5d,
            0x5c63_d86e,
            0x31e3_e548,
            0xf811_8d31,
            0x8a91_36aa,
            0x7e43_3189,
            0x32cb_4de3,
            0x98e4_be46
        ]
    );
    let ep = Episode::read(&r).unwrap();
    assert_eq!(
        as_f32(&ep.aux_block("omen/latent_action/genie3").unwrap().data),
        scaled_f32(128, 0.01)
    );
    let codebook: Vec<i32> = ep
        .aux_block("omen/latent_action_codebook/genie3")
        .unwrap()
        .data
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(codebook, (0..8).collect::<Vec<i32>>());

    let mut rebuilt = Episode::new(
        "golden_latent_action",
        "LatentEnv-v1",
        Timebase::ticks(30.0),
    );
    rebuilt.push_channel(Channel::from_f32("state", Lane::Signal, vec![4], &iota_f32(32)).unwrap());
    rebuilt.set_reward(vec![0.0; 8]);
    rebuilt.set_done(done_last(8));
    rebuilt.aux.push(AuxBlock::latent_actions(
        "genie3",
        f32_bytes(&scaled_f32(128, 0.01)),
    ));
    rebuilt.aux.push(AuxBlock::latent_action_codebook(
        "genie3",
        (0..8i32).flat_map(|v| v.to_le_bytes()).collect(),
    ));
    assert_golden_bytes(&rebuilt, &bytes);
}

#[test]
fn golden_upstream_hashes_json() {
    let Some(dir) = upstream_dir() else { return };
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("golden_hashes.json")).unwrap()).unwrap();
    assert_eq!(
        v["crc32c_hello"],
        format!("{:#010x}", wshard::hash::crc32c(b"hello"))
    );
    assert_eq!(
        v["xxhash64_signal_obs"],
        format!("{:#018x}", wshard::hash::name_hash("signal/obs"))
    );
    assert_eq!(
        v["xxhash64_meta_manifest"],
        format!("{:#018x}", wshard::hash::name_hash("meta/manifest"))
    );
    let sizes = v["dtype_sizes"].as_object().unwrap();
    assert_eq!(sizes.len(), 13);
    for d in DType::ALL {
        assert_eq!(sizes[d.code()].as_u64().unwrap(), d.size() as u64, "{d}");
    }
}
