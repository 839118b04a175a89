//! The metrics endpoint on `control.metrics_listen` against the real daemon: both text
//! formats read by the official Python client's parsers (`prometheus_client`), content
//! negotiation, `HEAD`, slow and surplus clients, and SIGTERM while a client is connected.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use wshard_client::{Durability, Outcome};
use wshard_e2e::{data, Daemon, DaemonOptions, TIMEOUT};

/// What Prometheus 3 sends by default.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
    application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,\
    text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A daemon serving metrics on a free loopback port; the `host:port`.
fn daemon_with_endpoint() -> (Daemon, String) {
    // A free port: bound and released (another process could take it meanwhile; unlikely).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let opts = DaemonOptions {
        extra_toml: format!("[control]\nmetrics_listen = {addr:?}\n"),
        ..DaemonOptions::default()
    };
    (Daemon::start(opts), addr)
}

/// Send `request`, read until the server closes; the head and the body.
fn exchange(addr: &str, request: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {out:?}"));
    (head.to_owned(), body.to_owned())
}

fn scrape(addr: &str, accept: Option<&str>) -> (String, String) {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    exchange(
        addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{accept}\r\n"),
    )
}

/// One sample as the Python parser read it: name, labels, value; and its family's type.
#[derive(Debug)]
struct Parsed {
    family_type: String,
    value: f64,
}

/// Parse `text` with `prometheus_client`'s OpenMetrics parser (`openmetrics`) or its
/// Prometheus text parser; the samples by `name{labels}`.
fn python_parse(text: &str, openmetrics: bool) -> BTreeMap<String, Parsed> {
    const SCRIPT: &str = r#"
import json, sys
if sys.argv[1] == "openmetrics":
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
else:
    from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append([family.type, s.name, sorted(s.labels.items()), s.value])
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            if openmetrics { "openmetrics" } else { "text" },
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 not found: the metrics tests parse with python3's prometheus_client");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("No module named 'prometheus_client'"),
        "python3 lacks prometheus_client: python3 -m pip install prometheus-client"
    );
    assert!(
        o.status.success(),
        "the parser refused the exposition: {stderr}\n--- text\n{text}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for s in v.as_array().unwrap() {
        let labels: Vec<String> = s[2]
            .as_array()
            .unwrap()
            .iter()
            .map(|kv| format!("{}={}", kv[0].as_str().unwrap(), kv[1]))
            .collect();
        let key = format!("{}{{{}}}", s[1].as_str().unwrap(), labels.join(","));
        let parsed = Parsed {
            family_type: s[0].as_str().unwrap().to_owned(),
            value: s[3].as_f64().unwrap(),
        };
        assert!(out.insert(key.clone(), parsed).is_none(), "{key} twice");
    }
    out
}

fn value(samples: &BTreeMap<String, Parsed>, key: &str) -> f64 {
    samples
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in {:?}", samples.keys()))
        .value
}

/// Values that move between two scrapes.
fn moves(key: &str) -> bool {
    [
        "wshardd_uptime_seconds",
        "wshardd_disk_free_bytes",
        "_per_second{",
        "last_fsync_seconds{",
    ]
    .iter()
    .any(|m| key.starts_with(m) || key.contains(m))
}

