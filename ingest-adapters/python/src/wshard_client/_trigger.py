"""Flight triggers (protocol version 2, docs/PROTOCOL.md "TRIGGER"): the window
``[t - pre, t + post]`` of the daemon's flight streams persisted as an episode, named at
once by ``TRIGGERED``; its typed refusal, and how the answer to a ``TRIGGER`` is told from
other ``ERROR`` frames (the Rust client's ``trigger.rs``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from .errors import ErrorCode, ServerError

__all__ = ["TriggerWindow", "TriggerRefused", "is_trigger_refusal", "trigger_fields", "MAX_TRIGGER_STREAMS"]

#: Nanoseconds in a second.
NS_PER_S = 1_000_000_000
#: The most stream names one ``TRIGGER`` carries (``MAX_TRIGGER_STREAMS`` in Rust).
MAX_TRIGGER_STREAMS = 256
_I64_MAX = (1 << 63) - 1
_I64_MIN = -(1 << 63)


@dataclass(frozen=True)
class TriggerWindow:
    """The answer to a trigger (``TRIGGERED``)."""

    #: The window episode (a new one, or the pending one the trigger extended).
    episode: str
    #: The trigger extended a window still pending.
    merged: bool
    #: The window's start and end over its streams, on the steps' clock.
    window_start_ns: int
    window_end_ns: int


class TriggerRefused(ServerError):
    """The daemon refused a trigger (its message starts ``TRIGGER:`` and names the field
    or the stream): ``LIMIT`` for a negative or too long a window, ``NOT_OPEN`` when no
    stream records in flight mode, ``UNKNOWN_EPISODE`` for a named stream that does not,
    ``DISK_LOW`` while the quota refuses new windows, ``STORAGE``. The connection and what it records carry on."""


def is_trigger_refusal(message: str) -> bool:
    """Whether an ``ERROR`` message refuses a ``TRIGGER``: it starts with ``TRIGGER`` then
    ``:`` or a space. Every ``TRIGGER`` is answered by exactly one frame, in order:
    ``TRIGGERED`` or such an ``ERROR``; the Rust ``is_trigger_refusal``."""
    return message.startswith("TRIGGER") and message[7:8] in (":", " ")


def _ns(field: str, seconds: float) -> int:
    """Seconds to ns, clamped to i64 (the daemon then names the field of a window out of
    its range)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds):
        raise TriggerRefused(
            ErrorCode.MALFORMED_FRAME, f"TRIGGER: field {field} must be a number of seconds, is {seconds!r}"
        )
    if math.isinf(seconds):
        return _I64_MAX if seconds > 0 else _I64_MIN
    return max(_I64_MIN, min(_I64_MAX, int(round(seconds * NS_PER_S))))


def trigger_fields(
    pre_s: float, post_s: float, streams: Optional[Sequence[str]]
) -> Tuple[int, int, Tuple[str, ...]]:
    """``pre_ns``, ``post_ns`` and the stream names of a trigger, checked as far as the
    client can (the window's bounds are the daemon's to check).

    Raises:
        TriggerRefused: code ``MALFORMED_FRAME`` for a window that is not a number, a
            stream name that is not a non-empty ``str``, more than
            :data:`MAX_TRIGGER_STREAMS` streams (nothing sent).
    """
    names: Tuple[str, ...] = ()
    if streams is not None:
        if isinstance(streams, str):
            streams = [streams]
        names = tuple(streams)
        for i, s in enumerate(names):
            if not isinstance(s, str) or not s:
                raise TriggerRefused(
                    ErrorCode.MALFORMED_FRAME, f"TRIGGER: field streams[{i}] must be a non-empty str, is {s!r}"
                )
        if len(names) > MAX_TRIGGER_STREAMS:
            raise TriggerRefused(
                ErrorCode.MALFORMED_FRAME,
                f"TRIGGER: field count has value {len(names)}, expected 0..={MAX_TRIGGER_STREAMS}",
            )
    return _ns("pre_s", pre_s), _ns("post_s", post_s), names
