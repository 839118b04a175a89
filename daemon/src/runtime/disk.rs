//! The disk monitor: free space of the data directory's filesystem against the two
//! watermarks of `[disk]`.
//!
//! - Below `low_watermark_free_bytes`: `registry.disk_low` is set, so OPEN is refused with
//!   `DISK_LOW`; one warning per crossing.
//! - Back at or above the low watermark plus [`hysteresis`] (1/16 of it): the flag is
//!   cleared and recording resumes; one info line. The margin keeps a filesystem hovering
//!   around the watermark from flapping between refusing and accepting.
//! - Below `high_watermark_free_bytes`: every open episode is asked to stop
//!   (`StopReason::Disk`); its connection finalizes it `interrupted` while there is still
//!   room to write its last chunk and manifest. One error line per crossing; episodes
//!   that appear while it lasts (an OPEN that raced the flag) are asked too.
//!
//! Free space is what an unprivileged process may still use (`f_bavail * f_frsize`), not
//! what root may. The thread measures every `check_interval_ms`; [`DiskMonitor::check_now`]
//! measures at once (one `statvfs`), e.g. before an OPEN is decided.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use wshardd_config::DiskConfig;

use crate::registry::{Registry, StopReason};

/// Where free space comes from (a real `statvfs`, or a test's numbers).
pub(crate) trait FreeSpace: Send + Sync {
    /// Bytes an unprivileged process may still write.
    ///
    /// # Errors
    /// The OS error of the measurement.
    fn free_bytes(&self) -> std::io::Result<u64>;
}

/// `statvfs` of a path: `f_bavail * f_frsize`.
#[derive(Clone, Debug)]
pub(crate) struct Statvfs(pub PathBuf);

impl FreeSpace for Statvfs {
    fn free_bytes(&self) -> std::io::Result<u64> {
        free_bytes_of(&self.0)
    }
}

/// Free bytes for unprivileged users on the filesystem holding `path`.
///
/// # Errors
/// The OS error of `statvfs`.
pub(crate) fn free_bytes_of(path: &Path) -> std::io::Result<u64> {
    let s = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
    #[allow(clippy::useless_conversion)] // the field widths differ between targets
    let (avail, frag) = (u64::from(s.blocks_available()), s.fragment_size());
    Ok(avail.saturating_mul(frag))
}

/// How far above the low watermark free space must climb before OPEN is accepted again.
#[must_use]
pub(crate) fn hysteresis(low: u64) -> u64 {
    low / 16
}

/// What the monitor remembers between checks.
#[derive(Debug, Default)]
struct State {
    /// Below the high watermark at the last check.
    below_high: bool,
    /// The last measurement failed (logged once until one succeeds).
    failing: bool,
}

/// The disk monitor. One per daemon, in the [`super::ServerContext`].
pub(crate) struct DiskMonitor {
    source: Box<dyn FreeSpace>,
    /// SIGHUP replaces it; the next check uses the new watermarks.
    config: RwLock<DiskConfig>,
    registry: Arc<Registry>,
    state: Mutex<State>,
}

impl std::fmt::Debug for DiskMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskMonitor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl DiskMonitor {
    /// A monitor of `source` that flags and stops through `registry`.
    #[must_use]
    pub(crate) fn new(
        source: Box<dyn FreeSpace>,
        config: DiskConfig,
        registry: Arc<Registry>,
    ) -> Self {
        Self {
            source,
            config: RwLock::new(config),
            registry,
            state: Mutex::new(State::default()),
        }
    }

    /// Use new watermarks from the next check on (SIGHUP).
    pub(crate) fn set_config(&self, config: DiskConfig) {
        if let Ok(mut c) = self.config.write() {
            *c = config;
        }
    }

    /// The watermarks in force.
    #[must_use]
    pub(crate) fn config(&self) -> DiskConfig {
        self.config.read().map(|c| c.clone()).unwrap_or_default()
    }

