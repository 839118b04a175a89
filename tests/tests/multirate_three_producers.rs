//! The headline test: three producer PROCESSES record one multi-stream episode
//! against the real daemon, pushing as fast as they can (not in real time): a Rust client
//! process records the joints (1 kHz, three `f32[7]` channels) over the socket, a Python
//! client process the IMU (200 Hz, `f32[10]`) over the socket, another Python client
//! process both cameras (30 Hz, `u8[480,640,3]` each, one stream) over a shared-memory
//! ring; each sends events at about 1 Hz of its data, and the test process is the owner
//! (opens the episode, sends an instruction and a success event, closes it). Two seconds
//! of data.
//!
//! Read back: every stream bit-exact with its timestamps through `EpisodeDir`; the events
//! file (count, seqs in order, every field as sent, the seq each producer was acknowledged
//! with); the index (stream names, clocks, channels, producers, step counts, first/last
//! `t_ns`, status complete); `wshard verify --deep` over the data dir lists every chunk
//! and manifest of every stream as OK. The second test has the streams start late and end
//! early relative to each other, and the owner close while two still record.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use wshard::episode_dir::events::{EventData, EventRecord};
use wshard::episode_dir::index::{EpisodeIndex, EpisodeStatus};
use wshard::episode_dir::{EpisodeDir, EventOrigin, Layout};
use wshard_client::{Client, EpisodeOpen, Event, MultiStreamEpisode, Outcome};
use wshard_e2e::multi::{check_index_consistent, read_events, read_index, wait_index_final};
use wshard_e2e::multirate_workload::{success_json, Kind, MS_NS, T0_NS};
use wshard_e2e::producer::{self, Producer, Run};
use wshard_e2e::{bins, check, data, Daemon, DaemonOptions, TIMEOUT};

const EP: &str = "three-producers";

/// Client name of the owner (the test process): the `source` of its events.
const OWNER: &str = "e2e-owner";

/// A bound for a producer's whole run (debug builds on a shared machine); not a
/// performance assertion.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// `rotation.max_timesteps`.
const ROTATION_STEPS: u64 = 300;

/// Which client records which stream.
fn client_of(kind: Kind) -> producer::Client {
    match kind {
        Kind::Joints => producer::Client::Rust,
        Kind::Imu => producer::Client::PythonSocket,
        Kind::Cameras => producer::Client::PythonShm,
    }
}

/// Chunks of at most 300 steps or 32 MiB: several chunks per stream (the cameras rotate
/// by bytes, every 17 frames).
fn daemon() -> Daemon {
    let mut opts = DaemonOptions::default().rotation(ROTATION_STEPS);
    opts.max_bytes = 32 << 20;
    Daemon::start(opts)
}

/// One stream's plan: steps and first timestamp.
#[derive(Clone, Copy, Debug)]
struct Plan {
    kind: Kind,
    steps: u64,
    t0: i64,
}

impl Plan {
    fn run<'a>(&self, socket: &'a Path, pause_at: Option<u64>) -> Run<'a> {
        Run {
            socket,
            episode: EP,
            kind: self.kind,
            steps: self.steps,
            t0: self.t0,
            pause_at,
        }
    }

    fn t_ns(&self, step: u64) -> i64 {
        self.kind.t_ns(self.t0, step)
    }
}

fn owner_client(socket: &Path) -> Client {
    Client::connect_v2(socket, OWNER).expect("owner connects (protocol 2)")
}

fn open(owner: &mut Client) -> MultiStreamEpisode<'_> {
    owner
        .open_multistream_episode(
            EpisodeOpen::new(EP, data::ENV_ID).with_metadata_json(data::METADATA_JSON),
        )
        .expect("EPISODE_OPEN")
}

/// Every event the episode must hold, by seq: the owner's and each producer's (the seq it
/// printed, the data recomputed from its stream and step).
fn expected_events(
    owner: &[(u64, i64, &str, EventData)],
    producers: &[(Plan, Vec<(u64, u64)>)],
) -> BTreeMap<u64, EventRecord> {
    let mut want = BTreeMap::new();
    for (seq, t_ns, label, data) in owner {
        let ev = EventRecord {
            seq: *seq,
            t_ns: *t_ns,
            label: (*label).to_owned(),
            source: OWNER.to_owned(),
            data: data.clone(),
        };
        assert!(want.insert(*seq, ev).is_none(), "seq {seq} twice");
    }
    for (plan, acks) in producers {
        let steps: Vec<u64> = acks.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            steps,
            plan.kind.event_steps(plan.steps),
            "{}: events sent",
            plan.kind.name()
        );
        for &(seq, step) in acks {
            let ev = EventRecord {
                seq,
                t_ns: plan.t_ns(step),
                label: plan.kind.event_label().to_owned(),
                source: plan.kind.name().to_owned(),
                data: plan.kind.event_data(step),
            };
            assert!(want.insert(seq, ev).is_none(), "seq {seq} twice");
        }
    }
    want
}

