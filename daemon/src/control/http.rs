//! The optional loopback TCP endpoint `control.metrics_listen`: a minimal HTTP/1.1 server
//! answering `GET /metrics` with the Prometheus exposition; `404` for other paths, `405`
//! for other methods. One request per connection (`Connection: close`), bounded in size and
//! time.

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::accept::AcceptLoop;
use super::metrics::{self, Format};
use super::request_io::{drain, read_request, ReadFailure, READ_SLICE};
use super::server::{DRAIN_BYTES, DRAIN_TIME};
use super::ControlState;

/// Longest request head accepted.
pub const MAX_HEAD_BYTES: usize = 8192;
/// Scrapes served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 8;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the metrics listener could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("control.metrics_listen `{addr}`: {op}: {source}")]
pub struct MetricsBindError {
    pub addr: String,
    pub op: &'static str,
    #[source]
    pub source: std::io::Error,
}

/// Bind `addr` (already validated as a loopback `host:port`), nonblocking.
///
/// # Errors
/// [`MetricsBindError`] naming the address.
pub fn bind(addr: &str) -> Result<TcpListener, MetricsBindError> {
    let err = |op, source| MetricsBindError {
        addr: addr.to_owned(),
        op,
        source,
    };
    let l = TcpListener::bind(addr).map_err(|e| err("bind", e))?;
    l.set_nonblocking(true)
        .map_err(|e| err("set nonblocking", e))?;
    Ok(l)
}

/// The status line, content type and body answering one request head.
#[must_use]
pub fn route(head: &[u8], st: &Arc<ControlState>) -> (&'static str, &'static str, String) {
    let text = String::from_utf8_lossy(head);
    let mut parts = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let plain = "text/plain; charset=utf-8";
    let (Some(method), Some(target), Some(v)) = (method, target, version) else {
        return ("400 Bad Request", plain, "malformed request line\n".into());
    };
    if !v.starts_with("HTTP/1.") {
        return (
            "400 Bad Request",
            plain,
            format!("unsupported version {v}\n"),
        );
    }
    let path = target.split('?').next().unwrap_or(target);
    if method != "GET" && method != "HEAD" {
        return (
            "405 Method Not Allowed",
            plain,
            format!("method {method} not allowed: GET /metrics\n"),
        );
    }
    if path != "/metrics" {
        return (
            "404 Not Found",
            plain,
            format!("no {path} here: GET /metrics\n"),
        );
    }
    (
        "200 OK",
        Format::Prometheus.content_type(),
        metrics::render(st, Format::Prometheus),
    )
}

fn handle(mut stream: TcpStream, st: &Arc<ControlState>) {
    let _ = stream.set_nonblocking(false);
    if stream.set_read_timeout(Some(READ_SLICE)).is_err()
        || stream.set_write_timeout(Some(REQUEST_TIMEOUT)).is_err()
    {
        return;
    }
    let (status, ctype, body, head_only) =
        match read_request(&mut stream, b"\r\n\r\n", MAX_HEAD_BYTES, REQUEST_TIMEOUT) {
            Ok(head) => {
                let (s, c, b) = route(&head, st);
                (s, c, b, head.starts_with(b"HEAD "))
            }
            Err(ReadFailure::TooLarge { max }) => (
                "431 Request Header Fields Too Large",
                "text/plain; charset=utf-8",
                format!("request head larger than {max} bytes\n"),
                false,
            ),
            Err(ReadFailure::TimedOut { .. }) => (
                "408 Request Timeout",
                "text/plain; charset=utf-8",
                "request head not received in time\n".into(),
                false,
            ),
            Err(ReadFailure::Closed | ReadFailure::Io(_)) => return,
        };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        out.push_str(&body);
    }
    if stream
        .write_all(out.as_bytes())
        .and_then(|()| stream.flush())
        .is_ok()
    {
        let _ = stream.shutdown(Shutdown::Write);
        drain(&mut stream, DRAIN_BYTES, DRAIN_TIME);
    }
}

/// Serve scrapes on `listener` until the daemon shuts down.
pub fn serve(listener: &TcpListener, st: &Arc<ControlState>) {
    let st2 = st.clone();
    AcceptLoop {
        name: "metrics-http",
        max: MAX_CONNECTIONS,
        shutdown: &st.ctx.shutdown,
        accept: &|| listener.accept().map(|(s, _)| s),
        refuse: &drop,
    }
    .run(move |stream| handle(stream, &st2));
}
