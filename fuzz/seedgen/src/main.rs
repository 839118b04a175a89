//! Writes the seed inputs of the fuzz targets into `<dir>/<target>/` (default `seeds/`):
//! small valid shards, manifests, journal segments and protocol streams, so the fuzzers
//! start from the formats' real structure. Deterministic: the same bytes on every run.
//!
//! ```sh
//! cd fuzz && cargo run -p wshard-fuzz-seeds -- seeds
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};

use serde_json::{json, Map};
use wshard::codec::Codec;
use wshard::episode::go_json::to_indented;
use wshard::episode::{Channel, DType, Episode, EpisodeWriteOptions, Lane, Timebase};
use wshard::manifest::{ChunkRef, Manifest};
use wshard_ingest_proto::{
    encode, AcceptedWhat, BatchEncoder, ChannelSpec, CodecChoice, Durability, ErrorCode, Frame,
    OpenEpisode, Outcome, TimebaseSpec, Timestep, Counters, Trigger, Triggered, NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION,
};
use wshard_recorder::episode::{self as rec_episode, EpisodeSchema};
use wshard_recorder::journal::format::JournalWriter;
use wshard_recorder::journal::record::{kind, SegmentHeader};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
    let d = dir.join(target);
    std::fs::create_dir_all(&d)?;
    std::fs::write(d.join(name), bytes)?;
    println!("{target}/{name}: {} bytes", bytes.len());
    Ok(())
}

fn episode(compressed: bool) -> Result<Vec<u8>> {
    let t = if compressed { 64 } else { 4usize };
    let mut ep = Episode::new("seed-ep", "fuzz/seed", Timebase::Ticks { tick_hz: 50.0 });
    let joints: Vec<f32> = (0..t * 3).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut j = Channel::from_f32("joints", Lane::Signal, vec![3], &joints)?;
    let mut cam = Channel::multimodal(
        "cam",
        "rgb",
        DType::U8,
        vec![2, 2],
        (0..t * 4).map(|i| (i % 3) as u8).collect(),
    );
    let grip = Channel::new(
        "gripper",
        Lane::Action,
        DType::F64,
        vec![],
        (0..t).flat_map(|i| (i as f64).to_le_bytes()).collect(),
    );
    if compressed {
        j = j.with_codec(Codec::Zstd { level: 1 });
        cam = cam.with_codec(Codec::Lz4);
    }
    ep.push_channel(j);
    ep.push_channel(cam);
    ep.push_channel(grip);
    ep.set_reward((0..t).map(|i| i as f32).collect());
    ep.set_done((0..t).map(|i| i + 1 == t).collect());
    ep.timestamps_ns = Some((0..t as i64).map(|i| 1_000 + i * 20_000_000).collect());
    ep.metadata.insert("operator".into(), json!("seed"));
    let opts = if compressed {
        // Compress whenever it is smaller, so the seed holds real LZ4 and zstd blocks.
        EpisodeWriteOptions::golden_gen()
    } else {
        EpisodeWriteOptions::default()
    };
    Ok(ep.to_bytes(&opts)?)
}

fn manifest(chunks: u64) -> Manifest {
    let mut m = Manifest::new("seed-ep", "fuzz/seed");
    for i in 0..chunks {
        m.push_chunk(ChunkRef {
            chunk_index: i,
            uri: format!("seed-ep_chunk_{i:04}.wshard"),
            sha256: format!("{:064x}", i + 1),
            timestep_range: [i * 10, i * 10 + 9],
            length_t: 10,
            extra: Map::new(),
        });
    }
    m.status = Some(if chunks == 0 { "recording" } else { "complete" }.into());
    m
}

fn shard_seeds(dir: &Path) -> Result<()> {
    write(dir, "shard_reader", "episode_raw.wshard", &episode(false)?)?;
    write(
        dir,
        "shard_reader",
        "episode_lz4_zstd.wshard",
        &episode(true)?,
    )?;
    write(
        dir,
        "shard_reader",
        "manifest_2.wshard",
        &manifest(2).to_bytes()?,
    )?;
    Ok(())
}

