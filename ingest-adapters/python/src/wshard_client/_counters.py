"""Producer counters (protocol version 2, docs/PROTOCOL.md "COUNTERS"): a stream's own
counters, name -> ``u64``, which the daemon shows in ``status`` and its metrics; their
client-side checks and the frame's bytes.

Payload, little-endian: ``count u16 | count x (name str16 | value u64)``; names are
``[a-z0-9_]{1,32}``, unique, at most 32 per frame (the Rust ``wshard_ingest_proto::counters``
is the reference)."""

from __future__ import annotations

import re
import struct
from typing import Any, List, Mapping, Tuple

from ._wire import FrameType
from .errors import ErrorCode, SchemaError

__all__ = ["MAX_COUNTERS_PER_FRAME", "MAX_COUNTER_NAME_BYTES", "counters_items", "encode_counters"]

#: The most counters one ``COUNTERS`` frame carries.
MAX_COUNTERS_PER_FRAME = 32
#: The longest counter name, in bytes.
MAX_COUNTER_NAME_BYTES = 32
#: The largest counter value (``u64``).
MAX_COUNTER_VALUE = (1 << 64) - 1

_NAME_CHAR = re.compile(r"[^a-z0-9_]")
_HEAD = struct.Struct("<IBH")
_LEN = struct.Struct("<H")
_VALUE = struct.Struct("<Q")


def _bad(index: int, name: str, reason: str) -> SchemaError:
    return SchemaError(f"COUNTERS: counter {index} {name!r} {reason}", ErrorCode.MALFORMED_FRAME)


def _name_problem(name: str) -> str:
    """Why ``name`` breaks the rule, or ``""``."""
    size = len(name.encode("utf-8"))
    if size == 0:
        return f"is empty (must be 1..={MAX_COUNTER_NAME_BYTES} bytes)"
    if size > MAX_COUNTER_NAME_BYTES:
        return f"is {size} bytes (must be 1..={MAX_COUNTER_NAME_BYTES} bytes)"
    bad = _NAME_CHAR.search(name)
    if bad is not None:
        at = len(name[: bad.start()].encode("utf-8"))
        return f"has {bad.group()!r} at byte {at} (allowed: a-z, 0-9, _)"
    return ""


def counters_items(counters: Mapping[str, Any]) -> List[Tuple[str, int]]:
    """The ``(name, value)`` pairs of ``counters``, checked as the daemon checks them.

    Raises:
        SchemaError: code ``MALFORMED_FRAME``: more than 32 counters, a name that is not a
            ``str`` of 1..=32 bytes of ``[a-z0-9_]``, a value that is not an ``int`` (a
            ``bool`` included) in ``0..=2**64-1``; the message names the counter.
    """
    if not isinstance(counters, Mapping):
        raise SchemaError(
            f"COUNTERS: counters must be a mapping of name -> int, not {type(counters).__name__}",
            ErrorCode.MALFORMED_FRAME,
        )
    if len(counters) > MAX_COUNTERS_PER_FRAME:
        raise SchemaError(
            f"COUNTERS: {len(counters)} counters, at most {MAX_COUNTERS_PER_FRAME} per frame "
            "(send them in several calls)",
            ErrorCode.MALFORMED_FRAME,
        )
    items: List[Tuple[str, int]] = []
    for index, (name, value) in enumerate(counters.items()):
        if not isinstance(name, str):
            raise _bad(index, repr(name), f"is a {type(name).__name__}, not a str")
        problem = _name_problem(name)
        if problem:
            raise _bad(index, name, problem)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(index, name, f"has value {value!r} of type {type(value).__name__}, expected an int")
        if not 0 <= value <= MAX_COUNTER_VALUE:
            raise _bad(index, name, f"has value {value}, expected 0..={MAX_COUNTER_VALUE} (u64)")
        items.append((name, value))
    return items


def encode_counters(items: List[Tuple[str, int]]) -> bytes:
    """``COUNTERS`` of checked ``items`` (see :func:`counters_items`)."""
    out = bytearray(_HEAD.pack(0, FrameType.COUNTERS, len(items)))
    for name, value in items:
        raw = name.encode("utf-8")
        out += _LEN.pack(len(raw))
        out += raw
        out += _VALUE.pack(value)
    struct.pack_into("<I", out, 0, len(out) - 4)
    return bytes(out)
