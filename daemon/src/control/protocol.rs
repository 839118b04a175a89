//! The control protocol: one request per connection, one JSON line in, one reply out.
//!
//! ```text
//! client -> {"version":1,"verb":"status"}\n
//! daemon <- {"ok":true,"version":1,"verb":"status","result":{...}}\n     (then closes)
//! daemon <- {"ok":false,"version":1,"verb":"close","error":{"code":"PERMISSION_DENIED",...}}\n
//! ```
//!
//! `metrics` is the one verb whose success reply is not JSON: it is the Prometheus text
//! exposition (format 0.0.4), which starts with `#`; its errors are JSON like every other.
//! The full description is in `docs/CONTROL.md`.

use serde_json::{json, Map, Value};

use super::annotate_request::AnnotateRequest;

/// The protocol version this daemon speaks (requests may omit it).
pub const PROTOCOL_VERSION: u64 = 1;
/// Longest request line accepted, newline included.
pub const MAX_REQUEST_BYTES: usize = 4096;
/// Longest `close` wait a request may ask for.
pub const MAX_CLOSE_TIMEOUT_MS: u64 = 60_000;
/// The `close` wait when the request names none.
pub const DEFAULT_CLOSE_TIMEOUT_MS: u64 = 10_000;

/// The verbs, with their arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// The daemon and every open episode, with counters and rates.
    Status,
    /// Open and finished episodes of the data directory.
    Episodes,
    /// Finalize an open episode `interrupted` (mutating: needs the admin allowlist).
    Close { episode: String, timeout_ms: u64 },
    /// The Prometheus text exposition.
    Metrics,
    /// Add an operator annotation to an episode (mutating: needs the admin allowlist).
    Annotate(AnnotateRequest),
    /// Finalize an open episode `complete` (mutating).
    Stop { episode: String, timeout_ms: u64 },
    /// Finalize an open episode `aborted`, its data kept (mutating).
    Abort { episode: String, timeout_ms: u64 },
    /// Mark an episode kept (never evicted), or with `release` remove the mark (mutating).
    Keep { episode: String, release: bool },
    /// Cut an open episode into a finished part and a next part recording on (mutating).
    Split { episode: String },
    /// Persist a window of the flight streams (mutating: needs the admin allowlist).
    Trigger(crate::flight::TriggerRequest),
    /// The upload queue: list it (`status`, read-only), or act on one episode (`retry`,
    /// `drop`: mutating).
    Upload {
        action: UploadAction,
        episode: Option<String>,
    },
}

/// What `upload` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadAction {
    /// List the queue's entries (or one episode's).
    Status,
    /// Try the episode again now (the backoff reset).
    Retry,
    /// Drop the episode from the queue (its files kept, never evicted).
    Drop,
}

impl UploadAction {
    /// `status`, `retry`, `drop`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Retry => "retry",
            Self::Drop => "drop",
        }
    }
}