fn manifest_seeds(dir: &Path) -> Result<()> {
    const T: &str = "manifest_reader";
    write(dir, T, "empty.wshard", &manifest(0).to_bytes()?)?;
    write(dir, T, "three_chunks.wshard", &manifest(3).to_bytes()?)?;
    let mut m = manifest(2);
    m.extra
        .insert("recovered_from".into(), json!(["journal_0002.wal"]));
    m.extra.insert("reason".into(), json!("daemon shutdown"));
    m.chunks[1].extra.insert("note".into(), json!({"x": 1.5}));
    m.status = Some("interrupted".into());
    write(
        dir,
        T,
        "recorder.json",
        to_indented(&m.to_json()).as_bytes(),
    )?;
    // Python's key set (no status, no env_id), a gap, numbers as floats, escapes.
    let py = br#"{"episode_id": "ep<1>", "total_timesteps": 25.0, "total_chunks": 2,
 "chunks": [{"chunk_index": 0, "uri": "ep_chunk_0000.wshard", "timestep_range": [0, 9],
 "length_T": 10, "sha256": "00"},
 {"chunk_index": 1, "uri": "ep_chunk_0001.wshard", "timestep_range": [11, 25], "length_T": 15}],
 "weird": [-0.0, 1e21, 1.5e-7, 18446744073709551615, "\u2028\u0001", null, true]}"#;
    write(dir, T, "python.json", py)?;
    Ok(())
}

fn schema() -> Result<EpisodeSchema> {
    Ok(EpisodeSchema::new(
        "seed-ep".into(),
        "fuzz/seed".into(),
        Timebase::Ticks { tick_hz: 100.0 },
        rec_episode::Durability::Ack,
        vec![(
            "state".into(),
            Lane::Signal,
            DType::F32,
            vec![2],
            Codec::None,
            None,
        )],
        Map::new(),
    )?)
}

fn step_records(first: u64, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for seq in first..first + n {
        let p: Vec<u8> = [seq as f32, -(seq as f32)]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        wshard_ingest_proto::push_step_record(
            &mut out,
            seq,
            seq as i64 * 10_000_000,
            0.5,
            false,
            &[&p],
        );
    }
    out
}

fn journal_seeds(dir: &Path) -> Result<()> {
    const T: &str = "journal_reader";
    let header = SegmentHeader {
        schema: schema()?,
        chunk_index: 0,
        first_timestep: 0,
    };
    let mut w = JournalWriter::new(Vec::new(), 0);
    w.append(&[&header.encode()])?;
    w.append(&[&[kind::STEPS], &step_records(0, 3)])?;
    w.append(&[&[kind::STEPS], &step_records(3, 2)])?;
    let segment = w.into_inner();
    // Mode byte 0: raw; 0x20: raw, straddling the first block boundary.
    for (name, mode) in [("segment.bin", 0u8), ("segment_straddle.bin", 0x20)] {
        let mut b = vec![mode];
        b.extend_from_slice(&segment);
        write(dir, T, name, &b)?;
    }
    // Structured mode (odd first byte): records, then corruption operations.
    let structured: [(&str, &[u8]); 4] = [
        // three records: tiny, medium, block-sized; no damage
        (
            "structured_clean.bin",
            &[1, 3, 0, 9, 1, 0x34, 0x12, 3, 0, 4, 0, 0, 0],
        ),
        // two multi-block records in four parts, one whole block zeroed
        (
            "structured_zero_block.bin",
            &[
                1, 2, 2, 0xFF, 0x9F, 9, 0, 9, 0, 2, 2, 0xFF, 0x7F, 1, 1, 1, 1, 0, 1, 0, 0, 1, 2, 2,
                0x00, 0x90, 0, 0, 0, 0,
            ],
        ),
        // a bit flip and a truncation
        (
            "structured_flip_truncate.bin",
            &[
                1, 4, 1, 0x00, 0x01, 0, 0, 0, 0, 0, 1, 0x10, 0x08, 5, 0, 0, 0, 1, 2, 0x00, 0x40, 0,
                0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x70, 0, 0, 0, 0, 3, 4, 0x00, 0x80, 0, 0, 0, 0,
            ],
        ),
        // garbage over a record boundary
        (
            "structured_garbage.bin",
            &[
                1, 5, 4, 3, 0, 0, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 1, 7, 0, 0, 0, 3, 0x00, 0x80, 0, 0, 0x00, 0x02,
            ],
        ),
    ];
    for (name, b) in structured {
        write(dir, T, name, b)?;
    }
    Ok(())
}

