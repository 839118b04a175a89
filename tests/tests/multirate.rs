//! Multi-stream episodes (protocol version 2) against the real daemon over real sockets:
//! several producers record one episode, each its own stream at its own rate; events; the
//! index; the owner's close and disconnect, an operator's close; and bad input, each a
//! typed ERROR naming the stream and field while the other streams keep recording.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::index::EpisodeStatus;
use wshard::read::ShardReader;
use wshard_e2e::multi::{
    check_index_consistent, check_stream, connect_v2, episode_close, event, owner, producer,
    read_events, read_index, stream_spec, wait_index_final,
};
use wshard_e2e::raw::{timestep_frame, RawConn, Recv};
use wshard_e2e::{bins, data, Daemon, DaemonOptions, TIMEOUT};
use wshard_ingest_proto::{
    AcceptedWhat, ChannelSpec, Durability, ErrorCode, Event, Frame, Outcome, StreamOpen, Timestep,
    DEFAULT_MAX_EVENT_BYTES, PROTOCOL_VERSION,
};

const EP: &str = "multi-ep";

fn joints() -> StreamOpen {
    stream_spec(EP, "joints", &data::channels(), 1000.0, Durability::Ack)
}

fn imu() -> StreamOpen {
    stream_spec(EP, "imu", &data::small_channels(), 200.0, Durability::Chunk)
}

/// Send `seqs` of the generator on `c`, then FLUSH until they are durable.
fn record(c: &mut RawConn, channels: &[ChannelSpec], seqs: std::ops::Range<u64>) {
    let end = seqs.end;
    c.timesteps(channels, seqs);
    c.flush_until(end);
}

fn daemon() -> Daemon {
    Daemon::start(DaemonOptions::default().rotation(8))
}

fn meta_wshard(chunk: &Path) -> Value {
    let r = ShardReader::open(chunk).expect("open chunk");
    serde_json::from_slice(&r.read_block("meta/wshard").expect("meta/wshard")).expect("json")
}

#[test]
fn multirate_streams_record_one_episode() {
    let d = daemon();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    let mut b = producer(&d.socket(), &imu());
    // Interleaved, at their own rates: 5 joints per imu.
    for k in 0..6 {
        a.timesteps(&data::channels(), k * 5..k * 5 + 5);
        b.timesteps(&data::small_channels(), k * 2..k * 2 + 2);
    }
    assert_eq!(
        event(&mut o, data::t_ns(3), "instruction", "pick the cube"),
        0
    );
    assert_eq!(event(&mut a, data::t_ns(7), "button", "pressed"), 1);
    a.flush_until(30);
    a.close(Outcome::Completed, 30);
    b.close(Outcome::Completed, 12);
    assert_eq!(episode_close(&mut o), 0, "finalized before the reply");

    let dd = d.data_dir();
    let index = check_index_consistent(&dd, EP).expect("index consistent");
    assert_eq!(index.status, EpisodeStatus::Complete);
    assert!(index.closed);
    assert_eq!(index.env_id, data::ENV_ID);
    let names: Vec<&str> = index.streams.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["joints", "imu"]);
    let j = index.stream("joints").expect("joints");
    assert_eq!(
        (j.steps, j.first_t_ns, j.last_t_ns),
        (30, Some(data::t_ns(0)), Some(data::t_ns(29)))
    );
    assert_eq!(j.tick_hz.to_bits(), 1000.0f64.to_bits());
    assert_eq!(j.status, EpisodeStatus::Complete);
    assert_eq!(index.stream("imu").map(|s| s.steps), Some(12));
    let a_state = check_stream(&dd, EP, "joints", &data::channels()).expect("joints");
    assert_eq!((a_state.timesteps, a_state.chunks), (30, 4));
    let b_state = check_stream(&dd, EP, "imu", &data::small_channels()).expect("imu");
    assert_eq!(b_state.timesteps, 12);
    // Every chunk says which episode and stream it belongs to.
    let chunk = dd.join(EP).join("streams/joints/joints_chunk_0000.wshard");
    let meta = meta_wshard(&chunk);
    assert_eq!(meta["episode"], EP, "{meta}");
    assert_eq!(meta["stream"], "joints", "{meta}");
    let events = read_events(&dd, EP).expect("events");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].source, "wshard-e2e/raw");
    assert_eq!(events[0].data, EventData::Text("pick the cube".into()));
    assert_eq!((events[1].seq, events[1].source.as_str()), (1, "joints"));
    wshard_e2e::check::assert_verify_ok(&dd.join(EP).join("streams"));
    // The format library's reader opens what the daemon wrote.
    let dir = wshard::episode_dir::EpisodeDir::open(dd.join(EP)).expect("EpisodeDir");
    assert_eq!(dir.streams().len(), 2);
    assert_eq!(dir.events().len(), 2);
    let joints = dir.read_stream("joints").expect("read joints");
    let want: Vec<i64> = (0..30).map(data::t_ns).collect();
    assert_eq!(joints.timestamps_ns(), &want[..]);
}

