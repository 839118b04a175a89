//! SIGKILL loop with multi-stream episodes: an owner and several producers record one
//! episode (streams at their own rates, durability `ack` and `chunk`, events from the owner
//! and the producers) until the daemon is killed at a random moment; after the restart
//! (recovery) every DURABLE-acknowledged timestep of every stream and every acknowledged
//! event is there, bit-exact, and the episode index agrees with the streams' manifests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wshard::episode_dir::index::EpisodeStatus;
use wshard_e2e::check;
use wshard_e2e::daemon::killed_by_sigkill;
use wshard_e2e::multi::{
    check_index_consistent, check_stream, connect_v2, read_events, stream_spec,
};
use wshard_e2e::raw::{timestep_frame, RawConn, Recv};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng};
use wshard_ingest_proto::{
    encode, AcceptedWhat, ChannelSpec, Durability, EpisodeOpen, Event, Frame, StreamOpen,
};

/// What one connection got acknowledged before the kill.
#[derive(Debug, Default)]
struct Acked {
    /// The stream it recorded (none for the owner), its channels, its highest DURABLE.
    stream: Option<(String, Vec<ChannelSpec>)>,
    durable: u64,
    /// `(seq, t_ns, label)` of every event acknowledged.
    events: Vec<(u64, i64, String)>,
}

/// Send `frame`; false once the daemon is gone.
fn send(c: &mut RawConn, frame: &Frame) -> bool {
    let mut buf = Vec::new();
    encode(frame, &mut buf).expect("encode");
    c.send_bytes(&buf).is_ok()
}

/// Read until `done` says so, returning that frame; DURABLE is noted. `None` once the
/// daemon is gone (or silent for the test's patience).
fn read_until(
    c: &mut RawConn,
    acked: &mut Acked,
    done: &dyn Fn(&Frame, &Acked) -> bool,
) -> Option<Frame> {
    loop {
        match c.recv(Duration::from_secs(5)) {
            Recv::Frame(f) => {
                match &f {
                    Frame::Durable { up_to_seq } => acked.durable = acked.durable.max(*up_to_seq),
                    Frame::Error { code, message } => panic!("ERROR {code}: {message}"),
                    _ => {}
                }
                if done(&f, acked) {
                    return Some(f);
                }
            }
            Recv::Closed | Recv::Timeout => return None,
        }
    }
}

/// Send an event and wait for its acknowledgement (noted with its seq).
fn send_event(c: &mut RawConn, acked: &mut Acked, t_ns: i64, label: &str) -> bool {
    if !send(
        c,
        &Frame::Event(Event::text(t_ns, label, format!("{label} at {t_ns}"))),
    ) {
        return false;
    }
    let ack = read_until(c, acked, &|f, _| {
        matches!(
            f,
            Frame::Accepted {
                what: AcceptedWhat::Event,
                ..
            }
        )
    });
    match ack {
        Some(Frame::Accepted { up_to_seq, .. }) => {
            acked.events.push((up_to_seq, t_ns, label.to_owned()));
            true
        }
        _ => false,
    }
}

/// A producer on `c`: join with `spec`, then batches of timesteps, a FLUSH after each, and an
/// event now and then, until the daemon is gone or `stop`.
fn produce(
    mut c: RawConn,
    spec: &StreamOpen,
    channels: &[ChannelSpec],
    seed: u64,
    stop: &AtomicBool,
) -> Acked {
    let mut rng = Rng::new(seed);
    let mut acked = Acked::default();
    if !send(&mut c, &Frame::StreamOpen(Box::new(spec.clone()))) {
        return acked;
    }
    if read_until(&mut c, &mut acked, &|f, _| {
        matches!(
            f,
            Frame::Accepted {
                what: AcceptedWhat::StreamOpen,
                ..
            }
        )
    })
    .is_none()
    {
        return acked;
    }
    acked.stream = Some((spec.stream().to_owned(), channels.to_vec()));
    let mut seq = 0;
    while !stop.load(Ordering::Relaxed) {
        let n = rng.range(1, 12);
        for s in seq..seq + n {
            if !send(&mut c, &timestep_frame(s, channels)) {
                return acked;
            }
        }
        seq += n;
        if rng.chance(1, 5) && !send_event(&mut c, &mut acked, data::t_ns(seq), spec.stream()) {
            return acked;
        }
        // A `chunk` stream is DURABLE only per chunk: FLUSH asks for everything.
        if !send(&mut c, &Frame::Flush)
            || read_until(&mut c, &mut acked, &|f, a| {
                matches!(f, Frame::Durable { .. }) && a.durable >= seq
            })
            .is_none()
        {
            return acked;
        }
    }
    acked
}

/// The owner: sends events until the daemon is gone or `stop`.
fn own(mut c: RawConn, seed: u64, stop: &AtomicBool) -> Acked {
    let mut rng = Rng::new(seed);
    let mut acked = Acked::default();
    let mut t = data::t_ns(0);
    while !stop.load(Ordering::Relaxed) {
        t += i64::try_from(rng.range(1, 50_000_000)).unwrap_or(1);
        if !send_event(&mut c, &mut acked, t, "owner") {
            break;
        }
        std::thread::sleep(Duration::from_millis(rng.range(1, 20)));
    }
    acked
}