/// The events file holds exactly `want` (seqs 0..n in file order, every field), and
/// `EpisodeDir` lists the same events sorted by time.
fn check_events(dd: &Path, dir: &EpisodeDir, want: &BTreeMap<u64, EventRecord>) {
    let got = read_events(dd, EP).expect("events file");
    let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
    let n = want.len() as u64;
    assert_eq!(seqs, (0..n).collect::<Vec<_>>(), "event seqs in file order");
    for e in &got {
        assert_eq!(Some(e), want.get(&e.seq), "event seq {}", e.seq);
    }
    // Per producer, its events are in the order it sent them.
    let mut by_time: Vec<&EventRecord> = want.values().collect();
    by_time.sort_by_key(|e| (e.t_ns, e.seq));
    let listed: Vec<(i64, u64, &str, &EventData)> = dir
        .events()
        .iter()
        .map(|e| {
            let EventOrigin::Producer { source } = &e.origin else {
                panic!("an annotation in {e:?}");
            };
            assert_eq!(Some(source), want.get(&e.seq).map(|w| &w.source));
            (e.t_ns, e.seq, e.label.as_str(), &e.data)
        })
        .collect();
    let expected: Vec<(i64, u64, &str, &EventData)> = by_time
        .iter()
        .map(|e| (e.t_ns, e.seq, e.label.as_str(), &e.data))
        .collect();
    assert_eq!(listed, expected, "EpisodeDir events, by time");
}

/// The index lists exactly `plans` (by name) with their clocks, channels, producers,
/// counts and first/last timestamps, every stream and the episode `complete`.
fn check_index(dd: &Path, plans: &[Plan]) -> EpisodeIndex {
    let ix = check_index_consistent(dd, EP).expect("index agrees with the manifests");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    assert!(ix.closed);
    assert_eq!(
        (ix.episode_id.as_str(), ix.env_id.as_str()),
        (EP, data::ENV_ID)
    );
    let meta: Value = serde_json::from_str(data::METADATA_JSON).expect("metadata");
    assert_eq!(Value::Object(ix.metadata.clone()), meta);
    let mut names: Vec<&str> = ix.streams.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = plans.iter().map(|p| p.kind.name()).collect();
    want.sort_unstable();
    assert_eq!(names, want, "streams");
    for p in plans {
        let k = p.kind;
        let s = ix.stream(k.name()).expect("listed");
        assert_eq!(s.timebase, k.timebase_name(), "{}", k.name());
        assert_eq!(s.tick_hz.to_bits(), k.hz().to_bits(), "{}", k.name());
        assert_eq!(s.producer, client_of(k).hello_name(), "{}", k.name());
        assert_eq!(s.status, EpisodeStatus::Complete, "{}", k.name());
        assert_eq!(
            (s.steps, s.first_t_ns, s.last_t_ns),
            (p.steps, Some(p.t_ns(0)), Some(p.t_ns(p.steps - 1))),
            "{}",
            k.name()
        );
        let min_chunks = p.steps.div_ceil(ROTATION_STEPS);
        assert!(s.chunks >= min_chunks, "{}: {} chunks", k.name(), s.chunks);
        let chans: Vec<Value> = s
            .channels
            .iter()
            .map(|c| json!([c.name, c.lane, c.dtype, c.shape]))
            .collect();
        let want: Vec<Value> = k
            .channels()
            .iter()
            .map(|c| {
                let shape: Vec<u64> = c.shape.iter().map(|&d| u64::from(d)).collect();
                json!([c.name, c.lane.prefix(), c.dtype.code(), shape])
            })
            .collect();
        assert_eq!(chans, want, "{}: channels", k.name());
    }
    ix
}