#[test]
fn multirate_close_waits_for_every_stream() {
    let d = daemon();
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    record(&mut a, &data::channels(), 0..10);
    assert_eq!(episode_close(&mut o), 1, "joints still records");
    let ix = read_index(&dd, EP).expect("index");
    assert!(ix.closed);
    assert_eq!(ix.status, EpisodeStatus::Recording);
    // Closed: no more joins.
    let mut late = connect_v2(&d.socket());
    late.send(&Frame::StreamOpen(Box::new(imu())));
    let msg = late.expect_error(ErrorCode::EpisodeClosed);
    assert!(msg.contains(EP), "{msg}");
    // The stream carries on until its producer closes it.
    record(&mut a, &data::channels(), 10..20);
    a.close(Outcome::Completed, 20);
    let ix = wait_index_final(&dd, EP, TIMEOUT).expect("final");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    check_index_consistent(&dd, EP).expect("consistent");
    // Finalized: still no joins.
    late.send(&Frame::StreamOpen(Box::new(imu())));
    late.expect_error(ErrorCode::EpisodeClosed);
}

#[test]
fn multirate_owner_disconnect_closes_interrupted() {
    let d = daemon();
    let dd = d.data_dir();
    let o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    record(&mut a, &data::channels(), 0..9);
    drop(o);
    // The owner is gone: closed, no more joins (once the daemon noticed).
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !read_index(&dd, EP).expect("index").closed {
        assert!(std::time::Instant::now() < deadline, "never closed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    record(&mut a, &data::channels(), 9..12);
    a.close(Outcome::Completed, 12);
    let ix = wait_index_final(&dd, EP, TIMEOUT).expect("final");
    assert_eq!(ix.status, EpisodeStatus::Interrupted);
    assert_eq!(
        ix.stream("joints").map(|s| s.status),
        Some(EpisodeStatus::Complete)
    );
    check_stream(&dd, EP, "joints", &data::channels()).expect("joints");
}

#[test]
fn multirate_operator_close_stops_every_stream() {
    let d = daemon();
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    let mut b = producer(&d.socket(), &imu());
    record(&mut a, &data::channels(), 0..5);
    b.timesteps(&data::small_channels(), 0..3);
    let out = Command::new(bins::wshard())
        .args(["close", EP, "--json", "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("run wshard");
    let text = wshard_e2e::check::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["result"]["status"], "interrupted", "{v}");
    for c in [&mut a, &mut b, &mut o] {
        let msg = c.expect_error(ErrorCode::Stopped);
        assert!(msg.contains("closed by operator"), "{msg}");
    }
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(ix.status, EpisodeStatus::Interrupted);
    for s in &ix.streams {
        assert_eq!(s.status, EpisodeStatus::Interrupted, "{}", s.name);
    }
    assert_eq!(ix.stream("joints").map(|s| s.steps), Some(5));
    check_stream(&dd, EP, "imu", &data::small_channels()).expect("imu");
}

/// A producer with `joints` recording, and the owner; `f` does something wrong beside;
/// then `joints` must record on, bit-exact.
fn others_keep_recording(f: impl FnOnce(&Daemon, &mut RawConn)) {
    let d = daemon();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    record(&mut a, &data::channels(), 0..10);
    f(&d, &mut o);
    record(&mut a, &data::channels(), 10..25);
    a.close(Outcome::Completed, 25);
    assert_eq!(episode_close(&mut o), 0);
    let ix = check_index_consistent(&d.data_dir(), EP).expect("consistent");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    check_stream(&d.data_dir(), EP, "joints", &data::channels()).expect("joints");
}

#[test]
fn multirate_bad_duplicate_stream_is_stream_exists() {
    others_keep_recording(|d, _| {
        let mut dup = connect_v2(&d.socket());
        dup.send(&Frame::StreamOpen(Box::new(joints())));
        let msg = dup.expect_error(ErrorCode::StreamExists);
        assert!(msg.contains("`joints`") && msg.contains(EP), "{msg}");
        // The connection stays open and can join with another name.
        dup.send(&Frame::StreamOpen(Box::new(imu())));
        dup.expect_accepted(AcceptedWhat::StreamOpen);
        dup.close(Outcome::Completed, 0);
    });
}

#[test]
fn multirate_bad_schema_change_names_stream_and_field() {
    others_keep_recording(|d, _| {
        let mut changed = joints();
        changed.schema.channels[0].shape = vec![6];
        let mut c = connect_v2(&d.socket());
        c.send(&Frame::StreamOpen(Box::new(changed)));
        let msg = c.expect_error(ErrorCode::BadSchema);
        assert!(msg.contains("`joints`"), "{msg}");
        assert!(msg.contains("channels[0].shape"), "{msg}");
        let slower = stream_spec(EP, "joints", &data::channels(), 500.0, Durability::Ack);
        c.send(&Frame::StreamOpen(Box::new(slower)));
        let msg = c.expect_error(ErrorCode::BadSchema);
        assert!(msg.contains("tick_hz"), "{msg}");
    });
}

#[test]
fn multirate_bad_timestamps_backwards_name_the_stream() {
    others_keep_recording(|d, _| {
        let ch = data::small_channels();
        let mut b = producer(&d.socket(), &imu());
        b.send(&timestep_frame(0, &ch));
        b.send(&Frame::Timestep(Timestep {
            seq: 1,
            t_ns: data::t_ns(0) - 1,
            reward: 0.0,
            done: false,
            payload: data::packed_payload(1, &ch),
        }));
        let msg = b.expect_error(ErrorCode::TimestampOrder);
        assert!(
            msg.contains("stream `imu`") && msg.contains("t_ns"),
            "{msg}"
        );
        // The refused timestep was not accepted: seq 1 again, in order, is.
        b.timesteps(&ch, 1..4);
        b.close(Outcome::Completed, 4);
        check_stream(&d.data_dir(), EP, "imu", &ch).expect("imu");
    });
}

#[test]
fn multirate_bad_join_of_unknown_episode_or_name() {
    others_keep_recording(|d, _| {
        let mut c = connect_v2(&d.socket());
        let mut other = imu();
        other.episode_id = "no-such-episode".into();
        c.send(&Frame::StreamOpen(Box::new(other)));
        let msg = c.expect_error(ErrorCode::UnknownEpisode);
        assert!(msg.contains("no-such-episode"), "{msg}");
        let bad = stream_spec(EP, ".hidden", &data::small_channels(), 1.0, Durability::Ack);
        c.send(&Frame::StreamOpen(Box::new(bad)));
        let msg = c.expect_error(ErrorCode::BadEpisodeId);
        assert!(msg.contains("stream name"), "{msg}");
        assert!(!d.data_dir().join(EP).join("streams/.hidden").exists());
    });
}

#[test]
fn multirate_bad_event_over_the_limit_names_size_and_key() {
    others_keep_recording(|_, o| {
        let big = vec![0u8; DEFAULT_MAX_EVENT_BYTES + 1];
        o.send(&Frame::Event(Event::binary(data::t_ns(1), "blob", big)));
        let msg = o.expect_error(ErrorCode::Limit);
        assert!(msg.contains("limits.max_event_bytes"), "{msg}");
        assert!(
            msg.contains(&(DEFAULT_MAX_EVENT_BYTES + 1).to_string()),
            "{msg}"
        );
        // Not recorded: the next event is seq 0.
        assert_eq!(event(o, data::t_ns(2), "note", "ok"), 0);
    });
}

#[test]
fn multirate_episode_close_only_by_its_owner() {
    others_keep_recording(|d, _| {
        let mut c = producer(&d.socket(), &imu());
        c.send(&Frame::EpisodeClose {
            outcome: Outcome::Completed,
        });
        c.expect_error(ErrorCode::NotOpen);
        c.close(Outcome::Completed, 0);
    });
}

#[test]
fn multirate_v1_connection_knows_no_v2_frame() {
    let d = daemon();
    let mut c = RawConn::hello(&d.socket());
    c.send(&Frame::EpisodeOpen(wshard_ingest_proto::EpisodeOpen::new(
        EP, "",
    )));
    c.expect_error(ErrorCode::UnknownFrame);
    c.expect_closed();
    assert!(!d.data_dir().join(EP).exists());
    let (_, spoken) = RawConn::hello_version(&d.socket(), PROTOCOL_VERSION);
    assert_eq!(spoken, PROTOCOL_VERSION);
}

#[test]
fn multirate_events_of_a_v1_episode_go_beside_it() {
    let d = daemon();
    let ch = data::small_channels();
    let mut c = connect_v2(&d.socket());
    c.open(&data::open_spec("single", &ch, Durability::Ack));
    c.timesteps(&ch, 0..3);
    assert_eq!(event(&mut c, data::t_ns(1), "success", "yes"), 0);
    c.close(Outcome::Completed, 3);
    let events = read_events(&d.data_dir(), "single").expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].label, "success");
    // The episode itself is a v1 episode: no index.
    assert!(read_index(&d.data_dir(), "single").is_err());
    wshard_e2e::check::check_episode(&d.data_dir(), "single", &ch).expect("episode");
    let mut v1 = RawConn::hello(&d.socket());
    v1.send(&Frame::Event(Event::text(0, "x", "y")));
    match v1.recv_skip_durable() {
        Recv::Frame(Frame::Error { code, .. }) => assert_eq!(code, ErrorCode::UnknownFrame),
        other => panic!("{other:?}"),
    }
}

#[test]
fn multirate_rust_client_records_streams_over_socket_and_shm() {
    use wshard_client::{Client, Transport};
    let d = daemon();
    let socket = d.socket();
    let mut owner = Client::connect_v2(&socket, "owner").expect("connect");
    let mut ep = owner
        .open_multistream_episode(wshard_ingest_proto::EpisodeOpen::new(EP, data::ENV_ID))
        .expect("EPISODE_OPEN");
    std::thread::scope(|s| {
        let socket = &socket;
        let a = s.spawn(move || {
            let mut c = Client::connect_v2(socket, "arm").expect("connect");
            let mut w = c.join_stream(joints()).expect("join joints");
            data::push_steps(&mut w, &data::channels(), 40).expect("push");
            let seq = w
                .send_event(Event::text(data::t_ns(3), "button", "down"))
                .expect("event");
            assert!(seq < 2, "{seq}");
            w.close(Outcome::Completed).expect("close").timesteps
        });
        let b = s.spawn(move || {
            let mut c = Client::connect_v2(socket, "imu").expect("connect");
            let shm = Transport::Shm {
                slot_bytes: 0,
                slots: 8,
                policy: wshard_ingest_proto::RingPolicy::Block,
            };
            let mut w = c.join_stream_with(imu(), shm).expect("join imu over shm");
            data::push_steps(&mut w, &data::small_channels(), 17).expect("push");
            w.close(Outcome::Completed).expect("close").timesteps
        });
        assert_eq!(a.join().expect("arm"), 40);
        assert_eq!(b.join().expect("imu"), 17);
    });
    assert!(ep
        .send_event(Event::json(data::t_ns(1), "instruction", r#"{"say":"go"}"#))
        .is_ok());
    assert_eq!(ep.close(Outcome::Completed).expect("EPISODE_CLOSE"), 0);
    let dd = d.data_dir();
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    check_stream(&dd, EP, "joints", &data::channels()).expect("joints");
    check_stream(&dd, EP, "imu", &data::small_channels()).expect("imu");
    assert_eq!(read_events(&dd, EP).expect("events").len(), 2);
}

#[test]
fn multirate_shutdown_finalizes_streams_and_episode_interrupted() {
    let mut d = daemon();
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    record(&mut a, &data::channels(), 0..7);
    d.terminate();
    let status = d.wait_exit(TIMEOUT);
    assert!(status.success(), "{status}\n{}", d.log());
    for c in [&mut a, &mut o] {
        c.expect_error(ErrorCode::ShuttingDown);
    }
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(ix.status, EpisodeStatus::Interrupted);
    assert_eq!(
        ix.stream("joints").map(|s| (s.status, s.steps)),
        Some((EpisodeStatus::Interrupted, 7))
    );
    // Finalized by the shutdown: the restart has nothing to recover.
    let before = std::fs::read(dd.join(EP).join(format!("{EP}_index.json"))).expect("index");
    d.spawn();
    d.wait_ready();
    let after = std::fs::read(dd.join(EP).join(format!("{EP}_index.json"))).expect("index");
    assert_eq!(before, after, "recovery rewrote a finalized index");
    check_stream(&dd, EP, "joints", &data::channels()).expect("joints");
}

#[test]
fn multirate_operator_close_after_the_owner_s_close_ends_interrupted() {
    let d = daemon();
    let dd = d.data_dir();
    let mut o = owner(&d.socket(), EP);
    let mut a = producer(&d.socket(), &joints());
    record(&mut a, &data::channels(), 0..6);
    assert_eq!(episode_close(&mut o), 1);
    let out = Command::new(bins::wshard())
        .args(["close", EP, "--control"])
        .arg(d.root().join("wshardd-control.sock"))
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("run wshard");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        wshard_e2e::check::output_text(&out)
    );
    a.expect_error(ErrorCode::Stopped);
    let ix = check_index_consistent(&dd, EP).expect("consistent");
    assert_eq!(
        ix.status,
        EpisodeStatus::Interrupted,
        "the operator stopped a stream"
    );
    assert_eq!(ix.stream("joints").map(|s| s.steps), Some(6));
}
