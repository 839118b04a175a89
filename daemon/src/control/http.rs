//! The optional loopback TCP endpoint `control.metrics_listen`: HTTP/1.1 by `hyper` on a
//! small tokio runtime of its own (one thread, `metrics-http`), started only when the option
//! is set; the data path never runs on it. `GET /metrics` (or `HEAD`) answers the
//! exposition in the format the scraper's `Accept` asks for ([`negotiate`]); other paths
//! get `404`, other methods `405`. One request per connection, its head bounded in size
//! ([`MAX_HEAD_BYTES`], else `431`) and time ([`REQUEST_TIMEOUT`]), the whole exchange in
//! time ([`CONNECTION_DEADLINE`]), at most [`MAX_CONNECTIONS`] at once.

use std::convert::Infallible;
use std::net::TcpListener as StdListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

use super::metrics::{self, Format};
use super::state::ControlState;

/// Longest request head accepted (request line and headers).
pub const MAX_HEAD_BYTES: usize = 8192;
/// Scrapes served at once; more are closed at once.
pub const MAX_CONNECTIONS: usize = 8;
/// How long a client has to send its request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may last in all, the reply included.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// How often the accept loop looks at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(50);
/// At shutdown, how long the scrapes in progress may take to finish before they are cut.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// The pause after a failed `accept` (out of file descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// The name of the endpoint's thread.
pub const THREAD_NAME: &str = "metrics-http";
const PLAIN: &str = "text/plain; charset=utf-8";

/// Why the metrics listener could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("control.metrics_listen `{addr}`: {op}: {source}")]
pub struct MetricsBindError {
    pub addr: String,
    pub op: &'static str,
    #[source]
    pub source: std::io::Error,
}

/// The bound listener and the runtime that will serve it.
#[derive(Debug)]
pub struct Endpoint {
    listener: TcpListener,
    runtime: Runtime,
}

/// Bind `addr` (already validated as a loopback `host:port`) and build the runtime serving
/// it, so that every failure shows at startup.
///
/// # Errors
/// [`MetricsBindError`] naming the address.
pub fn bind(addr: &str) -> Result<Endpoint, MetricsBindError> {
    let err = |op, source| MetricsBindError {
        addr: addr.to_owned(),
        op,
        source,
    };
    let l = StdListener::bind(addr).map_err(|e| err("bind", e))?;
    l.set_nonblocking(true)
        .map_err(|e| err("set nonblocking", e))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .thread_name(THREAD_NAME)
        .build()
        .map_err(|e| err("start the HTTP runtime", e))?;
    let listener = {
        let _in_runtime = runtime.enter();
        TcpListener::from_std(l).map_err(|e| err("register with the HTTP runtime", e))?
    };
    Ok(Endpoint { listener, runtime })
}

/// Serve scrapes on the current thread until the daemon shuts down; then give the scrapes
/// in progress [`SHUTDOWN_GRACE`] to finish and cut the rest (a scrape changes nothing).
pub fn serve(endpoint: Endpoint, st: &Arc<ControlState>) {
    let Endpoint { listener, runtime } = endpoint;
    runtime.block_on(accept_loop(listener, st.clone()));
}

async fn accept_loop(listener: TcpListener, st: Arc<ControlState>) {
    let mut scrapes = JoinSet::new();
    while !st.ctx.shutdown.load(Ordering::Acquire) {
        // `accept` is cancel-safe: a timeout loses no connection.
        let Ok(accepted) = tokio::time::timeout(SHUTDOWN_POLL, listener.accept()).await else {
            continue;
        };
        while scrapes.try_join_next().is_some() {}
        match accepted {
            Ok((stream, _)) if scrapes.len() < MAX_CONNECTIONS => {
                scrapes.spawn(scrape(stream, st.clone()));
            }
            Ok((stream, peer)) => {
                tracing::debug!(%peer, "{THREAD_NAME}: {MAX_CONNECTIONS} scrapes in progress, connection closed");
                drop(stream);
            }
            Err(e) => {
                tracing::warn!("{THREAD_NAME}: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    let finished = async { while scrapes.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, finished)
        .await
        .is_err()
    {
        tracing::debug!("{THREAD_NAME}: scrapes still in progress at shutdown were cut");
    }
    scrapes.shutdown().await;
}

/// Serve one connection: one request, one reply, close.
async fn scrape(stream: TcpStream, st: Arc<ControlState>) {
    let service = service_fn(move |req: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(respond(&req, &st)))
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_TIMEOUT)
        .max_header_size(MAX_HEAD_BYTES)
        .keep_alive(false)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(CONNECTION_DEADLINE, conn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!("{THREAD_NAME}: connection ended: {e}"),
        Err(_) => tracing::debug!(
            "{THREAD_NAME}: connection cut after {} s",
            CONNECTION_DEADLINE.as_secs()
        ),
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// The reply to one request.
fn respond<B>(req: &Request<B>, st: &Arc<ControlState>) -> Response<Full<Bytes>> {
    let method = req.method();
    if method != Method::GET && method != Method::HEAD {
        let mut r = reply(
            StatusCode::METHOD_NOT_ALLOWED,
            PLAIN,
            format!("method {method} not allowed: GET /metrics\n"),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let path = req.uri().path();
    if path != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            PLAIN,
            format!("no {path} here: GET /metrics\n"),
        );
    }
    let accept = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let format = negotiate(&accept);
    reply(
        StatusCode::OK,
        format.content_type(),
        metrics::render(st, format),
    )
}

/// The format an `Accept` header asks for: OpenMetrics when it names
/// `application/openmetrics-text` with a quality at least that of every range admitting
/// the Prometheus text format (`text/plain`, `text/*`, `*/*`); that format otherwise,
/// also when `Accept` is absent or names neither (as the Go client does).
#[must_use]
pub fn negotiate(accept: &str) -> Format {
    let (mut openmetrics, mut text) = (0.0_f32, 0.0_f32);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, v)| v.trim().parse().unwrap_or(0.0));
        if media.eq_ignore_ascii_case("application/openmetrics-text") {
            openmetrics = openmetrics.max(q);
        } else if ["text/plain", "text/*", "*/*"]
            .iter()
            .any(|m| media.eq_ignore_ascii_case(m))
        {
            text = text.max(q);
        }
    }
    if openmetrics > 0.0 && openmetrics >= text {
        Format::OpenMetrics
    } else {
        Format::Prometheus
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_http_negotiate_format() {
        // Prometheus 2 and 3 by default: OpenMetrics first.
        let prom2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                     version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let prom3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
                     application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;\
                     escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(negotiate(prom2), Format::OpenMetrics);
        assert_eq!(negotiate(prom3), Format::OpenMetrics);
        assert_eq!(
            negotiate("Application/OpenMetrics-Text ; Q = 0.9"),
            Format::OpenMetrics
        );
        // A scraper configured for the text format first.
        let text_first = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5";
        assert_eq!(negotiate(text_first), Format::Prometheus);
        // curl, no Accept, refusals, nonsense.
        assert_eq!(negotiate("*/*"), Format::Prometheus);
        assert_eq!(negotiate(""), Format::Prometheus);
        assert_eq!(
            negotiate("application/openmetrics-text;q=0"),
            Format::Prometheus
        );
        assert_eq!(
            negotiate("application/openmetrics-text;q=x"),
            Format::Prometheus
        );
        assert_eq!(negotiate("application/json"), Format::Prometheus);
    }
}
