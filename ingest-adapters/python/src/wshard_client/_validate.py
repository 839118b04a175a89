"""Client-side checks of an ``OPEN`` schema: the same rules as the server's
(``wshard-ingest-proto`` ``validate.rs``; docs/PROTOCOL.md "Implementation notes"), so a bad
schema is refused before anything is sent.

It sits between the schema's parts (:mod:`wshard_client._schema`) and
:class:`~wshard_client.EpisodeSpec` (:mod:`wshard_client._episode_spec`), whose
``validate`` calls :func:`validate_spec`: a spec is read through :class:`SpecFields`."""

from __future__ import annotations

import json
import math
import re
from typing import Optional, Protocol, Sequence, Set

from ._schema import MAX_EPISODE_ID_BYTES, MAX_NDIM, Channel, Codec, Timebase
from .errors import ErrorCode, SchemaError

#: ``TIMESTEP_BATCH`` body before the records (type 1 + count 4) plus one record header
#: (seq 8 + t_ns 8 + reward 4 + done 1): what a frame must hold besides one step payload.
ONE_STEP_OVERHEAD = 5 + 21


#: Longest stream name, in bytes (protocol version 2; the episode-id rules otherwise).
MAX_STREAM_NAME_BYTES = 64


class SpecFields(Protocol):
    """The fields of an :class:`~wshard_client.EpisodeSpec` the checks read."""

    @property
    def episode_id(self) -> str: ...

    @property
    def channels(self) -> Sequence[Channel]: ...

    @property
    def tick_hz(self) -> float: ...

    @property
    def timebase(self) -> Timebase: ...

    @property
    def step_bytes(self) -> int: ...

    @property
    def metadata_json(self) -> str: ...


def _id_rule_broken(name: str, max_bytes: int) -> Optional[str]:
    """The id rule ``name`` breaks, if any: 1..=``max_bytes`` bytes of ``[A-Za-z0-9._-]``,
    not starting with ``.`` (episode ids and stream names)."""
    n = len(name.encode("utf-8"))
    if n == 0:
        return f"is empty (must be 1..={max_bytes} bytes)"
    if n > max_bytes:
        return f"is {n} bytes (must be 1..={max_bytes} bytes)"
    if name.startswith("."):
        return "starts with '.'"
    bad = re.search(r"[^A-Za-z0-9._-]", name)
    if bad:
        return f"contains {bad.group(0)!r} (allowed: A-Z a-z 0-9 . _ -)"
    return None


def validate_episode_id(episode_id: str, frame: str = "OPEN") -> None:
    """1..=200 bytes of ``[A-Za-z0-9._-]``, not starting with ``.``: what any server may
    accept. The server's own limit (``limits.max_episode_id_bytes``, default 128) and its
    reserved ids are its to check.

    Raises:
        SchemaError: code ``BAD_EPISODE_ID``, saying which rule is broken.
    """
    reason = _id_rule_broken(episode_id, MAX_EPISODE_ID_BYTES)
    if reason:
        raise SchemaError(f"{frame}: episode_id {episode_id[:200]!r} {reason}", ErrorCode.BAD_EPISODE_ID)


def validate_stream_name(name: str) -> None:
    """1..=64 bytes of ``[A-Za-z0-9._-]``, not starting with ``.`` (version 2).

    Raises:
        SchemaError: code ``BAD_EPISODE_ID``, saying ``stream name`` and the rule broken.
    """
    reason = _id_rule_broken(name, MAX_STREAM_NAME_BYTES)
    if reason:
        raise SchemaError(f"STREAM_OPEN: stream name {name[:200]!r} {reason}", ErrorCode.BAD_EPISODE_ID)


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


