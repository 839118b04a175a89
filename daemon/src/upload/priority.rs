//! The upload thread's CPU priority (`publish.idle_priority`): Linux's `SCHED_IDLE`, so the
//! scheduler gives it only CPU time nothing else wants. Recording, its writer and publisher
//! threads, and the producers on the same machine always come first; uploading goes on
//! whenever a core is idle, and the threads it starts (the client's resolver) inherit it.
//!
//! Set through the kept crate `thread-priority` (1.2: the newest line for rust 1.80), which
//! wraps `setpriority`/`sched_setscheduler`.

use thread_priority::{
    set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadPriority,
    ThreadSchedulePolicy,
};

/// Why the priority could not be lowered (the thread goes on at normal priority).
#[derive(Debug, thiserror::Error)]
#[error("the upload thread's scheduling policy cannot be set to SCHED_IDLE: {0:?}")]
pub struct PriorityError(thread_priority::Error);

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
}
