//! Sending an `EVENT` on a connection (protocol version 2) and waiting for its answer.

use wshard_ingest_proto::{Event, Frame, FrameType, ProtoError, FRAME_HEADER_BYTES, LEN_BYTES};

use crate::client::Client;
use crate::error::{ClientError, Result};

/// Bytes of an `EVENT` body besides `label` and `data`: type, `t_ns`, `kind`, the two
/// length prefixes.
const EVENT_FIXED_BYTES: usize = FRAME_HEADER_BYTES - LEN_BYTES + 8 + 1 + 2 + 4;

impl Client {
    /// Check `event`, send it and wait for its answer. The outer `Err` is a failure of the
    /// connection or of what it records (an `ERROR` about something sent before the
    /// event, the end of the connection, the timeout); the inner one the server's refusal
    /// of this event alone (`ClientError::Server` with `LIMIT`, `MALFORMED_FRAME`,
    /// `NOT_OPEN`, `STORAGE`), after which the connection and its recording carry on.
    pub(crate) fn send_event(&mut self, event: Event) -> Result<Result<u64>> {
        self.require_version(FrameType::Event)?;
        self.check_usable()?;
        check_event(&event, self.server_info().max_frame_bytes)?;
        let mine = {
            let mut st = self.shared().lock();
            st.events.sent += 1;
            st.events.sent - 1
        };
        if let Err(e) = self.send(&Frame::Event(event)) {
            // Not sent (encoding) or the connection broke: no answer will come.
            let mut st = self.shared().lock();
            st.events.sent = st.events.sent.min(mine);
            return Err(e);
        }
        let timeout = self.options().timeout;
        let answer = self.shared().wait("ACCEPTED{EVENT}", timeout, |st| {
            st.events
                .answers
                .iter()
                .find(|(i, _)| *i == mine)
                .map(|(_, a)| a.clone())
        })?;
        // Answers of earlier events whose senders gave up waiting are dropped with it.
        self.shared()
            .lock()
            .events
            .answers
            .retain(|(i, _)| *i > mine);
        Ok(answer.map_err(|(code, message)| ClientError::Server { code, message }))
    }
}

/// What the client can check of an event: its data is what its kind says, and the frame
/// fits the server's `max_frame_bytes` (a larger frame would close the connection). The
/// size limit `limits.max_event_bytes` is the server's to check.
fn check_event(event: &Event, max_frame_bytes: u32) -> Result<()> {
    event.validate(usize::MAX).map_err(ClientError::Event)?;
    let body = EVENT_FIXED_BYTES
        .saturating_add(event.label.len())
        .saturating_add(event.data.len());
    let max = usize::try_from(max_frame_bytes).unwrap_or(usize::MAX);
    if body > max {
        let overhead = body - event.data.len();
        return Err(ClientError::Event(ProtoError::TooLong {
            frame: FrameType::Event.name(),
            field: "data".to_owned(),
            len: event.data.len(),
            max: max.saturating_sub(overhead),
        }));
    }
    Ok(())
}
