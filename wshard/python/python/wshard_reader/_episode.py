"""The episode object: streams, events, per-stream arrays, and the aligned view."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Union

import numpy as np

from . import _native
from ._arrays import assemble, numpy_dtype

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
    manifest: str  # path relative to the episode directory


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
        timebase=d.get("timebase", "ticks"),
        tick_hz=d.get("tick_hz"),
        channels=tuple(
            ChannelSpec(c["name"], c["lane"], c["dtype"], tuple(c["shape"]))
            for c in d.get("channels", [])
        ),
        producer=d.get("producer", ""),
        status=d.get("status") or "complete",
        steps=int(d.get("steps", 0)),
        chunks=int(d.get("chunks", 0)),
        first_t_ns=d.get("first_t_ns"),
        last_t_ns=d.get("last_t_ns"),
        manifest=d.get("manifest", ""),
    )


class Episode:
    """An opened episode directory (single- or multi-stream). Use :func:`open_episode`."""

    def __init__(self, native: Any) -> None:
        self._native = native
        info = json.loads(native.info_json())
        self.path: str = native.path
        self.episode_id: str = info["episode_id"]
        self.layout: str = info["layout"]  # "single" | "multi"
        self.status: str = info.get("status") or "complete"
        self.streams: Dict[str, StreamInfo] = {
            s["name"]: _stream_info(s) for s in info["streams"]
        }

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
        return StreamData(name, channels, timestamps)

    def __repr__(self) -> str:
        return (
            f"Episode({self.episode_id!r}, {self.layout}, status={self.status}, "
            f"streams={list(self.streams)})"
        )


def open_episode(path: PathLike) -> Episode:
    """Open the episode directory ``path`` (``data_dir/EP``)."""
    return Episode(_native.open_episode(os.fspath(path)))
