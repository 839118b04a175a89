"""The episode object: streams, events, per-stream arrays, and the aligned view."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._aligned import aligned_arrays, staleness_ns
from ._arrays import assemble, assemble_chunks, numpy_dtype
from .errors import InvalidEpisodeError

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ChannelSpec:
    """One channel of a stream."""

    name: str
    lane: str  # "signal" | "action"
    dtype: str  # WShard dtype code: f32, u8, bf16, ...
    shape: Tuple[int, ...]  # per step, without T

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype of the arrays (bf16: uint16 bit patterns)."""
        return numpy_dtype(self.dtype)


@dataclass(frozen=True)
class StreamInfo:
    """One stream as the episode lists it."""

    name: str
    timebase: str  # "ticks" | "timestamps_ns"
    tick_hz: Optional[float]
    channels: Tuple[ChannelSpec, ...]
    producer: str
    status: str  # recording | complete | aborted | interrupted | recovered
    steps: int
    chunks: int
    first_t_ns: Optional[int]
    last_t_ns: Optional[int]
    manifest: str  # path of the stream's manifest file


@dataclass(frozen=True)
class Event:
    """A producer event or an operator annotation."""

    t_ns: int
    seq: int  # the event's seq in the episode, or the annotation's own seq
    label: str
    kind: str  # "text" | "json" | "binary"
    data: Any  # str (text), the JSON value (json), bytes (binary)
    origin: str  # "producer" | "operator"
    source: Optional[str]  # producer: its stream name (or the owner's client name)
    author: Optional[str]  # operator: who annotated
    created_unix_ns: Optional[int]  # operator: when

    @property
    def is_annotation(self) -> bool:
        return self.origin == "operator"


class StreamData(Mapping[str, np.ndarray]):
    """One stream's data: a read-only mapping channel name -> ``[T, *shape]`` array, plus
    ``timestamps_ns`` (``[T]`` int64)."""

    def __init__(self, name: str, channels: Dict[str, np.ndarray], timestamps_ns: np.ndarray):
        self.name = name
        self.channels = channels
        self.timestamps_ns = timestamps_ns

    def __getitem__(self, channel: str) -> np.ndarray:
        return self.channels[channel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.channels)

    def __len__(self) -> int:
        return len(self.channels)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in self.channels.items())
        return f"StreamData({self.name!r}, T={len(self.timestamps_ns)}, {{{shapes}}})"


def _stream_info(d: Dict[str, Any]) -> StreamInfo:
    return StreamInfo(
        name=d["name"],
        timebase=d["timebase"] or "",
        tick_hz=d["tick_hz"],
        channels=tuple(
            ChannelSpec(c["name"], c["lane"], c["dtype"], tuple(c["shape"])) for c in d["channels"]
        ),
        producer=d["producer"] or "",
        status=d["status"] or "",
        steps=int(d["steps"]),
        chunks=int(d["chunks"]),
        first_t_ns=d["first_t_ns"],
        last_t_ns=d["last_t_ns"],
        manifest=d["manifest"],
    )


def _event(d: Dict[str, Any]) -> Event:
    data = d["data"]
    if d["kind"] == "binary":
        data = base64.b64decode(data)
    return Event(
        t_ns=int(d["t_ns"]),
        seq=int(d["seq"]),
        label=d["label"],
        kind=d["kind"],
        data=data,
        origin=d["origin"],
        source=d["source"],
        author=d["author"],
        created_unix_ns=d["created_unix_ns"],
    )


def _check_order(name: str, manifest: str, t: np.ndarray) -> None:
    """Timestamps must not go backwards inside a stream (equal ones are allowed)."""
    if len(t) > 1:
        back = np.flatnonzero(t[1:] < t[:-1])
        if len(back):
            i = int(back[0]) + 1
            raise InvalidEpisodeError(
                f"stream `{name}`: timestamp of step {i} ({int(t[i])}) is before the previous "
                f"one ({int(t[i - 1])})",
                path=manifest,
                stream=name,
                field="time/timestamps_ns",
            )


