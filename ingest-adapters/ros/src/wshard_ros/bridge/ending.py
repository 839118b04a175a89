"""The end of an episode (``stop``, ``abort``): every stream drained and closed, then the
episode. The bridge (:mod:`wshard_ros.bridge.core`) calls it with its counters."""

from typing import Any, Dict, Optional, Tuple

from wshard_client import Outcome, WshardError

from .counters import DROP_UNMATCHED, Counters
from .streams import EpisodeRun


def end_episode(counters: Counters, run: EpisodeRun, outcome: Outcome) -> Tuple[Dict[str, Any], Optional[WshardError]]:
    """Give up the shared streams' pending stamps (``unmatched``, on ``counters``), drain
    and close every joined stream with ``outcome`` (in parallel), then close the episode
    and its owner connection. Returns the summary (with ``counters``' topics and events)
    and the first client error (then the episode is left to the daemon)."""
    for s in run.streams.values():
        with s.lock:
            if s.assembler is not None:
                for topics in s.assembler.drain():
                    counters.dropped(
                        topics, DROP_UNMATCHED, f"stream {s.name!r}: the episode ended before every topic had a stamp"
                    )
            if s.worker is not None:
                s.worker.end(outcome)
    streams: Dict[str, Any] = {}
    error: Optional[WshardError] = None
    for s in run.streams.values():
        if s.worker is None:
            streams[s.name] = {"joined": False, "timesteps": 0, "durable": 0}
            continue
        try:
            cs = s.worker.finish(outcome)
        except WshardError as e:
            error = error or e
            streams[s.name] = {"joined": True, "error": str(e)}
            continue
        streams[s.name] = {"joined": True, "timesteps": cs.timesteps, "durable": cs.durable_up_to}
    left: Optional[int] = None
    if error is None:
        with run.owner_lock:
            try:
                left = run.episode.close(outcome)
                run.owner.close()
            except WshardError as e:
                error = e
    summary = {
        "episode": run.episode_id,
        "outcome": outcome.name.lower(),
        "streams_left": left,
        "streams": streams,
        "topics": counters.topics(),
        "events": counters.events(),
    }
    return summary, error