    /// Measure now and apply the watermarks. Returns the free bytes, `None` when the
    /// measurement failed (the flags then stay as they were).
    pub(crate) fn check_now(&self) -> Option<u64> {
        let Ok(mut st) = self.state.lock() else {
            return None;
        };
        let cfg = self.config();
        let free = match self.source.free_bytes() {
            Ok(f) => {
                if st.failing {
                    tracing::info!("disk monitor: free space can be measured again");
                    st.failing = false;
                }
                f
            }
            Err(e) => {
                if !st.failing {
                    tracing::error!("disk monitor: cannot measure free space of the data directory: {e}; watermarks are not enforced until it can");
                    st.failing = true;
                }
                return None;
            }
        };
        self.apply(&mut st, &cfg, free);
        Some(free)
    }

    fn apply(&self, st: &mut State, cfg: &DiskConfig, free: u64) {
        let reg = &self.registry;
        reg.disk_free_bytes.store(free, Ordering::Relaxed);
        let low = cfg.low_watermark_free_bytes;
        let high = cfg.high_watermark_free_bytes;
        let was_low = reg.disk_low.load(Ordering::Acquire);
        if free < low || free < high {
            if !was_low {
                reg.disk_low.store(true, Ordering::Release);
                tracing::warn!(
                    free,
                    low,
                    "disk: {free} bytes free, below disk.low_watermark_free_bytes ({low}); new episodes are refused until {} bytes are free",
                    low.saturating_add(hysteresis(low))
                );
            }
        } else if was_low && free >= low.saturating_add(hysteresis(low)) {
            reg.disk_low.store(false, Ordering::Release);
            tracing::info!(
                free,
                low,
                "disk: {free} bytes free again, at or above disk.low_watermark_free_bytes ({low}) plus {}; recording resumes",
                hysteresis(low)
            );
        }
        if free < high {
            let reason = StopReason::Disk {
                free_bytes: free,
                watermark: high,
            };
            let asked = reg.stop_all(&reason);
            if !st.below_high {
                tracing::error!(
                    free,
                    high,
                    episodes = asked,
                    "disk: {free} bytes free, below disk.high_watermark_free_bytes ({high}); finalizing every open episode as interrupted"
                );
                st.below_high = true;
            }
        } else if st.below_high {
            st.below_high = false;
            tracing::warn!(
                free,
                high,
                "disk: {free} bytes free, above disk.high_watermark_free_bytes ({high}) again"
            );
        }
    }