def validate_metadata_json(text: str, prefix: str = "OPEN") -> None:
    """Empty (or whitespace) or a JSON object; messages start with ``prefix``."""
    if not text.strip():
        return
    try:
        value = json.loads(text)
    except ValueError as e:
        raise SchemaError(f"{prefix}: metadata_json is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise SchemaError(f"{prefix}: metadata_json is not a JSON object")


def validate_episode_open(episode_id: str, metadata_json: str) -> None:
    """Check an ``EPISODE_OPEN`` (version 2): the episode id and the metadata.

    Raises:
        SchemaError: ``BAD_EPISODE_ID`` for the id, ``BAD_SCHEMA`` for the metadata.
    """
    validate_episode_id(episode_id, "EPISODE_OPEN")
    validate_metadata_json(metadata_json, "EPISODE_OPEN")


def validate_spec(spec: SpecFields, max_frame_bytes: int, max_channels: int = 0xFFFF) -> None:
    """Check ``spec`` as the server does before creating anything (``OpenEpisode::validate``).

    Raises:
        SchemaError: ``BAD_EPISODE_ID`` for the id, ``BAD_SCHEMA`` for everything else,
            naming the field and the values.
    """
    validate_episode_id(spec.episode_id)
    validate_schema(spec, max_frame_bytes, max_channels)


def validate_stream(
    episode_id: str, spec: SpecFields, max_frame_bytes: int, max_channels: int = 0xFFFF
) -> None:
    """Check a ``STREAM_OPEN`` (version 2) as the server does (``StreamOpen::validate``):
    the episode id, the stream name ``spec.episode_id``, and the schema as ``OPEN``'s.

    Raises:
        SchemaError: ``BAD_EPISODE_ID`` for the id or the stream name, ``BAD_SCHEMA``
            naming the stream and the field.
    """
    validate_episode_id(episode_id, "STREAM_OPEN")
    validate_stream_name(spec.episode_id)
    validate_schema(spec, max_frame_bytes, max_channels, f"STREAM_OPEN: stream {spec.episode_id!r}")


def validate_schema(
    spec: SpecFields, max_frame_bytes: int, max_channels: int = 0xFFFF, prefix: str = "OPEN"
) -> None:
    """:func:`validate_spec` without the id (``OpenEpisode::validate_schema``); messages
    start with ``prefix``.

    Raises:
        SchemaError: ``BAD_SCHEMA`` naming the field and the values.
    """
    hz = float(spec.tick_hz)
    if spec.timebase == Timebase.TICKS and not (math.isfinite(hz) and hz > 0):
        raise SchemaError(f"{prefix}: tick_hz {hz} must be finite and > 0 for timebase ticks")
    if spec.timebase == Timebase.TIMESTAMPS_NS and not (math.isfinite(hz) and hz >= 0):
        raise SchemaError(f"{prefix}: tick_hz {hz} must be finite and >= 0 (0 = unknown) for timebase timestamps_ns")
    n = len(spec.channels)
    max_channels = min(max_channels, 0xFFFF)
    if n == 0 or n > max_channels:
        raise SchemaError(f"{prefix}: channel_count {n} must be 1..={max_channels}")
    max_step = max(max_frame_bytes - ONE_STEP_OVERHEAD, 0)
    names: Set[str] = set()
    for i, c in enumerate(spec.channels):
        if not isinstance(c, Channel):
            raise SchemaError(f"channels[{i}] is {type(c).__name__}, not a Channel")
        validate_channel_name(i, c.name)
        if c.name in names:
            raise SchemaError(f"{prefix}: channels[{i}].name {c.name!r} is a duplicate", channel=c.name)
        names.add(c.name)
        if len(c.shape) > MAX_NDIM:
            raise SchemaError(
                f"{prefix}: channels[{i}] {c.name!r}: ndim {len(c.shape)} exceeds {MAX_NDIM}", channel=c.name
            )
        for d, dim in enumerate(c.shape):
            if not 1 <= dim <= 0xFFFFFFFF:
                raise SchemaError(
                    f"{prefix}: channels[{i}] {c.name!r}: dims[{d}] is {dim} (each must be 1..=2^32-1), "
                    f"shape {list(c.shape)}",
                    channel=c.name,
                )
        if c.codec == Codec.ZSTD and not 0 <= c.codec_level <= 22:
            raise SchemaError(
                f"{prefix}: channels[{i}] {c.name!r}: codec_level {c.codec_level} must be 1..=22 (0 = default)",
                channel=c.name,
            )
        if c.modality is not None and len(c.modality.encode("utf-8")) > 0xFFFF:
            raise SchemaError(f"{prefix}: channels[{i}] {c.name!r}: modality is too long", channel=c.name)
        if c.step_bytes > max_step:
            raise SchemaError(
                f"{prefix}: channels[{i}] {c.name!r}: step payload {c.step_bytes} bytes ({c.dtype} x "
                f"{list(c.shape)}) exceeds the {max_step} bytes a frame of max_frame_bytes "
                f"{max_frame_bytes} can carry",
                channel=c.name,
            )
    total = spec.step_bytes
    if total > max_step:
        raise SchemaError(
            f"{prefix}: timestep payload {total} bytes (sum over {n} channels) exceeds the {max_step} "
            f"bytes a frame of max_frame_bytes {max_frame_bytes} can carry"
        )
    validate_metadata_json(spec.metadata_json, prefix)