/// One round: an episode with 2..=3 streams recorded until SIGKILL; the acknowledgements.
fn round(d: &mut Daemon, ep: &str, rng: &mut Rng) -> Vec<Acked> {
    let socket = d.socket();
    let mut owner = connect_v2(&socket);
    assert!(send(
        &mut owner,
        &Frame::EpisodeOpen(EpisodeOpen::new(ep, data::ENV_ID))
    ));
    owner.expect_accepted(AcceptedWhat::EpisodeOpen);
    let streams = [
        (
            stream_spec(ep, "joints", &data::channels(), 1000.0, Durability::Ack),
            data::channels(),
        ),
        (
            stream_spec(ep, "imu", &data::small_channels(), 200.0, Durability::Ack),
            data::small_channels(),
        ),
        (
            stream_spec(ep, "cam", &data::small_channels(), 30.0, Durability::Chunk),
            data::small_channels(),
        ),
    ];
    let used = usize::try_from(rng.range(2, 3)).unwrap_or(2);
    let delay = Duration::from_millis(rng.range(30, 400));
    let stop = AtomicBool::new(false);
    let seeds: Vec<u64> = (0..=used).map(|_| rng.next_u64()).collect();
    std::thread::scope(|s| {
        let (socket, stop) = (&socket, &stop);
        let first = seeds[0];
        let mut handles = vec![s.spawn(move || own(owner, first, stop))];
        for (i, (spec, ch)) in streams.iter().take(used).enumerate() {
            let seed = seeds[i + 1];
            // Connected before the clock starts: only the recording races the kill.
            let c = connect_v2(socket);
            handles.push(s.spawn(move || produce(c, spec, ch, seed, stop)));
        }
        std::thread::sleep(delay);
        let status = d.kill9().expect("running");
        assert!(killed_by_sigkill(&status), "{status}");
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    })
}

/// After the restart: the index of `ep` agrees with its streams, every acknowledged
/// timestep and event is there.
fn check_round(d: &Daemon, ep: &str, acked: &[Acked]) {
    let dd = d.data_dir();
    let index =
        check_index_consistent(&dd, ep).unwrap_or_else(|e| panic!("{e}\nlog:\n{}", d.log()));
    assert_ne!(
        index.status,
        EpisodeStatus::Recording,
        "{ep}: not finalized"
    );
    assert!(index.closed, "{ep}");
    for a in acked {
        if let Some((name, ch)) = &a.stream {
            let st = check_stream(&dd, ep, name, ch).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                st.timesteps >= a.durable,
                "{ep}/{name}: {} timesteps on disk, {} acknowledged DURABLE",
                st.timesteps,
                a.durable
            );
            let entry = index
                .stream(name)
                .unwrap_or_else(|| panic!("{ep}/{name} not listed"));
            if st.timesteps > 0 {
                let last = i64::try_from(st.timesteps - 1).unwrap_or(0);
                assert_eq!(entry.first_t_ns, Some(data::t_ns(0)), "{ep}/{name}");
                assert_eq!(
                    entry.last_t_ns,
                    Some(data::t_ns(u64::try_from(last).unwrap_or(0))),
                    "{ep}/{name}"
                );
            }
        }
    }
    let events = read_events(&dd, ep).unwrap_or_else(|e| panic!("{e}"));
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (0..events.len() as u64).collect();
    assert_eq!(seqs, want, "{ep}: event seqs");
    for a in acked {
        for (seq, t_ns, label) in &a.events {
            let found = events.iter().find(|e| e.seq == *seq);
            assert!(
                found.is_some_and(|e| e.t_ns == *t_ns && &e.label == label),
                "{ep}: acknowledged event {seq} ({label} at {t_ns}) lost: {found:?}"
            );
        }
    }
}

#[test]
fn multirate_sigkill_loop_keeps_every_acknowledged_step_and_event() {
    let rounds: u64 = std::env::var("WSHARD_E2E_MULTIRATE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut rng = Rng::new(0x6d75_6c74_6972_6174);
    let mut d = Daemon::start(DaemonOptions::default().rotation(16).fsync("interval", 5));
    let mut done = Vec::new();
    let (mut steps, mut events) = (0, 0);
    for r in 0..rounds {
        let ep = format!("kill-{r:02}");
        let acked = round(&mut d, &ep, &mut rng);
        d.spawn();
        d.wait_ready();
        steps += acked.iter().map(|a| a.durable).sum::<u64>();
        events += acked.iter().map(|a| a.events.len()).sum::<usize>();
        done.push((ep, acked));
        // Every episode so far: recovery of a later round changed nothing in it.
        for (ep, acked) in &done {
            check_round(&d, ep, acked);
        }
        for suffix in [".partial", ".wal", ".tmp"] {
            let left = check::episode_files_ending(&d.data_dir(), suffix);
            assert!(left.is_empty(), "left after recovery: {left:?}");
        }
    }
    eprintln!("multirate sigkill: {rounds} rounds, {steps} DURABLE timesteps and {events} events acknowledged, all found");
    assert!(
        steps > 0 && events > 0,
        "the loop acknowledged nothing: no coverage"
    );
}