/// Every stream read through `EpisodeDir`: its listing, timestamps, and every channel
/// bit-exact at every step.
fn check_streams(dir: &EpisodeDir, plans: &[Plan]) {
    assert_eq!(dir.layout(), Layout::MultiStream);
    assert_eq!(dir.status(), Some(EpisodeStatus::Complete));
    assert_eq!(dir.torn_event_bytes(), 0);
    for p in plans {
        let k = p.kind;
        let info = dir.stream(k.name()).expect("stream listed");
        assert_eq!(
            (info.steps, info.first_t_ns, info.last_t_ns),
            (p.steps, Some(p.t_ns(0)), Some(p.t_ns(p.steps - 1))),
            "{}",
            k.name()
        );
        let data = dir.read_stream(k.name()).expect("read stream");
        let want_t: Vec<i64> = (0..p.steps).map(|s| p.t_ns(s)).collect();
        assert_eq!(
            data.timestamps_ns(),
            &want_t[..],
            "{}: timestamps",
            k.name()
        );
        let names: Vec<&str> = data.channels().iter().map(|c| c.name.as_str()).collect();
        let specs = k.channels();
        let want_names: Vec<&str> = specs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, want_names, "{}: channels", k.name());
        for (ci, (ch, spec)) in data.channels().iter().zip(&specs).enumerate() {
            assert_eq!((ch.lane, ch.dtype), (spec.lane, spec.dtype), "{}", ch.name);
            assert_eq!(ch.steps(), p.steps, "{}/{}", k.name(), ch.name);
            for s in 0..p.steps {
                let got = ch.step(s).expect("step in range");
                assert!(
                    got == k.value(ci, s).as_slice(),
                    "{}/{}: step {s} differs from what was sent",
                    k.name(),
                    ch.name
                );
            }
        }
    }
}

/// `wshard verify --deep --json` over the data dir: every `*.wshard` file of the episode
/// (each stream's manifest and every chunk it lists) reported OK, and as many chunks as
/// the index counts.
fn check_verified(dd: &Path, ix: &EpisodeIndex) {
    let out = Command::new(bins::wshard())
        .args(["verify", "--deep", "--json"])
        .arg(dd)
        .output()
        .expect("run wshard verify");
    let text = check::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let mut reported = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(v["ok"], true, "{v}");
        let path = v["path"].as_str().expect("path").to_owned();
        reported.insert(path, v["kind"].as_str().unwrap_or_default().to_owned());
    }
    let files: Vec<String> = check::walk(dd)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wshard"))
        .map(|p| p.display().to_string())
        .collect();
    let listed: Vec<&String> = reported.keys().collect();
    let mut on_disk: Vec<&String> = files.iter().collect();
    on_disk.sort();
    assert_eq!(listed, on_disk, "every file verified");
    let manifests = reported.values().filter(|k| *k == "manifest").count();
    let chunks = reported.values().filter(|k| *k == "episode").count() as u64;
    assert_eq!(manifests, ix.streams.len());
    assert_eq!(chunks, ix.streams.iter().map(|s| s.chunks).sum::<u64>());
}

/// Read back everything and check it against `plans`, the owner's events and what each
/// producer printed.
fn check_all(
    d: &Daemon,
    plans: &[Plan],
    owner_events: &[(u64, i64, &str, EventData)],
    acks: Vec<(Plan, Vec<(u64, u64)>)>,
) {
    let dd = d.data_dir();
    let ix = check_index(&dd, plans);
    let dir = EpisodeDir::open(dd.join(EP)).expect("EpisodeDir::open");
    check_streams(&dir, plans);
    check_events(&dd, &dir, &expected_events(owner_events, &acks));
    check_verified(&dd, &ix);
    assert!(!d.log().contains("panicked"), "{}", d.log());
}

fn finish(p: Producer, plan: Plan) -> (Plan, Vec<(u64, u64)>) {
    let out = p.finish(RUN_TIMEOUT);
    assert_eq!(
        out.closed(),
        Some((plan.steps, plan.steps)),
        "{}: closed with every step durable: {out:?}",
        plan.kind.name()
    );
    (plan, out.events())
}

#[test]
fn multirate_three_producers_record_one_episode() {
    let d = daemon();
    let socket = d.socket();
    let plans = [
        Plan {
            kind: Kind::Joints,
            steps: 2000,
            t0: T0_NS,
        },
        Plan {
            kind: Kind::Imu,
            steps: 400,
            t0: T0_NS,
        },
        Plan {
            kind: Kind::Cameras,
            steps: 60,
            t0: T0_NS,
        },
    ];
    let mut owner = owner_client(&socket);
    let mut ep = open(&mut owner);
    let instruction = EventData::Text("pick up the red cube".into());
    let seq = ep
        .send_event(Event::text(T0_NS, "instruction", "pick up the red cube"))
        .expect("instruction");
    assert_eq!(seq, 0, "the first event");
    // All three at once.
    let running: Vec<(Producer, Plan)> = plans
        .iter()
        .map(|p| {
            (
                Producer::spawn(client_of(p.kind), &p.run(&socket, None)),
                *p,
            )
        })
        .collect();
    let acks: Vec<(Plan, Vec<(u64, u64)>)> = running
        .into_iter()
        .map(|(p, plan)| finish(p, plan))
        .collect();
    let produced: usize = acks.iter().map(|(_, a)| a.len()).sum();
    let end = plans[0].t_ns(plans[0].steps - 1);
    let success = ep
        .send_event(Event::json(end, "success", success_json().to_string()))
        .expect("success");
    assert_eq!(success, produced as u64 + 1, "after every producer's event");
    assert_eq!(
        ep.close(Outcome::Completed).expect("EPISODE_CLOSE"),
        0,
        "every stream ended"
    );
    let owner_events = [
        (0, T0_NS, "instruction", instruction),
        (success, end, "success", EventData::Json(success_json())),
    ];
    check_all(&d, &plans, &owner_events, acks);
    let ix = read_index(&d.data_dir(), EP).expect("index");
    for s in &ix.streams {
        assert!(s.chunks >= 2, "{}: {} chunks", s.name, s.chunks);
    }
}

