//! SIGKILL at random moments, restart, and check that everything acknowledged survived:
//! the crash loop, and kills while recovery itself runs.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use wshard_client::{Durability, Transport};
use wshard_e2e::check::{self, check_episode};
use wshard_e2e::daemon::killed_by_sigkill;
use wshard_e2e::workload::{self, EpisodeLog, Settled, Workload};
use wshard_e2e::{data, Daemon, DaemonOptions, Rng};

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}")),
        Err(_) => default,
    }
}

/// Totals printed at the end of the loop.
#[derive(Debug, Default)]
struct Totals {
    episodes: usize,
    acked: u64,
    on_disk: u64,
    rebuilt: u64,
    by_status: std::collections::BTreeMap<String, usize>,
}

/// After a restart: every logged episode is consistent, nothing is half-done, and the
/// operator's verify agrees. Episodes checked in an earlier round only need an identical
/// manifest (its chunks' SHA-256 are re-checked by `wshard verify`). `full_verify`: verify
/// the whole data dir, else only the episodes checked for the first time.
fn check_all(
    d: &Daemon,
    logs: &[EpisodeLog],
    settled: &mut Settled,
    totals: &mut Totals,
    full_verify: bool,
) {
    let dd = d.data_dir();
    let allowed = ["complete", "recovered"];
    let mut fresh = Vec::new();
    for log in logs {
        if settled.unchanged(&dd, &log.id).unwrap() {
            continue;
        }
        if dd.join(&log.id).exists() {
            fresh.push(dd.join(&log.id));
        }
        match workload::check_logged(&dd, log, &allowed) {
            Ok(Some(st)) => {
                totals.on_disk += st.timesteps;
                totals.rebuilt += workload::rebuilt_from_journal(&st);
                *totals.by_status.entry(st.status.clone()).or_default() += 1;
                settled.remember(&dd, &log.id);
            }
            Ok(None) => {}
            Err(e) => panic!("{e}\nlog:\n{}", d.log()),
        }
        totals.acked += log.acked;
        totals.episodes += 1;
    }
    // Recovery finalized everything: no partial chunk, journal or temp file is left.
    for suffix in [".partial", ".wal", ".tmp"] {
        let left = check::episode_files_ending(&dd, suffix);
        assert!(
            left.is_empty(),
            "left after recovery: {left:?}\nlog:\n{}",
            d.log()
        );
    }
    // Every episode directory on disk belongs to a logged episode.
    for id in check::episode_ids(&dd) {
        assert!(
            logs.iter().any(|l| l.id == id),
            "unknown episode directory {id}"
        );
    }
    if full_verify && !check::episode_ids(&dd).is_empty() {
        check::assert_verify_ok(&dd);
    } else if !fresh.is_empty() {
        let run = check::run_verify(&fresh);
        assert!(run.ok(), "{run}");
    }
}

/// Run `clients` workloads for `delay`, SIGKILL the daemon, join the clients.
fn stream_then_kill(d: &mut Daemon, iter: u64, rng: &mut Rng) -> Vec<EpisodeLog> {
    let clients = rng.range(1, 2);
    let delay = Duration::from_millis(rng.range(20, 400));
    let socket = d.socket();
    let stop = AtomicBool::new(false);
    let workloads: Vec<Workload> = (0..clients)
        .map(|c| Workload {
            prefix: format!("i{iter:03}-c{c}"),
            // The second client records durability `chunk` every other round.
            durability: if c == 1 && iter % 2 == 1 {
                Durability::Chunk
            } else {
                Durability::Ack
            },
            episode_len: (50, 1200),
            batch: (1, 40),
            sync_every: 6,
            seed: rng.next_u64(),
            transport: Transport::Socket,
        })
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = workloads
            .iter()
            .map(|w| {
                let (socket, stop) = (&socket, &stop);
                s.spawn(move || workload::run(socket, w, stop))
            })
            .collect();
        std::thread::sleep(delay);
        let status = d.kill9().unwrap();
        assert!(
            killed_by_sigkill(&status),
            "wshardd was not running: {status}"
        );
        handles
            .into_iter()
            .flat_map(|h| {
                let (logs, ended) = h.join().unwrap();
                assert!(
                    ended.error.is_some(),
                    "a client ended without noticing the kill"
                );
                logs
            })
            .collect()
    })
}

