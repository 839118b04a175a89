//! `wshard bridge start|stop|abort|annotate|status`: episode control of a running ROS
//! bridge (`wshard-ros-bridge`) through its control socket ([`client`]),
//! printed as text (readable lines and tables) or (`--json`) as the bridge's raw reply.
//!
//! Exit codes: 0 done; 1 the bridge refused or failed (`NOT_RECORDING`,
//! `ALREADY_RECORDING`, `FAILED`, `DAEMON`, or any other code it sends); 2 usage or I/O (a
//! bad argument, no bridge, a timeout, a reply that is not the bridge's JSON,
//! `BAD_REQUEST`).
//!
//! [`client`] talks to the socket (one request and reply); this module uses it, never the
//! reverse.

pub mod client;

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::exit_status::exit;
use crate::output::table::{Align, Table};
use client::{bridge_socket_path, request};

/// The default `--timeout-ms`: `stop` drains the bridge's queues and closes its streams.
pub const DEFAULT_BRIDGE_TIMEOUT_MS: u64 = 30_000;
/// Decimals of the durable lag (milliseconds) in text: a tenth of a millisecond.
const LAG_DECIMALS: usize = 1;

/// Options every `wshard bridge` verb takes.
#[derive(Clone, Debug, clap::Args)]
pub struct BridgeOptions {
    /// The bridge's control socket (else $WSHARD_BRIDGE_SOCKET, else
    /// /run/wshardd/ros-bridge.sock).
    #[arg(long, value_name = "PATH", global = true)]
    pub bridge_socket: Option<PathBuf>,
    /// How long to wait for the bridge at each step (send, reply), in milliseconds.
    #[arg(long, value_name = "MS", global = true, default_value_t = DEFAULT_BRIDGE_TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// Print the bridge's reply (one JSON line) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Control a running ROS bridge: start, stop, abort, annotate, status
///
/// Control a running ROS bridge (wshard-ros-bridge) through its control socket: start,
/// stop, abort, annotate an episode, or show its status and counters.
///
/// Exit codes: 0 done, 1 the bridge refused or failed (NOT_RECORDING, ALREADY_RECORDING,
/// FAILED, DAEMON), 2 usage, no bridge, timeout or a bad reply.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    #[command(subcommand)]
    pub verb: BridgeVerb,
    #[command(flatten)]
    pub options: BridgeOptions,
}

/// The verbs of `wshard bridge`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum BridgeVerb {
    /// Start recording an episode: one stream per topic (or group) of the mapping.
    Start {
        /// The episode id.
        episode_id: String,
        /// The environment id stored with the episode.
        #[arg(long, value_name = "E", default_value = "")]
        env_id: String,
        /// The episode's metadata: a JSON object.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// Stop recording: drain the queues, close every stream and the episode (completed).
    Stop,
    /// Abort the episode: close it `aborted` (data kept, the manifest says aborted).
    Abort,
    /// Add an annotation to the episode being recorded.
    Annotate {
        /// What it is, e.g. `grasp`.
        #[arg(long, value_name = "L")]
        label: String,
        /// A text payload.
        #[arg(long, value_name = "S", conflicts_with = "json_data")]
        text: Option<String>,
        /// A JSON payload (one JSON value).
        #[arg(long, value_name = "J")]
        json_data: Option<String>,
        /// When, in ns on the episode's clock (default: now, as the bridge sees it).
        #[arg(long, value_name = "NS", allow_hyphen_values = true)]
        at_ns: Option<i64>,
    },
    /// The bridge's state, episode and per-topic counters.
    Status,
}

