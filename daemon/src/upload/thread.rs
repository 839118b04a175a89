//! The upload thread ([`spawn`]): the [`Uploader`]'s passes, one after the other, under
//! `SCHED_IDLE` (`publish.idle_priority`), with the wait between them: after a pass that
//! left nothing to do, until a finisher hands over a finalized episode (`handoff`) or
//! `scan_interval` passed (the safety rescan), else the retry backoff (`Backoff`: transient
//! store errors double from `retry_min` to `retry_max`, configuration-class ones wait the
//! longest). A queue-log error stops the thread (state `error`) until a restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use wshard_publish::PublishError;

use super::error::{error_kind, CycleError};
use super::pace::{wait_until_or, Backoff};
use super::settings::UploaderSettings;
use super::uploader::Uploader;
use super::view::{UploadShared, UploaderState};
use wshard_storage::fsio::Fs;

/// The running upload thread.
#[derive(Debug)]
pub struct UploadHandle {
    thread: JoinHandle<()>,
}

impl UploadHandle {
    /// True once the thread has ended (shutdown, or a queue-log error stopped it).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Wait up to `timeout` for the thread to end (after shutdown was set); a thread still
    /// in a store call is left behind: the queue is crash-safe, as after a SIGKILL.
    pub fn finish(self, timeout: Duration) {
        let until = Instant::now() + timeout;
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
    }
}

/// Start the upload thread.
///
/// # Errors
/// The OS error when the thread cannot be started.
pub fn spawn(
    fs: Arc<dyn Fs>,
    settings: UploaderSettings,
    shared: Arc<UploadShared>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<UploadHandle> {
    let thread = std::thread::Builder::new()
        .name("wshardd-upload".into())
        .spawn(move || run(fs, settings, &shared, stop))?;
    Ok(UploadHandle { thread })
}

fn run(
    fs: Arc<dyn Fs>,
    settings: UploaderSettings,
    shared: &Arc<UploadShared>,
    stop: Arc<AtomicBool>,
) {
    if settings.idle_priority {
        if let Err(e) = super::priority::run_current_thread_when_idle() {
            tracing::warn!("{e}; uploading at normal priority");
        }
        if let Err(e) = super::priority::run_current_thread_io_when_idle() {
            tracing::warn!("{e}; uploading at the normal I/O class");
        }
    }
    let mut backoff = Backoff::new(settings.retry_min, settings.retry_max);
    let scan_interval = settings.scan_interval;
    let mut up = match Uploader::open(fs, settings, shared.clone(), stop.clone()) {
        Ok(u) => u,
        Err(e) => {
            tracing::error!("upload queue cannot be opened; the uploader is stopped: {e}");
            shared.set_error(UploaderState::Error, e.kind(), e.to_string());
            return;
        }
    };
    while !stop.load(Ordering::Acquire) {
        let (wait, idle) = match up.cycle() {
            Ok(()) => {
                backoff.reset();
                shared.update(|v| {
                    v.state = UploaderState::Idle;
                    v.next_retry = None;
                    v.current = None;
                    // Recovered: an earlier error is no longer the uploader's state.
                    v.last_error = None;
                });
                (scan_interval, true)
            }
            Err(CycleError::Stopped) => break,
            Err(CycleError::Queue(e)) => {
                tracing::error!(
                    "upload queue failed; the uploader is stopped until a restart: {e}"
                );
                shared.set_error(UploaderState::Error, e.kind(), e.to_string());
                return;
            }
            Err(CycleError::Store(e)) => {
                let (state, delay) = if e.is_transient()
                    || matches!(
                        e,
                        PublishError::BlobMismatch { .. } | PublishError::UploadGone { .. }
                    ) {
                    (UploaderState::Offline, backoff.next_delay())
                } else {
                    (UploaderState::Error, backoff.long_delay())
                };
                tracing::warn!(retry_in_ms = delay.as_millis() as u64, "upload: {e}");
                shared.set_error(state, error_kind(&e), e.to_string());
                shared.update(|v| v.next_retry = Some(SystemTime::now() + delay));
                (delay, false)
            }
        };
        // Idle: a finalized episode handed over starts the next pass at once. Backing off:
        // the store is not asked again before the delay (new episodes wait in the hand-off).
        // An operator's request (`wshard upload retry|drop`) ends any wait, and starts the
        // backoff over.
        let handoff = &shared.handoff;
        let requests = &shared.requests;
        let woke = || (idle && handoff.is_pending()) || requests.is_pending();
        if !wait_until_or(Instant::now() + wait, &stop, woke) {
            break;
        }
        if requests.is_pending() {
            backoff.reset();
        }
    }
}
