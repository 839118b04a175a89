"""Events (protocol version 2, docs/PROTOCOL.md "EVENT"): sparse, timestamped records of
text, JSON or bytes beside an episode's streams, their client-side checks, and how the
answer to an ``EVENT`` is told from other ``ERROR`` frames."""

from __future__ import annotations

import enum
import json
import math
from typing import Any, Optional, Tuple, Union

from .errors import ErrorCode, SchemaError

__all__ = ["EventKind", "DEFAULT_MAX_EVENT_BYTES", "MAX_EVENT_JSON_DEPTH", "event_data", "is_event_refusal"]

#: The server's default ``limits.max_event_bytes``: the most bytes of ``EVENT.data`` (the
#: server checks its own limit: ``ServerError`` with ``LIMIT``).
DEFAULT_MAX_EVENT_BYTES = 64 * 1024

#: The deepest nesting of arrays and objects in the value of a json event: a scalar is
#: depth 0, ``[1]`` depth 1 (the server's ``MAX_EVENT_JSON_DEPTH``,
#: ``wshard_ingest_proto::event_json``). Every number must also be within the range of a
#: 64-bit float; within them the server stores the value as sent (an integer past 64 bits
#: keeps its digits).
MAX_EVENT_JSON_DEPTH = 100

#: The largest double, as the server's messages write it.
_F64_MAX_TEXT = "1.7976931348623157e308"
#: The most bytes of a refused number a message shows.
_SHOWN_NUMBER_BYTES = 40
_NUMBER_BYTES = frozenset(b"0123456789-+.eE")


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


def _limit(reason: str) -> SchemaError:
    return SchemaError(f"EVENT: field data of kind json {reason}", ErrorCode.LIMIT)


def _shown_number(token: bytes) -> str:
    text = token.decode("utf-8", "replace")
    if len(token) <= _SHOWN_NUMBER_BYTES:
        return text
    return f"{text[:_SHOWN_NUMBER_BYTES]}... ({len(token)} bytes)"


def check_json_limits(raw: bytes) -> None:
    """Check JSON text against the server's limits of json events, as it checks them
    (``wshard_ingest_proto::compact_event_json``): nesting at most
    :data:`MAX_EVENT_JSON_DEPTH` deep, every number within the range of a 64-bit float.

    Raises:
        SchemaError: code ``LIMIT``, with the server's message.
    """
    depth = deepest = 0
    crossed: Optional[int] = None
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == 0x22:  # a string: skipped to its closing quote
            i += 1
            while i < n:
                c = raw[i]
                i += 2 if c == 0x5C else 1
                if c == 0x22:
                    break
            continue
        if b == 0x2D or 0x30 <= b <= 0x39:  # a number
            j = i
            while j < n and raw[j] in _NUMBER_BYTES:
                j += 1
            try:
                value = float(raw[i:j])
            except ValueError:
                value = 0.0  # not a number token: the JSON check refuses it
            if math.isinf(value):
                raise _limit(
                    f"has the number {_shown_number(raw[i:j])} at byte {i}, out of the range of a 64-bit "
                    f"float (magnitude at most {_F64_MAX_TEXT}); an event's JSON numbers must be within it "
                    "(integers within it are stored with the digits sent)"
                )
            i = j
            continue
        if b in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_EVENT_JSON_DEPTH and crossed is None:
                crossed = i
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth = max(depth - 1, 0)
        i += 1
    if crossed is not None:
        raise _limit(
            f"nests arrays and objects {deepest} deep (past the limit at byte {crossed}); an event's JSON "
            f"may nest at most {MAX_EVENT_JSON_DEPTH} deep (MAX_EVENT_JSON_DEPTH)"
        )


def event_data(data: Any, kind: Union[EventKind, str, int, None] = None) -> Tuple[EventKind, bytes]:
    """The kind and the bytes of an event's ``data``, checked as the server checks them.

    Without ``kind``: a ``str`` is text, bytes-like data is binary, anything else is JSON
    (sent as compact JSON text). ``kind="json"`` with a ``str`` (or bytes) takes it as
    JSON text, which must be one JSON value; ``kind="text"`` takes a ``str`` or UTF-8
    bytes; ``kind="binary"`` bytes-like data only.

    Raises:
        SchemaError: code ``MALFORMED_FRAME``: text not UTF-8, JSON that is not JSON (NaN
            and infinities included) or not serializable, binary that is not bytes-like;
            code ``LIMIT``: JSON nested deeper than :data:`MAX_EVENT_JSON_DEPTH` or with a
            number out of the range of a 64-bit float (``1e400``).
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
        check_json_limits(raw)
        try:
            json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(k, f"is not valid JSON ({e})") from None
        return k, raw
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise _bad(k, f"is not JSON-serializable ({e})") from None
    raw = text.encode("utf-8")
    check_json_limits(raw)
    return k, raw


def is_event_refusal(message: str) -> bool:
    """Whether an ``ERROR`` message refuses an ``EVENT``: it starts with ``EVENT`` then
    ``:`` or a space. Every ``EVENT`` is answered by exactly one frame, in order:
    ``ACCEPTED{EVENT}`` or such an ``ERROR`` (docs/PROTOCOL.md, "EVENT"); the Rust
    ``is_event_refusal``."""
    return message.startswith("EVENT") and message[5:6] in (":", " ")
