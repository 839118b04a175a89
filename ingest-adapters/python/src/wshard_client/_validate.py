"""Client-side checks of an ``OPEN`` schema: the same rules as the server's
(``wshard-ingest-proto`` ``validate.rs``; docs/PROTOCOL.md "Implementation notes"), so a bad
schema is refused before anything is sent."""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Set

from ._schema import MAX_EPISODE_ID_BYTES, MAX_NDIM, Channel, Codec, Timebase
from .errors import ErrorCode, SchemaError

if TYPE_CHECKING:
    from ._schema import EpisodeSpec

#: ``TIMESTEP_BATCH`` body before the records (type 1 + count 4) plus one record header
#: (seq 8 + t_ns 8 + reward 4 + done 1): what a frame must hold besides one step payload.
ONE_STEP_OVERHEAD = 5 + 21


def validate_episode_id(episode_id: str) -> None:
    """1..=200 bytes of ``[A-Za-z0-9._-]``, not starting with ``.``: what any server may
    accept. The server's own limit (``limits.max_episode_id_bytes``, default 128) and its
    reserved ids are its to check.

    Raises:
        SchemaError: code ``BAD_EPISODE_ID``, saying which rule is broken.
    """
    n = len(episode_id.encode("utf-8"))
    reason = None
    if n == 0:
        reason = f"is empty (must be 1..={MAX_EPISODE_ID_BYTES} bytes)"
    elif n > MAX_EPISODE_ID_BYTES:
        reason = f"is {n} bytes (must be 1..={MAX_EPISODE_ID_BYTES} bytes)"
    elif episode_id.startswith("."):
        reason = "starts with '.'"
    else:
        bad = re.search(r"[^A-Za-z0-9._-]", episode_id)
        if bad:
            reason = f"contains {bad.group(0)!r} (allowed: A-Z a-z 0-9 . _ -)"
    if reason:
        raise SchemaError(f"OPEN: episode_id {episode_id[:200]!r} {reason}", ErrorCode.BAD_EPISODE_ID)


def validate_channel_name(index: int, name: str) -> None:
    """Non-empty, no NUL, ``/``-separated segments that are neither empty nor ``..``."""
    problem = None
    if not name:
        problem = "is empty"
    elif "\0" in name:
        problem = "contains NUL"
    elif any(s == "" for s in name.split("/")):
        problem = "has an empty path segment"
    elif any(s == ".." for s in name.split("/")):
        problem = "has a '..' path segment"
    if problem:
        raise SchemaError(f"channels[{index}].name {name!r} {problem}", channel=name)


def validate_metadata_json(text: str) -> None:
    """Empty (or whitespace) or a JSON object."""
    if not text.strip():
        return
    try:
        value = json.loads(text)
    except ValueError as e:
        raise SchemaError(f"OPEN: metadata_json is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise SchemaError("OPEN: metadata_json is not a JSON object")


def validate_spec(spec: "EpisodeSpec", max_frame_bytes: int, max_channels: int = 0xFFFF) -> None:
    """Check ``spec`` as the server does before creating anything (``OpenEpisode::validate``).

    Raises:
        SchemaError: ``BAD_EPISODE_ID`` for the id, ``BAD_SCHEMA`` for everything else,
            naming the field and the values.
    """
    validate_episode_id(spec.episode_id)
    hz = float(spec.tick_hz)
    if spec.timebase == Timebase.TICKS and not (math.isfinite(hz) and hz > 0):
        raise SchemaError(f"OPEN: tick_hz {hz} must be finite and > 0 for timebase ticks")
    if spec.timebase == Timebase.TIMESTAMPS_NS and not (math.isfinite(hz) and hz >= 0):
        raise SchemaError(f"OPEN: tick_hz {hz} must be finite and >= 0 (0 = unknown) for timebase timestamps_ns")
    n = len(spec.channels)
    max_channels = min(max_channels, 0xFFFF)
    if n == 0 or n > max_channels:
        raise SchemaError(f"OPEN: channel_count {n} must be 1..={max_channels}")
    max_step = max(max_frame_bytes - ONE_STEP_OVERHEAD, 0)
    names: Set[str] = set()
    for i, c in enumerate(spec.channels):
        if not isinstance(c, Channel):
            raise SchemaError(f"channels[{i}] is {type(c).__name__}, not a Channel")
        validate_channel_name(i, c.name)
        if c.name in names:
            raise SchemaError(f"OPEN: channels[{i}].name {c.name!r} is a duplicate", channel=c.name)
        names.add(c.name)
        if len(c.shape) > MAX_NDIM:
            raise SchemaError(f"OPEN: channels[{i}] {c.name!r}: ndim {len(c.shape)} exceeds {MAX_NDIM}", channel=c.name)
        for d, dim in enumerate(c.shape):
            if not 1 <= dim <= 0xFFFFFFFF:
                raise SchemaError(
                    f"OPEN: channels[{i}] {c.name!r}: dims[{d}] is {dim} (each must be 1..=2^32-1), "
                    f"shape {list(c.shape)}",
                    channel=c.name,
                )
        if c.codec == Codec.ZSTD and not 0 <= c.codec_level <= 22:
            raise SchemaError(
                f"OPEN: channels[{i}] {c.name!r}: codec_level {c.codec_level} must be 1..=22 (0 = default)",
                channel=c.name,
            )
        if c.modality is not None and len(c.modality.encode("utf-8")) > 0xFFFF:
            raise SchemaError(f"OPEN: channels[{i}] {c.name!r}: modality is too long", channel=c.name)
        if c.step_bytes > max_step:
            raise SchemaError(
                f"OPEN: channels[{i}] {c.name!r}: step payload {c.step_bytes} bytes ({c.dtype} x "
                f"{list(c.shape)}) exceeds the {max_step} bytes a frame of max_frame_bytes "
                f"{max_frame_bytes} can carry",
                channel=c.name,
            )
    total = spec.step_bytes
    if total > max_step:
        raise SchemaError(
            f"OPEN: timestep payload {total} bytes (sum over {n} channels) exceeds the {max_step} "
            f"bytes a frame of max_frame_bytes {max_frame_bytes} can carry"
        )
    validate_metadata_json(spec.metadata_json)