impl Request {
    /// The verb's name on the wire.
    #[must_use]
    pub fn verb(&self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Episodes => "episodes",
            Self::Close { .. } => "close",
            Self::Metrics => "metrics",
            Self::Annotate(_) => "annotate",
            Self::Stop { .. } => "stop",
            Self::Abort { .. } => "abort",
            Self::Keep { .. } => "keep",
            Self::Split { .. } => "split",
            Self::Trigger(_) => "trigger",
            Self::Upload { .. } => "upload",
        }
    }

    /// Whether the verb changes something (and so needs `allows_admin`).
    #[must_use]
    pub fn is_mutating(&self) -> bool {
        matches!(
            self,
            Self::Close { .. }
                | Self::Annotate(_)
                | Self::Stop { .. }
                | Self::Abort { .. }
                | Self::Keep { .. }
                | Self::Split { .. }
                | Self::Trigger(_)
                | Self::Upload {
                    action: UploadAction::Retry | UploadAction::Drop,
                    ..
                }
        )
    }

    /// The request line a client sends (without the newline).
    #[must_use]
    pub fn to_line(&self) -> String {
        let mut v = json!({"version": PROTOCOL_VERSION, "verb": self.verb()});
        match self {
            Self::Close {
                episode,
                timeout_ms,
            }
            | Self::Stop {
                episode,
                timeout_ms,
            }
            | Self::Abort {
                episode,
                timeout_ms,
            } => {
                v["episode"] = json!(episode);
                v["timeout_ms"] = json!(timeout_ms);
            }
            Self::Keep { episode, release } => {
                v["episode"] = json!(episode);
                v["release"] = json!(release);
            }
            _ => {}
        }
        if let Self::Split { episode } = self {
            v["episode"] = json!(episode);
        }
        if let Self::Upload { action, episode } = self {
            v["action"] = json!(action.name());
            if let Some(e) = episode {
                v["episode"] = json!(e);
            }
        }
        if let (Self::Annotate(a), Some(obj)) = (self, v.as_object_mut()) {
            obj.extend(a.to_fields());
        }
        if let (Self::Trigger(t), Some(obj)) = (self, v.as_object_mut()) {
            obj.extend(super::trigger_request::request_fields(t));
        }
        v.to_string()
    }
}

/// The typed error codes of a refused or failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not JSON, not an object, a missing or ill-typed field.
    BadRequest,
    /// No newline within [`MAX_REQUEST_BYTES`].
    RequestTooLarge,
    /// The request did not arrive in time.
    RequestTimeout,
    UnsupportedVersion,
    UnknownVerb,
    /// The peer's uid/gid is not on the verb's allowlist.
    PermissionDenied,
    /// `close`, `stop`, `abort` of an episode that is not open; `annotate`, `keep` of one
    /// that does not exist.
    UnknownEpisode,
    /// `close`, `stop`, `abort`: the stop was requested but the episode was still finalizing at the deadline.
    Timeout,
    /// `annotate`: the annotations file could not be read or committed; `keep`: the mark
    /// could not be made or removed.
    Storage,
    /// Too many control connections at once.
    Busy,
    /// The daemon is stopping.
    ShuttingDown,
    /// `split` of a multi-stream episode or of one of its streams.
    NotSplittable,
    /// `split`: the current part holds no timestep yet.
    EmptyPart,
    /// `split`: the next part's id would break the episode id rule.
    PartIdTooLong,
    /// `split`: a directory with the next part's id exists already.
    PartExists,
    /// `trigger`: no stream records in flight mode.
    NoFlightStream,
    /// `trigger`: a named stream does not record in flight mode.
    UnknownStream,
    /// `trigger`: no flight stream has a timestep yet and no `at_ns` was given.
    NothingRecorded,
    /// `trigger` while `rolling.quota_policy = "refuse_windows"` is in force.
    QuotaExceeded,
    /// `close`, `stop`, `abort`, `split` of a finished part (`EP.0001`) of an episode that
    /// records on in a later part.
    PartFinished,
    /// `close`, `stop`, `abort`, `split` of a trigger window still being persisted.
    WindowPending,
    /// `upload retry|drop` of an episode that is not waiting in the upload queue (never
    /// enqueued, already published, dropped), or with the uploader off.
    NotQueued,
}

impl ErrorKind {
    /// The code on the wire.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::BadRequest => "BAD_REQUEST",
            Self::RequestTooLarge => "REQUEST_TOO_LARGE",
            Self::RequestTimeout => "REQUEST_TIMEOUT",
            Self::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Self::UnknownVerb => "UNKNOWN_VERB",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::UnknownEpisode => "UNKNOWN_EPISODE",
            Self::Timeout => "TIMEOUT",
            Self::Storage => "STORAGE",
            Self::Busy => "BUSY",
            Self::ShuttingDown => "SHUTTING_DOWN",
            Self::NotSplittable => "NOT_SPLITTABLE",
            Self::EmptyPart => "EMPTY_PART",
            Self::PartIdTooLong => "PART_ID_TOO_LONG",
            Self::PartExists => "PART_EXISTS",
            Self::NoFlightStream => "NO_FLIGHT_STREAM",
            Self::UnknownStream => "UNKNOWN_STREAM",
            Self::NothingRecorded => "NOTHING_RECORDED",
            Self::QuotaExceeded => "QUOTA_EXCEEDED",
            Self::PartFinished => "PART_FINISHED",
            Self::WindowPending => "WINDOW_PENDING",
            Self::NotQueued => "NOT_QUEUED",
        }
    }
}