#[test]
fn multirate_three_producers_start_late_and_end_early() {
    let d = daemon();
    let dd = d.data_dir();
    let socket = d.socket();
    // In data time: cameras [0, 1.97 s], joints [0.3 s, 2.3 s], IMU [0.5 s, 1.0 s].
    let cameras = Plan {
        kind: Kind::Cameras,
        steps: 60,
        t0: T0_NS,
    };
    let joints = Plan {
        kind: Kind::Joints,
        steps: 2000,
        t0: T0_NS + 300 * MS_NS,
    };
    let imu = Plan {
        kind: Kind::Imu,
        steps: 100,
        t0: T0_NS + 500 * MS_NS,
    };
    let plans = [cameras, joints, imu];
    let mut owner = owner_client(&socket);
    let mut ep = open(&mut owner);
    // The cameras start alone and pause; the joints join late and pause; the IMU joins
    // last and ends first.
    let mut cam = Producer::spawn(client_of(Kind::Cameras), &cameras.run(&socket, Some(20)));
    assert_eq!(cam.expect_line("paused ", RUN_TIMEOUT), "20");
    let ix = read_index(&dd, EP).expect("index");
    let names: Vec<&str> = ix.streams.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cameras"], "only the cameras so far");
    let mut arm = Producer::spawn(client_of(Kind::Joints), &joints.run(&socket, Some(700)));
    assert_eq!(arm.expect_line("paused ", RUN_TIMEOUT), "700");
    let short = Producer::spawn(client_of(Kind::Imu), &imu.run(&socket, None));
    let imu_acks = finish(short, imu);
    // The owner closes while the cameras and the joints still record.
    let seq = ep
        .send_event(Event::text(T0_NS + 1000 * MS_NS, "instruction", "place it"))
        .expect("event");
    assert_eq!(
        ep.close(Outcome::Completed).expect("EPISODE_CLOSE"),
        2,
        "two still record"
    );
    let ix = read_index(&dd, EP).expect("index");
    assert!(ix.closed);
    assert_eq!(ix.status, EpisodeStatus::Recording);
    assert_eq!(
        ix.stream("imu").map(|s| s.status),
        Some(EpisodeStatus::Complete)
    );
    // The cameras end; the episode waits for the joints.
    cam.resume();
    let cam_acks = finish(cam, cameras);
    let ix = read_index(&dd, EP).expect("index");
    assert_eq!(
        ix.status,
        EpisodeStatus::Recording,
        "the joints still record"
    );
    assert_eq!(
        ix.stream("cameras").map(|s| s.status),
        Some(EpisodeStatus::Complete)
    );
    assert_eq!(
        ix.stream("joints").map(|s| s.status),
        Some(EpisodeStatus::Recording)
    );
    arm.resume();
    let arm_acks = finish(arm, joints);
    let ix = wait_index_final(&dd, EP, TIMEOUT).expect("finalized");
    assert_eq!(ix.status, EpisodeStatus::Complete);
    let owner_events = [(
        seq,
        T0_NS + 1000 * MS_NS,
        "instruction",
        EventData::Text("place it".into()),
    )];
    check_all(
        &d,
        &plans,
        &owner_events,
        vec![cam_acks, arm_acks, imu_acks],
    );
    // What "late" and "early" mean on disk: the first and last timestamps differ per stream.
    let dir = EpisodeDir::open(dd.join(EP)).expect("EpisodeDir::open");
    let span = |k: Kind| {
        let s = dir.stream(k.name()).expect("stream");
        (s.first_t_ns.expect("first"), s.last_t_ns.expect("last"))
    };
    let (c0, c1) = span(Kind::Cameras);
    let (j0, j1) = span(Kind::Joints);
    let (i0, i1) = span(Kind::Imu);
    assert!(c0 < j0 && j0 < i0, "starts: cameras, joints, imu");
    assert!(i1 < c1 && c1 < j1, "ends: imu, cameras, joints");
}
