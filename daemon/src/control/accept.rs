//! The control socket's accept loop: a thread per connection, at most `max` at once, until
//! the daemon shuts down; then it waits for the connections being served (each is bounded
//! by its own timeouts). The metrics endpoint has its own, on tokio (`http`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the accept loop looks at the shutdown flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// One listener's rules.
pub struct AcceptLoop<'a, S> {
    /// The thread name of each connection, and the log prefix.
    pub name: &'static str,
    /// Connections served at once.
    pub max: usize,
    pub shutdown: &'a AtomicBool,
    /// Accept one connection (the listener is nonblocking).
    pub accept: &'a dyn Fn() -> std::io::Result<S>,
    /// What a connection over `max` gets before it is dropped.
    pub refuse: &'a dyn Fn(S),
}

impl<S: Send + 'static> AcceptLoop<'_, S> {
    /// Run until shutdown, serving each connection with `handle` on its own thread.
    pub fn run(&self, handle: impl Fn(S) + Clone + Send + 'static) {
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        while !self.shutdown.load(Ordering::Acquire) {
            match (self.accept)() {
                Ok(stream) => {
                    threads.retain(|t| !t.is_finished());
                    if threads.len() >= self.max {
                        (self.refuse)(stream);
                        continue;
                    }
                    let h = handle.clone();
                    match std::thread::Builder::new()
                        .name(self.name.into())
                        .spawn(move || h(stream))
                    {
                        Ok(t) => threads.push(t),
                        Err(e) => tracing::error!("{}: cannot start a thread: {e}", self.name),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(ACCEPT_POLL);
                }
                Err(e) => {
                    tracing::warn!("{}: accept failed: {e}", self.name);
                    std::thread::sleep(ACCEPT_POLL);
                }
            }
        }
        for t in threads {
            let _ = t.join();
        }
    }
}