/// A refusal or failure, sent as `{"ok":false,...}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlError {
    pub kind: ErrorKind,
    /// The verb the request named, when it could be read.
    pub verb: Option<String>,
    pub message: String,
    /// More fields for the `error` object (`uid`, `episode`, ...).
    pub detail: Map<String, Value>,
}

impl ControlError {
    /// An error of `kind` for `verb`.
    #[must_use]
    pub fn new(kind: ErrorKind, verb: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            kind,
            verb: verb.map(str::to_owned),
            message: message.into(),
            detail: Map::new(),
        }
    }

    /// Add a field to the `error` object.
    #[must_use]
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.detail.insert(key.to_owned(), value);
        self
    }

    /// The reply document.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut err = self.detail.clone();
        err.insert("code".into(), json!(self.kind.code()));
        err.insert("message".into(), json!(self.message));
        json!({"ok": false, "version": PROTOCOL_VERSION, "verb": self.verb, "error": err})
    }
}

/// The reply document of a successful verb.
#[must_use]
pub fn ok_reply(verb: &str, result: Value) -> Value {
    json!({"ok": true, "version": PROTOCOL_VERSION, "verb": verb, "result": result})
}

/// The fields of an `upload` request: `action` (`status` when absent) and `episode`
/// (needed by `retry` and `drop`).
fn parse_upload(obj: &Map<String, Value>) -> Result<Request, ControlError> {
    let bad = |m: String| ControlError::new(ErrorKind::BadRequest, Some("upload"), m);
    let action = match obj.get("action") {
        None | Some(Value::Null) => UploadAction::Status,
        Some(Value::String(s)) => match s.as_str() {
            "status" => UploadAction::Status,
            "retry" => UploadAction::Retry,
            "drop" => UploadAction::Drop,
            other => {
                return Err(bad(format!(
                    "`action` {other:?} is not one of status, retry, drop"
                )))
            }
        },
        Some(other) => return Err(bad(format!("`action` must be a string, is {other}"))),
    };
    let episode = match obj.get("episode") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            return Err(bad(format!(
                "`episode` must be a non-empty string, is {other}"
            )))
        }
    };
    if episode.is_none() && action != UploadAction::Status {
        return Err(bad(format!("upload {} needs `episode`", action.name())));
    }
    Ok(Request::Upload { action, episode })
}