#[test]
fn control_http_both_formats_parse_with_the_official_parsers() {
    let (d, addr) = daemon_with_endpoint();
    d.record_ok("m-done", 30);
    let ch = data::channels();
    let mut client = d.client("e2e/http");
    let mut w = client
        .open_episode(data::open_spec("m-1.x", &ch, Durability::Ack))
        .unwrap();
    data::push_steps(&mut w, &ch, 100).unwrap();
    w.flush().unwrap();

    let (head, om_text) = scrape(&addr, Some(PROMETHEUS_ACCEPT));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains(&format!("Content-Type: {OPENMETRICS_TYPE}")),
        "{head}"
    );
    assert!(om_text.ends_with("# EOF\n"), "{om_text}");
    let om = python_parse(&om_text, true);

    let (head, text) = scrape(&addr, None);
    assert!(
        head.contains(&format!("Content-Type: {PROMETHEUS_TYPE}")),
        "{head}"
    );
    assert!(!text.contains("# EOF"), "{text}");
    let prom = python_parse(&text, false);

    // The same series in both formats, the same values but for those that move.
    assert_eq!(
        om.keys().collect::<Vec<_>>(),
        prom.keys().collect::<Vec<_>>()
    );
    for (key, a) in &om {
        let b = &prom[key];
        assert_eq!(a.family_type, b.family_type, "{key}");
        if !moves(key) {
            assert_eq!(a.value, b.value, "{key}");
        }
    }
    let ep = r#"episode="m-1.x",transport="socket""#;
    assert_eq!(value(&om, "wshardd_episodes_open{}"), 1.0);
    assert_eq!(value(&om, "wshardd_episodes_opened_total{}"), 2.0);
    assert_eq!(value(&om, "wshardd_episodes_finalized_total{}"), 1.0);
    assert_eq!(
        value(
            &om,
            &format!("wshardd_episode_received_timesteps_total{{{ep}}}")
        ),
        100.0
    );
    assert_eq!(
        value(
            &om,
            &format!("wshardd_episode_durable_timesteps_total{{{ep}}}")
        ),
        100.0
    );
    assert_eq!(om["wshardd_episodes_opened_total{}"].family_type, "counter");
    assert_eq!(om["wshardd_episodes_open{}"].family_type, "gauge");
    assert_eq!(
        value(
            &om,
            &format!(
                "wshardd_build_info{{version={:?}}}",
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );
    for deadline in ["handshake", "no_episode", "write"] {
        value(
            &om,
            &format!("wshardd_connections_cut_total{{deadline=\"{deadline}\"}}"),
        );
    }
    // HEAD: the head of the same reply, no body.
    let (head, body) = exchange(&addr, "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(body.is_empty(), "{body}");
    w.close(Outcome::Completed).unwrap();
}

#[test]
fn control_http_other_paths_and_methods() {
    let (_d, addr) = daemon_with_endpoint();
    let (head, body) = exchange(&addr, "GET /metricsx HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 404 "), "{head}");
    assert!(body.contains("GET /metrics"), "{body}");
    let (head, _) = exchange(&addr, "GET /metrics?x=1 HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    for method in ["POST", "PUT", "DELETE"] {
        let (head, _) = exchange(
            &addr,
            &format!("{method} /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
        );
        assert!(head.starts_with("HTTP/1.1 405 "), "{method}: {head}");
        assert!(head.contains("Allow: GET, HEAD"), "{method}: {head}");
    }
    let (head, _) = exchange(&addr, "GARBAGE\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
}

/// Read until the server closes; whether it did within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut sink = Vec::new();
    match s.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

#[test]
fn control_http_slow_clients_do_not_block_a_scrape() {
    let (_d, addr) = daemon_with_endpoint();
    // Clients that connect and say nothing, or half a request line.
    let mut slow: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /metr").unwrap();
    let t = Instant::now();
    let (head, _) = scrape(&addr, None);
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "the scrape took {:?}",
        t.elapsed()
    );
    // Each is closed once its 5 s to send a request head are over.
    slow.push(half);
    for s in &mut slow {
        assert!(
            closed_within(s, TIMEOUT),
            "a silent client kept its connection"
        );
    }
}

#[test]
fn control_http_surplus_connections_are_closed() {
    let (_d, addr) = daemon_with_endpoint();
    // Eight silent connections hold every slot (8 at once); the ninth is closed unanswered.
    let _held: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let mut ninth = TcpStream::connect(&addr).unwrap();
    let _ = ninth.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
    ninth
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut out = Vec::new();
    match ninth.read_to_end(&mut out) {
        Ok(_) => assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out)),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
    }
}

#[test]
fn control_http_sigterm_with_a_client_connected() {
    let (mut d, addr) = daemon_with_endpoint();
    let _silent = TcpStream::connect(&addr).unwrap();
    let (head, _) = scrape(&addr, None);
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    d.terminate();
    let t = Instant::now();
    let status = d.wait_exit(TIMEOUT);
    assert_eq!(status.code(), Some(0), "log:\n{}", d.log());
    // The silent client is cut after a second's grace (not after its 5 s head timeout).
    println!("SIGTERM: exited 0 after {:?}", t.elapsed());
    assert!(
        TcpStream::connect(&addr).is_err(),
        "the endpoint still accepts after exit"
    );
}

#[test]
fn control_http_port_taken_is_a_startup_error_naming_the_option() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let opts = DaemonOptions {
        extra_toml: format!("[control]\nmetrics_listen = {addr:?}\n"),
        ..DaemonOptions::default()
    };
    let mut d = Daemon::new(opts);
    d.spawn();
    let status = d.wait_exit(TIMEOUT);
    assert!(!status.success(), "log:\n{}", d.log());
    let log = d.log();
    assert!(
        log.contains(&format!("control.metrics_listen `{addr}`: bind:")),
        "{log}"
    );
    assert!(
        !d.socket().exists(),
        "ingest socket left behind: {}",
        d.socket().display()
    );
}