    /// Check every `check_interval_ms` until `shutdown` is set.
    pub(crate) fn run(&self, shutdown: &AtomicBool) {
        const SLICE: Duration = Duration::from_millis(50);
        while !shutdown.load(Ordering::Acquire) {
            let _ = self.check_now();
            let until = Instant::now() + self.config().check_interval();
            while !shutdown.load(Ordering::Acquire) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(SLICE));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Durability;
    use crate::registry::NewEpisode;
    use std::sync::atomic::AtomicU64;

    const MIB: u64 = 1 << 20;

    /// Free space set by the test; `u64::MAX` means "the measurement fails".
    #[derive(Clone, Default)]
    struct Fake(Arc<AtomicU64>);

    impl Fake {
        fn set(&self, v: u64) {
            self.0.store(v, Ordering::Relaxed);
        }
    }

    impl FreeSpace for Fake {
        fn free_bytes(&self) -> std::io::Result<u64> {
            match self.0.load(Ordering::Relaxed) {
                u64::MAX => Err(std::io::Error::other("injected")),
                v => Ok(v),
            }
        }
    }

    fn cfg() -> DiskConfig {
        DiskConfig {
            low_watermark_free_bytes: 64 * MIB,
            high_watermark_free_bytes: 16 * MIB,
            check_interval_ms: 10,
            preallocate: true,
        }
    }

    fn monitor() -> (DiskMonitor, Fake, Arc<Registry>) {
        let fake = Fake::default();
        fake.set(1 << 40);
        let reg = Arc::new(Registry::default());
        let m = DiskMonitor::new(Box::new(fake.clone()), cfg(), reg.clone());
        (m, fake, reg)
    }

    fn open(reg: &Arc<Registry>, id: &str) -> crate::registry::Registration {
        reg.register(NewEpisode {
            episode_id: id.into(),
            multi: None,
            peer: "conn-1".into(),
            client_name: "test".into(),
            cred: None,
            durability: Durability::Ack,
            stats: Arc::default(),
            parts: None,
            stream_parts: None,
        })
    }

    fn low(reg: &Registry) -> bool {
        reg.disk_low.load(Ordering::Acquire)
    }

    #[test]
    fn disk_plenty_of_space_sets_nothing() {
        let (m, _, reg) = monitor();
        let e = open(&reg, "a");
        assert_eq!(m.check_now(), Some(1 << 40));
        assert!(!low(&reg));
        assert_eq!(reg.disk_free_bytes.load(Ordering::Relaxed), 1 << 40);
        assert_eq!(e.live.take_stop(), None);
    }

    #[test]
    fn disk_low_watermark_refuses_and_resumes_with_hysteresis() {
        let (m, fake, reg) = monitor();
        let e = open(&reg, "a");
        fake.set(64 * MIB - 1);
        m.check_now();
        assert!(low(&reg), "below low");
        assert_eq!(e.live.take_stop(), None, "low does not stop open episodes");
        // Back at the watermark, but not past the hysteresis margin: still refusing.
        fake.set(64 * MIB);
        m.check_now();
        assert!(low(&reg));
        fake.set(64 * MIB + hysteresis(64 * MIB) - 1);
        m.check_now();
        assert!(low(&reg));
        fake.set(64 * MIB + hysteresis(64 * MIB));
        m.check_now();
        assert!(!low(&reg), "recording resumes");
        // Dipping into the margin does not refuse again; only crossing below low does.
        fake.set(64 * MIB);
        m.check_now();
        assert!(!low(&reg));
    }

    #[test]
    fn disk_high_watermark_stops_every_open_episode_with_the_reason() {
        let (m, fake, reg) = monitor();
        let a = open(&reg, "a");
        let b = open(&reg, "b");
        fake.set(16 * MIB - 5);
        m.check_now();
        assert!(low(&reg), "below high is below low too");
        let want = StopReason::Disk {
            free_bytes: 16 * MIB - 5,
            watermark: 16 * MIB,
        };
        assert_eq!(a.live.take_stop(), Some(want.clone()));
        assert_eq!(b.live.take_stop(), Some(want));
        assert!(a.live.take_stop().is_none());
    }

    #[test]
    fn disk_episodes_opened_while_below_high_are_stopped_too() {
        let (m, fake, reg) = monitor();
        fake.set(MIB);
        m.check_now();
        let late = open(&reg, "late");
        m.check_now();
        assert!(matches!(
            late.live.take_stop(),
            Some(StopReason::Disk { free_bytes, .. }) if free_bytes == MIB
        ));
        // Above high but below low: nobody else is stopped, OPEN is still refused.
        fake.set(32 * MIB);
        m.check_now();
        let c = open(&reg, "c");
        m.check_now();
        assert_eq!(c.live.take_stop(), None);
        assert!(low(&reg));
    }

    #[test]
    fn disk_failed_measurement_keeps_the_flags() {
        let (m, fake, reg) = monitor();
        fake.set(MIB);
        m.check_now();
        assert!(low(&reg));
        fake.set(u64::MAX);
        assert_eq!(m.check_now(), None);
        assert!(low(&reg));
        assert_eq!(reg.disk_free_bytes.load(Ordering::Relaxed), MIB);
    }

    #[test]
    fn disk_reloaded_watermarks_apply_at_the_next_check() {
        let (m, fake, reg) = monitor();
        fake.set(40 * MIB);
        m.check_now();
        assert!(low(&reg));
        m.set_config(DiskConfig {
            low_watermark_free_bytes: 8 * MIB,
            high_watermark_free_bytes: 4 * MIB,
            ..cfg()
        });
        m.check_now();
        assert!(!low(&reg), "40 MiB is plenty under the new watermarks");
    }

    #[test]
    fn disk_run_stops_on_shutdown_and_measures() {
        let (m, fake, reg) = monitor();
        fake.set(MIB);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| m.run(&stop));
            let t = Instant::now();
            while !low(&reg) {
                assert!(t.elapsed() < Duration::from_secs(5), "monitor never ran");
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.store(true, Ordering::Release);
        });
    }

    #[test]
    fn disk_statvfs_measures_a_real_directory() {
        let dir = tempfile::tempdir().map_err(|e| e.to_string());
        let Ok(dir) = dir else { return };
        assert!(Statvfs(dir.path().to_path_buf()).free_bytes().is_ok());
        assert!(free_bytes_of(&dir.path().join("missing")).is_err());
    }
}