class Episode:
    """An opened episode directory (single- or multi-stream). Use :func:`open_episode`."""

    def __init__(self, native: Any) -> None:
        self._native = native
        info = json.loads(native.info_json())
        self.path: str = native.path
        self.episode_id: str = info["episode_id"]
        self.layout: str = info["layout"]  # "single" | "multi"
        # recording | complete | aborted | interrupted | recovered ("" when nothing says)
        self.status: str = info["status"] or ""
        # Multi-stream episodes only (None for a single-stream one):
        self.env_id: Optional[str] = info["env_id"]
        self.closed: Optional[bool] = info["closed"]
        self.created_unix_ns: Optional[int] = info["created_unix_ns"]
        self.metadata: Optional[Dict[str, Any]] = info["metadata"]
        # Bytes of a torn last line of the events file (never an acknowledged event).
        self.torn_event_bytes: int = info["torn_event_bytes"]
        self.streams: Dict[str, StreamInfo] = {s["name"]: _stream_info(s) for s in info["streams"]}

    def events(self) -> List[Event]:
        """Producer events and operator annotations, sorted by ``t_ns`` (at equal times
        producer events first, each kind in ``seq`` order)."""
        return [_event(d) for d in json.loads(self._native.events_json())]

    def stream(self, name: str, *, verify: bool = True) -> StreamData:
        """Stream ``name``'s channels and timestamps.

        Blocks stored raw are viewed in place through a memory map (no copy: the array's base
        keeps the map alive, ``flags.owndata`` is False, arrays are read-only); compressed
        blocks are decoded once; a stream of several chunks is joined with one copy.
        ``verify`` checks every chunk's SHA-256 against the manifest and every block's
        CRC32C before any array is returned.
        """
        layout = self._native.stream_layout(name, verify)
        channels, timestamps = assemble(layout)
        _check_order(name, self.streams[name].manifest, timestamps)
        return StreamData(name, channels, timestamps)

    def stream_chunks(self, name: str, *, verify: bool = True) -> List[StreamData]:
        """Stream ``name`` chunk by chunk, without joining: every array whose block is
        stored raw and aligned is a view of its chunk file's memory map (no copy at all,
        whatever the number of chunks). ``verify`` as for :meth:`stream`."""
        layout = self._native.stream_layout(name, verify)
        parts = assemble_chunks(layout)
        if parts:
            _check_order(name, self.streams[name].manifest, np.concatenate([p[1] for p in parts]))
        return [StreamData(name, channels, ts) for channels, ts in parts]

    def aligned(
        self,
        clock: Optional[str] = None,
        *,
        rate_hz: Optional[float] = None,
        start_ns: Optional[int] = None,
        end_ns: Optional[int] = None,
        policy: Union[str, Mapping[str, str], None] = None,
        max_staleness_ms: Optional[float] = None,
        max_staleness_ns: Optional[int] = None,
        drop_invalid: bool = False,
        channels: Optional[Sequence[str]] = None,
        values: bool = True,
    ) -> Dict[str, np.ndarray]:
        """Every channel (or those in ``channels``) on one clock.

        ``clock="camera"`` takes the rows at that stream's timestamps; ``rate_hz=30.0`` at a
        fixed rate from ``start_ns`` (default: the episode's first timestamp) to ``end_ns``
        (default: its last). ``policy`` is one policy for every channel (``"hold"``, the
        default and the only causal one, ``"nearest"``, ``"linear"``) or a mapping from
        ``"STREAM/CHANNEL"`` (or a channel name only one stream has; ``"*"`` for the rest)
        to a policy. A value whose source sample is further than ``max_staleness_ms`` (or
        ``max_staleness_ns``) from the row's time is invalid; ``drop_invalid`` drops every
        row holding an invalid value instead of masking it.

        Returns ``{"t_ns": int64[rows]}`` and for each column ``"STREAM/CHANNEL"``: the
        values ``[rows, *shape]``, ``".valid"`` bool[rows], ``".t_ns"`` int64[rows] (the
        source sample's timestamp; for ``linear`` the earlier neighbour's, with
        ``".next_t_ns"`` the later one's), ``".row"`` int64[rows] (the source step, -1 for
        none; ``linear``: also ``".next_row"``). A missing sample has ``t_ns`` = int64 min
        and zero values. ``values=False`` leaves the values out (gather them yourself
        from :meth:`stream` with ``".row"``).
        """
        default, per_channel = "hold", []
        if isinstance(policy, str):
            default = policy
        elif policy is not None:
            for key, p in policy.items():
                if key == "*":
                    default = p
                else:
                    per_channel.append((str(key), str(p)))
        table = self._native.aligned(
            clock=clock,
            rate_hz=None if rate_hz is None else float(rate_hz),
            start_ns=start_ns,
            end_ns=end_ns,
            default_policy=default,
            policies=per_channel,
            max_staleness_ns=staleness_ns(max_staleness_ms, max_staleness_ns),
            drop_invalid=bool(drop_invalid),
            channels=None if channels is None else [str(c) for c in channels],
            values=bool(values),
        )
        return aligned_arrays(table)

    def __repr__(self) -> str:
        return (
            f"Episode({self.episode_id!r}, {self.layout}, status={self.status}, "
            f"streams={list(self.streams)})"
        )


def open_episode(path: PathLike) -> Episode:
    """Open the episode directory ``path`` (``data_dir/EP``). An ``s3://`` dataset episode
    URL is first materialized through the blob cache (:func:`pull_episode`)."""
    if isinstance(path, str) and path.startswith("s3://"):
        from ._remote import pull_episode

        path = pull_episode(path)
    return Episode(_native.open_episode(os.fspath(path)))
