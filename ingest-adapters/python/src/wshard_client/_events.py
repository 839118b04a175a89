"""Events (protocol version 2, docs/PROTOCOL.md "EVENT"): sparse, timestamped records of
text, JSON or bytes beside an episode's streams, their client-side checks, and how the
answer to an ``EVENT`` is told from other ``ERROR`` frames."""

from __future__ import annotations

import enum
import json
from typing import Any, Optional, Tuple, Union

from .errors import ErrorCode, SchemaError

__all__ = ["EventKind", "DEFAULT_MAX_EVENT_BYTES", "event_data", "is_event_refusal"]

#: The server's default ``limits.max_event_bytes``: the most bytes of ``EVENT.data`` (the
#: server checks its own limit: ``ServerError`` with ``LIMIT``).
DEFAULT_MAX_EVENT_BYTES = 64 * 1024


class EventKind(enum.IntEnum):
    """``EVENT.kind``: how ``data`` is to be read; the value is the wire code."""

    TEXT = 0
    JSON = 1
    BINARY = 2

    @classmethod
    def parse(cls, value: Union["EventKind", str, int]) -> "EventKind":
        """From an :class:`EventKind`, a wire code or ``"text"`` / ``"json"`` / ``"binary"``."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"unknown event kind {value!r} (text, json or binary)") from None
        return cls(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _bad(kind: EventKind, reason: str) -> SchemaError:
    return SchemaError(f"EVENT: field data of kind {kind.name.lower()} {reason}", ErrorCode.MALFORMED_FRAME)


def event_data(data: Any, kind: Union[EventKind, str, int, None] = None) -> Tuple[EventKind, bytes]:
    """The kind and the bytes of an event's ``data``, checked as the server checks them.

    Without ``kind``: a ``str`` is text, bytes-like data is binary, anything else is JSON
    (sent as compact JSON text). ``kind="json"`` with a ``str`` (or bytes) takes it as
    JSON text, which must be one JSON value; ``kind="text"`` takes a ``str`` or UTF-8
    bytes; ``kind="binary"`` bytes-like data only.

    Raises:
        SchemaError: code ``MALFORMED_FRAME``: text not UTF-8, JSON that is not JSON (NaN
            and infinities included) or not serializable, binary that is not bytes-like.
        ValueError: an unknown kind.
    """
    k: Optional[EventKind] = None if kind is None else EventKind.parse(kind)
    is_bytes = isinstance(data, (bytes, bytearray, memoryview))
    if k is None:
        k = EventKind.TEXT if isinstance(data, str) else EventKind.BINARY if is_bytes else EventKind.JSON
    if k == EventKind.BINARY:
        if not is_bytes:
            raise _bad(k, f"must be bytes-like, not {type(data).__name__}")
        return k, bytes(data)
    if k == EventKind.TEXT:
        if isinstance(data, str):
            return k, data.encode("utf-8")
        if not is_bytes:
            raise _bad(k, f"must be str or UTF-8 bytes, not {type(data).__name__}")
        raw = bytes(data)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _bad(k, f"is not valid UTF-8 ({e})") from None
        return k, raw
    if isinstance(data, str) or is_bytes:
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        try:
            json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(k, f"is not valid JSON ({e})") from None
        return k, raw
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _bad(k, f"is not JSON-serializable ({e})") from None
    return k, text.encode("utf-8")


def is_event_refusal(message: str) -> bool:
    """Whether an ``ERROR`` message refuses an ``EVENT``: it starts with ``EVENT`` then
    ``:`` or a space. Every ``EVENT`` is answered by exactly one frame, in order:
    ``ACCEPTED{EVENT}`` or such an ``ERROR`` (docs/PROTOCOL.md, "EVENT"); the Rust
    ``is_event_refusal``."""
    return message.startswith("EVENT") and message[5:6] in (":", " ")
