//! The upload thread's CPU priority (`publish.idle_priority`): Linux's `SCHED_IDLE`, so the
//! scheduler gives it only CPU time nothing else wants. Recording, its writer and publisher
//! threads, and the producers on the same machine always come first; uploading goes on
//! whenever a core is idle, and the threads it starts (the client's resolver) inherit it.
//!
//! Set through the kept crate `thread-priority` (1.2: the newest line for rust 1.80), which
//! wraps `setpriority`/`sched_setscheduler`.
//!
//! And its I/O priority: the idle class of `ioprio_set(2)` (`IOPRIO_CLASS_IDLE`) for the
//! calling thread, through the crate `ioprio` (the syscall has no safe wrapper in `nix` or
//! `rustix`, and this project has no `unsafe`): the block layer serves its reads (the chunk
//! files it sends, the hashes it checks) only when no other I/O waits, so the recorder's
//! writes and fsyncs come first. Honoured by the I/O schedulers that know priorities (BFQ;
//! mq-deadline keeps the class apart); with `none` it is recorded but changes nothing.

use thread_priority::{
    set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadPriority,
    ThreadSchedulePolicy,
};

/// Why the priority could not be lowered (the thread goes on at normal priority).
#[derive(Debug, thiserror::Error)]
#[error("the upload thread's scheduling policy cannot be set to SCHED_IDLE: {0:?}")]
pub struct PriorityError(thread_priority::Error);

/// Why the I/O priority could not be lowered (the thread goes on at the normal class).
#[derive(Debug, thiserror::Error)]
#[error("the upload thread's I/O priority cannot be set to the idle class: {0}")]
pub struct IoPriorityError(String);

/// The calling thread (`IOPRIO_WHO_PROCESS` with pid 0: the calling task).
fn this_thread() -> ioprio::Target {
    ioprio::Target::Process(ioprio::Pid::from_raw(0))
}

/// Put the calling thread's I/O in the idle class.
///
/// # Errors
/// [`IoPriorityError`] with the OS's answer.
pub fn run_current_thread_io_when_idle() -> Result<(), IoPriorityError> {
    ioprio::set_priority(this_thread(), ioprio::Priority::new(ioprio::Class::Idle))
        .map_err(|e| IoPriorityError(e.to_string()))
}

/// Whether the calling thread's I/O is in the idle class.
///
/// # Errors
/// [`IoPriorityError`] with the OS's answer.
pub fn current_thread_io_is_idle() -> Result<bool, IoPriorityError> {
    ioprio::get_priority(this_thread())
        .map(|p| p.class() == Some(ioprio::Class::Idle))
        .map_err(|e| IoPriorityError(e.to_string()))
}

/// Put the calling thread under `SCHED_IDLE`.
///
/// # Errors
/// [`PriorityError`] with the OS's answer.
pub fn run_current_thread_when_idle() -> Result<(), PriorityError> {
    set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    )
    .map_err(PriorityError)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// `SCHED_IDLE` in `sched.h`.
    const SCHED_IDLE: u64 = 5;

    /// The scheduling policy of the calling thread: field 41 of `/proc/thread-self/stat`.
    fn policy_of_this_thread() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The command name (field 2) may hold spaces: count from the closing parenthesis.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(41 - 3).unwrap().parse().unwrap()
    }

    #[test]
    fn upload_priority_thread_runs_under_sched_idle() {
        let (before, after) = std::thread::spawn(|| {
            let before = policy_of_this_thread();
            super::run_current_thread_when_idle().unwrap();
            (before, policy_of_this_thread())
        })
        .join()
        .unwrap();
        assert_ne!(before, SCHED_IDLE);
        assert_eq!(after, SCHED_IDLE);
        // Only the upload thread: this one is untouched.
        assert_ne!(policy_of_this_thread(), SCHED_IDLE);
    }

    #[test]
    fn upload_priority_thread_io_is_in_the_idle_class() {
        let (before, after) = std::thread::spawn(|| {
            let before = super::current_thread_io_is_idle().unwrap();
            super::run_current_thread_io_when_idle().unwrap();
            (before, super::current_thread_io_is_idle().unwrap())
        })
        .join()
        .unwrap();
        assert!(!before);
        assert!(after);
        // Only the upload thread: this one is untouched.
        assert!(!super::current_thread_io_is_idle().unwrap());
    }
}