fn open_spec() -> OpenEpisode {
    let mut spec = OpenEpisode::new(
        "seed-ep",
        "fuzz/seed",
        TimebaseSpec::Ticks { tick_hz: 100.0 },
    )
    .with_durability(Durability::Ack)
    .with_metadata_json(r#"{"operator":"seed"}"#);
    spec.channels = vec![
        ChannelSpec::new("state", Lane::Signal, DType::F32, vec![2]),
        ChannelSpec::new("cam/rgb", Lane::Signal, DType::U8, vec![2, 2])
            .with_codec(CodecChoice::Zstd { level: 3 })
            .with_modality("rgb"),
    ];
    spec
}

fn protocol_seeds(dir: &Path) -> Result<()> {
    const T: &str = "protocol_decoder";
    let payload = |seq: u64| -> Vec<u8> {
        let mut p: Vec<u8> = [seq as f32, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        p.extend_from_slice(&[seq as u8; 4]);
        p
    };
    // A whole client session.
    let mut session = Vec::new();
    for f in [
        Frame::Hello {
            version: PROTOCOL_VERSION,
            client_name: "seed/0.1".into(),
        },
        Frame::Open(open_spec()),
        Frame::Timestep(Timestep {
            seq: 0,
            t_ns: 10,
            reward: 0.25,
            done: false,
            payload: payload(0),
        }),
    ] {
        encode(&f, &mut session)?;
    }
    let mut b = BatchEncoder::new(&mut session);
    for seq in 1..4 {
        b.push_step(seq, seq as i64 * 10, 0.0, seq == 3, &[&payload(seq)]);
    }
    b.finish()?;
    for f in [
        Frame::Flush,
        Frame::Close {
            outcome: Outcome::Completed,
        },
    ] {
        encode(&f, &mut session)?;
    }
    // Every server frame.
    let mut server = Vec::new();
    for f in [
        Frame::HelloOk {
            version: PROTOCOL_VERSION,
            server_name: "wshardd/seed".into(),
            max_frame_bytes: 64 << 20,
        },
        Frame::Accepted {
            what: AcceptedWhat::Open,
            up_to_seq: 0,
        },
        Frame::Durable { up_to_seq: 4 },
        Frame::Accepted {
            what: AcceptedWhat::Close,
            up_to_seq: 4,
        },
        Frame::error(ErrorCode::Sequence, "TIMESTEP seq 5: expected seq 4"),
    ] {
        encode(&f, &mut server)?;
    }
    // A version 2 producer's counters (the decoder of the target knows every version).
    let mut counters = Vec::new();
    for f in [
        Frame::Hello {
            version: NEWEST_PROTOCOL_VERSION,
            client_name: "seed/0.2".into(),
        },
        Frame::Counters(Counters::new([("received", 120), ("dropped", 3), ("late", 0)])),
        Frame::Counters(Counters::default()),
        Frame::Trigger(Trigger {
            pre_ns: 30_000_000_000,
            post_ns: 10_000_000_000,
            reason: "teleop button".into(),
            streams: vec!["ep/cam".into()],
            at_ns: Some(1_700_000_000_000_000_000),
        }),
        Frame::Trigger(Trigger::default()),
        Frame::Triggered(Triggered {
            episode: "flight-1700000000000-1".into(),
            merged: false,
            window_start_ns: 1,
            window_end_ns: 2,
        }),
    ] {
        encode(&f, &mut counters)?;
    }
    // `limit_sel u8 | split_seed u8 | stream`: sel 3 = 1 MiB, 0 = 64 bytes, 5 = u32::MAX.
    for (name, sel, seed, stream) in [
        ("session.bin", 3u8, 7u8, &session),
        ("counters.bin", 3, 9, &counters),
        ("session_tiny_limit.bin", 0, 200, &session),
        ("server_frames.bin", 5, 1, &server),
    ] {
        let mut b = vec![sel, seed];
        b.extend_from_slice(stream);
        write(dir, T, name, &b)?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("seeds"), PathBuf::from);
    shard_seeds(&dir)?;
    manifest_seeds(&dir)?;
    journal_seeds(&dir)?;
    protocol_seeds(&dir)?;
    Ok(())
}
