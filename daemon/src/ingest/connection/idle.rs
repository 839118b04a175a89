//! A connection past its handshake without an open episode: idle, or just after the daemon
//! stopped the client's episode on its own. Only `OPEN` (or, version 2, `STREAM_OPEN`)
//! starts a recording; the owner's requests and `EVENT` do not change the state.

use wshard_ingest_proto::{AcceptedWhat, ErrorCode, Frame};

use super::event::on_event;
use super::link::Link;
use super::open::open;
use super::owner::{episode_close, episode_open};
use super::recording::{Recording, Stopped};
use super::request::Request;
use super::stream_open::join;
use super::trigger::on_trigger;

/// Where a request without an open episode leads.
pub(super) enum Next {
    /// Stay in this state.
    Stay,
    /// Idle (the stopped episode's CLOSE was answered).
    Idle,
    /// The episode the `OPEN` (or `STREAM_OPEN`) opened.
    Record(Box<Recording>),
}

/// Handle `request` while idle (`stopped` is `None`) or after a stopped episode.
pub(super) fn on_request(stopped: Option<Stopped>, request: Request, link: &mut Link) -> Next {
    match (stopped, request) {
        (_, Request::Open(o)) => open(o, link).map_or(Next::Stay, |r| Next::Record(Box::new(r))),
        (_, Request::StreamOpen(o)) => {
            join(*o, link).map_or(Next::Stay, |r| Next::Record(Box::new(r)))
        }
        (_, Request::EpisodeOpen(o)) => {
            episode_open(o, link);
            Next::Stay
        }
        (_, Request::EpisodeClose(outcome)) => {
            episode_close(outcome, link);
            Next::Stay
        }
        (_, Request::Event(e)) => {
            on_event(None, e, link);
            Next::Stay
        }
        (_, Request::Trigger(t)) => {
            on_trigger(t, link);
            Next::Stay
        }
        (_, Request::ShmAttach { .. }) => {
            // Every fd received so far belongs to this SHM_ATTACH: closed unused (here, at
            // the end of the arm).
            let _unused = link.fds.take_all();
            link.error(
                ErrorCode::NotOpen,
                "SHM_ATTACH without an open episode: send OPEN first",
            );
            Next::Stay
        }
        // Sent before the client learned its episode was stopped: dropped, as its timesteps.
        (Some(_), Request::Timestep(_) | Request::Batch(_) | Request::Counters(_)) => Next::Stay,
        (None, Request::Counters(_)) => {
            link.error(
                ErrorCode::NotOpen,
                "COUNTERS without an open stream or episode: send STREAM_OPEN or OPEN first \
                 (the counters are a stream's)",
            );
            Next::Stay
        }
        (Some(s), Request::Flush) => {
            // FLUSH is always answered: the stopped episode's final watermark.
            link.responder.send(&Frame::Durable {
                up_to_seq: s.durable,
            });
            Next::Stay
        }
        (Some(s), Request::Close(_)) => {
            // CLOSE is answered as always: DURABLE, then ACCEPTED{CLOSE}.
            link.responder.send(&Frame::Durable {
                up_to_seq: s.durable,
            });
            link.responder.send(&Frame::Accepted {
                what: AcceptedWhat::Close,
                up_to_seq: s.timesteps,
            });
            Next::Idle
        }
        (
            None,
            r @ (Request::Timestep(_) | Request::Batch(_) | Request::Flush | Request::Close(_)),
        ) => {
            link.error(
                ErrorCode::NotOpen,
                format!(
                    "{} without an open episode: send OPEN first",
                    r.frame_type().name()
                ),
            );
            Next::Stay
        }
    }
}