/// Parse one request line (without its newline).
///
/// # Errors
/// [`ControlError`] `BAD_REQUEST`, `UNSUPPORTED_VERSION` or `UNKNOWN_VERB`, naming the
/// field or value at fault.
pub fn parse_request(line: &[u8]) -> Result<Request, ControlError> {
    let bad = |verb: Option<&str>, m: String| ControlError::new(ErrorKind::BadRequest, verb, m);
    let v: Value =
        serde_json::from_slice(line).map_err(|e| bad(None, format!("request is not JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(bad(None, "request must be a JSON object".into()));
    };
    let verb = match obj.get("verb") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(bad(None, "`verb` must be a string".into())),
        None => return Err(bad(None, "request has no `verb`".into())),
    };
    match obj.get("version") {
        None => {}
        Some(Value::Number(n)) if n.as_u64() == Some(PROTOCOL_VERSION) => {}
        Some(other) => {
            return Err(ControlError::new(
                ErrorKind::UnsupportedVersion,
                Some(verb),
                format!(
                    "protocol version {other} not supported; this daemon speaks {PROTOCOL_VERSION}"
                ),
            )
            .with("supported", json!([PROTOCOL_VERSION])))
        }
    }
    match verb {
        "status" => Ok(Request::Status),
        "episodes" => Ok(Request::Episodes),
        "metrics" => Ok(Request::Metrics),
        "close" => {
            let (episode, timeout_ms) = episode_and_timeout(verb, &obj)?;
            Ok(Request::Close {
                episode,
                timeout_ms,
            })
        }
        "stop" => {
            let (episode, timeout_ms) = episode_and_timeout(verb, &obj)?;
            Ok(Request::Stop {
                episode,
                timeout_ms,
            })
        }
        "abort" => {
            let (episode, timeout_ms) = episode_and_timeout(verb, &obj)?;
            Ok(Request::Abort {
                episode,
                timeout_ms,
            })
        }
        "keep" => {
            let episode = episode_of(verb, &obj)?;
            let release = match obj.get("release") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(bad(
                        Some(verb),
                        format!("`release` must be true or false, is {other}"),
                    ))
                }
            };
            Ok(Request::Keep { episode, release })
        }
        "split" => match obj.get("episode") {
            Some(Value::String(s)) if !s.is_empty() => Ok(Request::Split { episode: s.clone() }),
            Some(_) => Err(bad(
                Some(verb),
                "`episode` must be a non-empty string".into(),
            )),
            None => Err(bad(Some(verb), "split needs `episode`".into())),
        },
        "upload" => parse_upload(&obj),
        "trigger" => super::trigger_request::parse(&obj)
            .map(Request::Trigger)
            .map_err(|e| bad(Some(verb), e.to_string())),
        "annotate" => AnnotateRequest::parse(&obj)
            .map(Request::Annotate)
            .map_err(|e| bad(Some(verb), e.to_string())),
        other => Err(ControlError::new(
            ErrorKind::UnknownVerb,
            Some(other),
            format!(
                "unknown verb `{other}`: expected status, episodes, close, stop, abort, keep, \
                 split, trigger, upload, annotate or metrics"
            ),
        )),
    }
}

/// The `episode` field of a request for `verb`: a non-empty string.
fn episode_of(verb: &str, obj: &Map<String, Value>) -> Result<String, ControlError> {
    let bad = |m: String| ControlError::new(ErrorKind::BadRequest, Some(verb), m);
    match obj.get("episode") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(bad("`episode` must be a non-empty string".into())),
        None => Err(bad(format!("{verb} needs `episode`"))),
    }
}

