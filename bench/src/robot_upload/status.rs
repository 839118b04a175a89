//! The uploader's figures from `wshard status --json` (read by name from the JSON text:
//! the bench has no JSON parser) and the parts journaled in the queue's log.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{fail, Result};

/// What the benchmark reads of `status.upload`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Upload {
    pub sent_bytes: u64,
    pub parts_sent: u64,
    pub parts_done: u64,
    pub parts_total: u64,
    pub published: u64,
}

/// The number after `"key":` in `text` (the first one), 0 when absent or null.
fn field(text: &str, key: &str) -> u64 {
    let needle = format!("\"{key}\":");
    text.find(&needle)
        .map(|at| {
            text[at + needle.len()..]
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `status.upload` now; `None` when the control socket does not answer.
pub fn read(wshard: &Path, control: &Path) -> Option<Upload> {
    let out = Command::new(wshard)
        .args(["status", "--json", "--control"])
        .arg(control)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let up = &text[text.find("\"upload\":")?..];
    Some(Upload {
        sent_bytes: field(up, "sent_bytes_total"),
        parts_sent: field(up, "parts_sent_total"),
        parts_done: field(up, "parts_done"),
        parts_total: field(up, "parts_total"),
        published: field(up, "published"),
    })
}

/// `sent_bytes_total` now (0 when unknown).
pub fn sent_bytes(wshard: &Path, control: &Path) -> u64 {
    read(wshard, control).map_or(0, |u| u.sent_bytes)
}

/// Poll every 50 ms until `pred` holds.
///
/// # Errors
/// Not within `timeout`.
pub fn wait(
    wshard: &Path,
    control: &Path,
    timeout: Duration,
    pred: impl Fn(&Upload) -> bool,
) -> Result<Upload> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(u) = read(wshard, control) {
            if pred(&u) {
                return Ok(u);
            }
        }
        if Instant::now() > deadline {
            return Err(fail(format!(
                "the uploader did not get there within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `part` records in the queue's log (each JSON body holds `"t":"part"` once).
pub fn journaled_parts(log: &Path) -> u64 {
    let Ok(bytes) = std::fs::read(log) else {
        return 0;
    };
    let needle = b"\"t\":\"part\"";
    bytes.windows(needle.len()).filter(|w| w == needle).count() as u64
}