impl BridgeVerb {
    /// The verb's name (the request's `cmd`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Start { .. } => "start",
            Self::Stop => "stop",
            Self::Abort => "abort",
            Self::Annotate { .. } => "annotate",
            Self::Status => "status",
        }
    }

    /// The request line's JSON (design: one object per connection, `cmd` first).
    ///
    /// # Errors
    /// [`BadRequestOption`] for a `--metadata` that is not a JSON object or a
    /// `--json-data` that is not JSON.
    pub fn request(&self) -> Result<Value, BadRequestOption> {
        let mut m = Map::new();
        m.insert("cmd".into(), json!(self.name()));
        match self {
            Self::Start {
                episode_id,
                env_id,
                metadata,
            } => {
                m.insert("episode_id".into(), json!(episode_id));
                m.insert("env_id".into(), json!(env_id));
                if let Some(text) = metadata {
                    let v: Value =
                        serde_json::from_str(text).map_err(BadRequestOption::MetadataNotJson)?;
                    if !v.is_object() {
                        return Err(BadRequestOption::MetadataNotObject(v));
                    }
                    m.insert("metadata".into(), v);
                }
            }
            Self::Annotate {
                label,
                text,
                json_data,
                at_ns,
            } => {
                m.insert("label".into(), json!(label));
                if let Some(t) = text {
                    m.insert("text".into(), json!(t));
                }
                if let Some(j) = json_data {
                    let v: Value =
                        serde_json::from_str(j).map_err(BadRequestOption::JsonDataNotJson)?;
                    m.insert("json".into(), v);
                }
                if let Some(t) = at_ns {
                    m.insert("at_ns".into(), json!(t));
                }
            }
            Self::Stop | Self::Abort | Self::Status => {}
        }
        Ok(Value::Object(m))
    }
}

/// A `wshard bridge` option whose value cannot go into the request.
#[derive(Debug, thiserror::Error)]
pub enum BadRequestOption {
    #[error("--metadata is not JSON: {0}")]
    MetadataNotJson(serde_json::Error),
    #[error("--metadata must be a JSON object, got {0}")]
    MetadataNotObject(Value),
    #[error("--json-data is not JSON: {0}")]
    JsonDataNotJson(serde_json::Error),
}

/// The error codes that are a usage error on our side (exit 2); every other error code
/// the bridge sends is a refusal or failure (exit 1).
const USAGE_CODES: [&str; 1] = ["BAD_REQUEST"];

/// Run `wshard bridge VERB`; returns the exit code.
pub fn run(
    verb: &BridgeVerb,
    opts: &BridgeOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let name = verb.name();
    let req = match verb.request() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "wshard bridge {name}: {e}");
            return exit::ERROR;
        }
    };
    let path = bridge_socket_path(opts.bridge_socket.as_deref());
    let timeout = Duration::from_millis(opts.timeout_ms.max(1));
    let doc = match request(&path, &req, timeout) {
        Ok(doc) => doc,
        Err(e) => {
            let _ = writeln!(err, "wshard bridge {name}: {e}");
            return exit::ERROR;
        }
    };
    if doc["ok"] != Value::Bool(true) {
        if opts.json {
            let _ = writeln!(out, "{doc}");
        }
        let code = doc["error"]["code"].as_str().unwrap_or("(no code)");
        let message = doc["error"]["message"].as_str().unwrap_or("(no message)");
        let _ = writeln!(err, "wshard bridge {name}: {code}: {message}");
        return if USAGE_CODES.contains(&code) {
            exit::ERROR
        } else {
            exit::REFUSED
        };
    }
    let written = if opts.json {
        writeln!(out, "{doc}")
    } else {
        render(verb, &doc["result"], out)
    };
    match written {
        Ok(()) => exit::OK,
        Err(e) => {
            let _ = writeln!(err, "wshard bridge {name}: writing the output: {e}");
            exit::ERROR
        }
    }
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A successful reply as text: readable lines and tables, never nested JSON (`--json`
/// prints the reply as the bridge sent it).
fn render(verb: &BridgeVerb, result: &Value, out: &mut dyn Write) -> io::Result<()> {
    match verb {
        BridgeVerb::Status => render_status(result, out),
        // The bridge answers `start` with its status.
        BridgeVerb::Start { episode_id, .. } => {
            writeln!(out, "bridge: recording episode `{episode_id}`\n")?;
            render_status(result, out)
        }
        BridgeVerb::Stop => {
            writeln!(out, "bridge: episode stopped (completed)\n")?;
            render_ending(result, out)
        }
        BridgeVerb::Abort => {
            writeln!(out, "bridge: episode aborted (data kept)\n")?;
            render_ending(result, out)
        }
        BridgeVerb::Annotate { label, .. } => {
            writeln!(out, "bridge: annotation `{label}` added")?;
            render_fields("", result, out)
        }
    }
}

/// An object's fields, one `  key: value` line each; a nested object's fields as
/// `key.field`, a list's items separated by spaces.
fn render_fields(prefix: &str, result: &Value, out: &mut dyn Write) -> io::Result<()> {
    if let Some(m) = result.as_object() {
        for (k, v) in m {
            let key = format!("{prefix}{k}");
            match v {
                Value::Object(_) => render_fields(&format!("{key}."), v, out)?,
                Value::Array(items) => {
                    let text: Vec<String> = items.iter().map(cell).collect();
                    writeln!(out, "  {key}: {}", text.join(" "))?;
                }
                _ => writeln!(out, "  {key}: {}", cell(v))?,
            }
        }
    }
    Ok(())
}

/// The durable lag in milliseconds to a tenth (`-` when the bridge no longer measures it:
/// the stream's connection is gone).
fn lag_cell(v: &Value) -> String {
    v.as_f64()
        .map_or_else(|| "-".into(), |ms| format!("{ms:.LAG_DECIMALS$}"))
}

/// `stop` / `abort`: the episode, its outcome, then a table per stream, topic and event
/// topic.
fn render_ending(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "episode       {}\noutcome       {}\nstreams left  {}",
        cell(&r["episode"]),
        cell(&r["outcome"]),
        cell(&r["streams_left"])
    )?;
    if let Some(streams) = r["streams"].as_object().filter(|m| !m.is_empty()) {
        let mut t = Table::new(&[
            ("stream", Align::Left),
            ("joined", Align::Left),
            ("timesteps", Align::Right),
            ("durable", Align::Right),
            ("error", Align::Left),
        ]);
        for (name, s) in streams {
            t.push(vec![
                name.clone(),
                cell(&s["joined"]),
                cell(&s["timesteps"]),
                cell(&s["durable"]),
                if s["error"].is_null() {
                    String::new()
                } else {
                    cell(&s["error"])
                },
            ]);
        }
        writeln!(out, "\nstreams:")?;
        t.write(out)?;
    }
    render_topics(r, out)?;
    render_events(r, out)
}