/// The `episode` and `timeout_ms` fields of `close`, `stop` and `abort`.
fn episode_and_timeout(
    verb: &str,
    obj: &Map<String, Value>,
) -> Result<(String, u64), ControlError> {
    let episode = episode_of(verb, obj)?;
    let timeout_ms = match obj.get("timeout_ms") {
        None | Some(Value::Null) => DEFAULT_CLOSE_TIMEOUT_MS,
        Some(t) => match t.as_u64() {
            Some(ms) if ms <= MAX_CLOSE_TIMEOUT_MS => ms,
            _ => {
                return Err(ControlError::new(
                    ErrorKind::BadRequest,
                    Some(verb),
                    format!("`timeout_ms` must be an integer 0..={MAX_CLOSE_TIMEOUT_MS}, is {t}"),
                ))
            }
        },
    };
    Ok((episode, timeout_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> &'static str {
        parse_request(line.as_bytes())
            .err()
            .map_or("ok", |e| e.kind.code())
    }

    #[test]
    fn control_parse_verbs() {
        assert_eq!(parse_request(br#"{"verb":"status"}"#), Ok(Request::Status));
        assert_eq!(
            parse_request(br#"{"version":1,"verb":"episodes"}"#),
            Ok(Request::Episodes)
        );
        assert_eq!(
            parse_request(br#"{"verb":"close","episode":"ep1"}"#),
            Ok(Request::Close {
                episode: "ep1".into(),
                timeout_ms: DEFAULT_CLOSE_TIMEOUT_MS
            })
        );
        let close = Request::Close {
            episode: "a\"b".into(),
            timeout_ms: 5,
        };
        assert_eq!(parse_request(close.to_line().as_bytes()), Ok(close));
        assert_eq!(
            parse_request(Request::Metrics.to_line().as_bytes()),
            Ok(Request::Metrics)
        );
        for req in [
            Request::Stop {
                episode: "ep".into(),
                timeout_ms: 7,
            },
            Request::Abort {
                episode: "ep".into(),
                timeout_ms: 0,
            },
            Request::Keep {
                episode: "ep".into(),
                release: true,
            },
        ] {
            assert!(req.is_mutating(), "{req:?}");
            assert_eq!(parse_request(req.to_line().as_bytes()), Ok(req));
        }
        assert_eq!(
            parse_request(br#"{"verb":"keep","episode":"ep"}"#),
            Ok(Request::Keep {
                episode: "ep".into(),
                release: false
            })
        );
    }

    #[test]
    fn upload_verb_parses_and_only_retry_and_drop_mutate() {
        let status = Request::Upload {
            action: UploadAction::Status,
            episode: None,
        };
        assert!(!status.is_mutating());
        assert_eq!(parse_request(status.to_line().as_bytes()), Ok(status));
        assert_eq!(
            parse_request(br#"{"verb":"upload"}"#),
            Ok(Request::Upload {
                action: UploadAction::Status,
                episode: None
            })
        );
        for action in [UploadAction::Retry, UploadAction::Drop] {
            let req = Request::Upload {
                action,
                episode: Some("ep".into()),
            };
            assert!(req.is_mutating(), "{req:?}");
            assert_eq!(parse_request(req.to_line().as_bytes()), Ok(req));
        }
        assert_eq!(code(r#"{"verb":"upload","action":"drop"}"#), "BAD_REQUEST");
        assert_eq!(
            code(r#"{"verb":"upload","action":"nuke","episode":"e"}"#),
            "BAD_REQUEST"
        );
        assert_eq!(code(r#"{"verb":"upload","action":1}"#), "BAD_REQUEST");
        assert_eq!(code(r#"{"verb":"upload","episode":""}"#), "BAD_REQUEST");
    }

    #[test]
    fn control_parse_errors_are_typed() {
        assert_eq!(code("status"), "BAD_REQUEST");
        assert_eq!(code("[1]"), "BAD_REQUEST");
        assert_eq!(code(r#"{"verb":7}"#), "BAD_REQUEST");
        assert_eq!(code(r#"{}"#), "BAD_REQUEST");
        assert_eq!(code(r#"{"verb":"close"}"#), "BAD_REQUEST");
        assert_eq!(code(r#"{"verb":"close","episode":""}"#), "BAD_REQUEST");
        assert_eq!(
            code(r#"{"verb":"close","episode":"e","timeout_ms":-1}"#),
            "BAD_REQUEST"
        );
        assert_eq!(
            code(r#"{"verb":"status","version":2}"#),
            "UNSUPPORTED_VERSION"
        );
        assert_eq!(code(r#"{"verb":"reboot"}"#), "UNKNOWN_VERB");
        assert_eq!(code(r#"{"verb":"stop"}"#), "BAD_REQUEST");
        assert_eq!(
            code(r#"{"verb":"abort","episode":"e","timeout_ms":60001}"#),
            "BAD_REQUEST"
        );
        assert_eq!(code(r#"{"verb":"keep","episode":7}"#), "BAD_REQUEST");
        assert_eq!(
            code(r#"{"verb":"keep","episode":"e","release":"yes"}"#),
            "BAD_REQUEST"
        );
        let e = parse_request(br#"{"verb":"reboot"}"#)
            .err()
            .map(|e| e.to_json());
        assert_eq!(
            e.as_ref()
                .map(|v| (v["verb"].clone(), v["error"]["code"].clone())),
            Some((json!("reboot"), json!("UNKNOWN_VERB")))
        );
    }
}
