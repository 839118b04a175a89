//! The flight recorder over a [`SimFs`]: the session settings, the sim episode's ring and
//! a registry, shared by the flight crash, fault and window-copy tests.
#![allow(dead_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wshard_recorder::flight::{FlightRegistry, WindowPolicy};
use wshard_recorder::session::flight_ring::{FlightRing, RingBounds, RingIdentity};
use wshard_recorder::session::{FsyncPolicy, Rotation, SessionSettings};
use wshard_storage::fsio::sim::SimFs;
use wshard_storage::fsio::Fs;

use crate::sim_harness::{data_dir, layout};

/// How long a wait may take before the test fails.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Every write fsynced, chunks of `chunk` timesteps (never cut by bytes or age).
pub fn settings(chunk: u64) -> SessionSettings {
    SessionSettings {
        fsync: FsyncPolicy::Always,
        rotation: Rotation {
            max_timesteps: chunk,
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(3600),
        },
        queue_frames: 16,
        compression_workers: 1,
        ..SessionSettings::default()
    }
}

/// `retries` retries, 1 ms apart, and no post-window deadline within a test.
pub fn policy(retries: u32) -> WindowPolicy {
    WindowPolicy {
        persist_retries: retries,
        persist_retry_backoff: Duration::from_millis(1),
        post_grace: Duration::from_secs(3600),
    }
}

/// Poll `done` until it holds; fail the test past [`WAIT_LIMIT`].
pub fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < WAIT_LIMIT, "stuck waiting for {what}");
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// A ring of `max_bytes` bytes (no time bound).
pub fn bytes_bound(max_bytes: u64) -> RingBounds {
    RingBounds {
        max_ns: u64::MAX,
        max_bytes,
    }
}

/// The ring of the sim's episode, bounded by `max_bytes`.
pub fn ring(max_bytes: u64) -> Arc<FlightRing> {
    let l = layout();
    Arc::new(FlightRing::new(
        RingIdentity {
            episode_id: l.episode_id.clone(),
            stream: None,
            dir: l.dir.clone(),
            files_id: l.episode_id.clone(),
            latched: false,
        },
        bytes_bound(max_bytes),
    ))
}

/// A registry over `sim` with rings of `max_bytes` and the retry policy `policy`.
pub fn registry(
    sim: &SimFs,
    settings: SessionSettings,
    max_bytes: u64,
    policy: WindowPolicy,
) -> Arc<FlightRegistry> {
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());
    Arc::new(
        FlightRegistry::new(
            fs,
            &data_dir(),
            settings,
            bytes_bound(max_bytes),
            Arc::new(AtomicBool::new(false)),
        )
        .with_policy(policy),
    )
}