/// `status`: the state, then a table per topic and per stream.
fn render_status(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "state    {}\nepisode  {}",
        cell(&r["state"]),
        cell(&r["episode"])
    )?;
    if !r["last_error"].is_null() {
        writeln!(out, "error    {}", cell(&r["last_error"]))?;
    }
    render_topics(r, out)?;
    if let Some(streams) = r["streams"].as_object().filter(|m| !m.is_empty()) {
        let mut t = Table::new(&[
            ("stream", Align::Left),
            ("joined", Align::Left),
            ("pushed", Align::Right),
            ("durable", Align::Right),
            ("lag ms", Align::Right),
            ("topics", Align::Left),
        ]);
        for (name, s) in streams {
            let topics = s["topics"]
                .as_array()
                .map(|a| a.iter().map(cell).collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            t.push(vec![
                name.clone(),
                cell(&s["joined"]),
                cell(&s["pushed"]),
                cell(&s["durable"]),
                lag_cell(&s["durable_lag_ms"]),
                topics,
            ]);
        }
        writeln!(out, "\nstreams:")?;
        t.write(out)?;
    }
    render_events(r, out)
}

/// The per-topic counters (`topics`), as a table.
fn render_topics(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let Some(topics) = r["topics"].as_object().filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    let mut t = Table::new(&[
        ("topic", Align::Left),
        ("received", Align::Right),
        ("recorded", Align::Right),
        ("dropped", Align::Right),
        ("late", Align::Right),
        ("idle", Align::Right),
        ("last error", Align::Left),
    ]);
    for (name, c) in topics {
        t.push(vec![
            name.clone(),
            cell(&c["received"]),
            cell(&c["recorded"]),
            cell(&c["dropped"]),
            cell(&c["late"]),
            cell(&c["idle"]),
            if c["last_error"].is_null() {
                String::new()
            } else {
                cell(&c["last_error"])
            },
        ]);
    }
    writeln!(out, "\ntopics:")?;
    t.write(out)
}

/// The event topics' counters (`events`), as a table.
fn render_events(r: &Value, out: &mut dyn Write) -> io::Result<()> {
    let Some(events) = r["events"].as_object().filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    let mut t = Table::new(&[
        ("event topic", Align::Left),
        ("received", Align::Right),
        ("recorded", Align::Right),
        ("dropped", Align::Right),
    ]);
    for (name, e) in events {
        t.push(vec![
            name.clone(),
            cell(&e["received"]),
            cell(&e["recorded"]),
            cell(&e["dropped"]),
        ]);
    }
    writeln!(out, "\nevents:")?;
    t.write(out)
}