#[test]
fn crash_sigkill_loop() {
    let iterations = env_u64("WSHARD_CRASH_ITERATIONS", 50);
    let seed = env_u64("WSHARD_CRASH_SEED", 0x5EED_C0DE);
    // `wshard verify DATA_DIR` every round (default) or every n-th round; the other rounds
    // verify only the episodes new to this round. Long loops want e.g. 10.
    let verify_every = env_u64("WSHARD_CRASH_VERIFY_EVERY", 1).max(1);
    let opts = DaemonOptions::default().rotation(200).fsync("interval", 5);
    let mut d = Daemon::new(opts.clone());
    let mut rng = Rng::new(seed);
    let mut logs: Vec<EpisodeLog> = Vec::new();
    let mut settled = Settled::default();
    let mut totals = Totals::default();
    let started = Instant::now();
    for iter in 0..iterations {
        // Vary the fsync policy and the rotation from round to round (config rewritten
        // while the daemon is down; recovery does not depend on them).
        let policy = ["interval", "interval", "always", "never"][rng.range(0, 3) as usize];
        d.set_options(opts.clone().rotation(rng.range(50, 300)).fsync(policy, 5));
        d.spawn();
        d.wait_ready(); // recovery of the previous round has run
        check_all(
            &d,
            &logs,
            &mut settled,
            &mut totals,
            iter % verify_every == 0,
        );
        logs.extend(stream_then_kill(&mut d, iter, &mut rng));
    }
    d.spawn();
    d.wait_ready();
    check_all(&d, &logs, &mut settled, &mut totals, true);
    let quarantined = check::quarantine_files(&d.data_dir());
    println!(
        "crash loop: seed={seed:#x} iterations={iterations} episodes={} {:?} \
         timesteps acknowledged={} on disk={} rebuilt from journals={} \
         files quarantined={} ({:.1} s)",
        totals.episodes,
        totals.by_status,
        totals.acked,
        totals.on_disk,
        totals.rebuilt,
        quarantined.len(),
        started.elapsed().as_secs_f64()
    );
    for q in &quarantined {
        let len = std::fs::metadata(q).map(|m| m.len()).unwrap_or(0);
        println!("  quarantined: {} ({len} bytes)", q.display());
    }
    if iterations >= 5 {
        assert!(totals.by_status.get("recovered").copied().unwrap_or(0) > 0);
        assert!(totals.acked > 0 && totals.rebuilt > 0, "{totals:?}");
    }
    // The daemon still records after all of it.
    d.record_ok("after-the-storm", 300);
}

/// Kill the daemon (SIGKILL) as soon as `pred` holds during its start-up; `false` when it
/// became ready (or exited) first.
fn kill_when(d: &mut Daemon, pred: &dyn Fn(&Path) -> bool) -> bool {
    let ready_before = d.log().matches("wshardd ready").count();
    d.spawn();
    let dd = d.data_dir();
    let deadline = Instant::now() + wshard_e2e::TIMEOUT;
    loop {
        if pred(&dd) {
            d.kill9();
            return true;
        }
        if d.log().matches("wshardd ready").count() > ready_before || Instant::now() > deadline {
            d.kill9();
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    check::walk(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

#[test]
fn crash_kill_during_recovery() {
    let opts = DaemonOptions {
        max_bytes: 1 << 30,
        max_seconds: 86_400,
        ..DaemonOptions::default()
            .rotation(1_000_000)
            .fsync("interval", 5)
    };
    let mut d = Daemon::start(opts);
    let ch = data::channels();
    // Two episodes with big journals (one chunk each: nothing finalized before the kill).
    let mut acked = Vec::new();
    let mut clients = Vec::new();
    for (id, n) in [("big-a", 16_000u64), ("big-b", 6_000)] {
        let mut client = d.client(id);
        let mut w = client
            .open_episode(data::open_spec(id, &ch, Durability::Ack))
            .unwrap();
        while w.next_seq() < n {
            let k = 1000.min(n - w.next_seq());
            data::push_steps(&mut w, &ch, k).unwrap();
        }
        acked.push((id, w.flush().unwrap()));
        std::mem::forget(w); // no CLOSE: the kill finds the episode recording
        clients.push(client); // nor EOF
    }
    assert!(killed_by_sigkill(&d.kill9().unwrap()));
    drop(clients);
    let dd = d.data_dir();
    assert_eq!(files(&dd, ".wal").len(), 2);

    // Kill at moments recovery is known to be in: a manifest committed `recovering` (a chunk
    // recovered, the report so far in the manifest); a partial chunk being written; a chunk
    // published while its journal still exists; then at fixed small delays.
    let recovering = |dd: &Path| {
        ["big-a", "big-b"].iter().any(|id| {
            check::read_manifest(dd, id).is_ok_and(|m| m.status.as_deref() == Some("recovering"))
        })
    };
    let mut hits = Vec::new();
    hits.push(kill_when(&mut d, &recovering));
    hits.push(kill_when(&mut d, &|dd| !files(dd, ".partial").is_empty()));
    hits.push(kill_when(&mut d, &|dd| {
        !files(dd, "_chunk_0000.wshard").is_empty() && !files(dd, ".wal").is_empty()
    }));
    for ms in [1u64, 5, 20, 60] {
        let t = Instant::now();
        hits.push(kill_when(&mut d, &|_| {
            t.elapsed() >= Duration::from_millis(ms)
        }));
    }
    d.spawn();
    d.wait_ready();
    println!(
        "kills during recovery (recovering, partial, published+journal, 1/5/20/60 ms): {hits:?}"
    );
    assert!(
        hits.iter().any(|h| *h),
        "no kill landed before the daemon was ready"
    );
    for (id, n) in acked {
        let st = check_episode(&dd, id, &ch).unwrap();
        assert_eq!((st.status.as_str(), st.timesteps), ("recovered", n), "{id}");
        // The report adds up over the killed runs: every timestep came from the journal,
        // whichever run rebuilt it.
        let report = &st.manifest.extra["recovery"];
        assert_eq!(
            workload::rebuilt_from_journal(&st),
            n,
            "{id}: recovery report {report}"
        );
        assert_eq!(report["previous_status"], "recording", "{id}: {report}");
    }
    for suffix in [".partial", ".wal", ".tmp"] {
        assert!(
            check::episode_files_ending(&dd, suffix).is_empty(),
            "{suffix} left"
        );
    }
    assert!(check::quarantine_files(&dd).is_empty());
    check::assert_verify_ok(&dd);
    d.record_ok("after-recovery-kills", 200);
}
