"""Fixtures for the reader tests: episode directories built in a temporary directory.

Chunk files and manifests are written by the `wshard` crate's writer (the code the recorder
writes with), through the test hook ``wshard_reader._native._write_chunked_stream``; the
episode index, events and annotations files are written here as plain JSON, exactly as
docs/FORMAT-NOTES.md describes them, so that the reader is checked against the documented
format rather than against its own models.
"""

from __future__ import annotations

import base64
import json
import mmap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from wshard_reader import _native

REPO = Path(__file__).resolve().parents[3]
GOLDEN_DATADIR = REPO / "golden" / "datadir-v0.1" / "data"

CODES = {
    np.dtype("<f8"): "f64",
    np.dtype("<f4"): "f32",
    np.dtype("<f2"): "f16",
    np.dtype("<i8"): "i64",
    np.dtype("<i4"): "i32",
    np.dtype("<i2"): "i16",
    np.dtype("i1"): "i8",
    np.dtype("<u8"): "u64",
    np.dtype("<u4"): "u32",
    np.dtype("<u2"): "u16",
    np.dtype("u1"): "u8",
    np.dtype("?"): "bool",
}


@dataclass
class Chan:
    """One channel to write: values ``[T, *shape]``, its lane and codec."""

    values: np.ndarray
    codec: str = "none"
    lane: str = "signal"
    dtype: Optional[str] = None  # WShard code; default from values.dtype (bf16: give "bf16")


@dataclass
class Stream:
    """One stream to write."""

    channels: Dict[str, Chan]
    t_ns: Optional[np.ndarray] = None  # None: ticks at tick_hz without timestamps
    tick_hz: float = 0.0
    chunk_steps: int = 0  # 0: one chunk
    alignment: int = 64
    status: str = "complete"
    producer: str = "test"

    @property
    def steps(self) -> int:
        return len(next(iter(self.channels.values())).values)


def write_stream(folder: Path, stream_id: str, s: Stream, extra: Optional[Dict[str, Any]] = None) -> Path:
    """Write chunks + manifest of ``s`` in ``folder`` (episode_id ``stream_id``)."""
    spec: Dict[str, Any] = {
        "episode_id": stream_id,
        "timebase": "ticks" if s.t_ns is None else "timestamps_ns",
        "tick_hz": s.tick_hz,
        "dt_ns": 0,
        "steps": s.steps,
        "chunk_steps": s.chunk_steps or max(s.steps, 1),
        "alignment": s.alignment,
        "status": s.status,
        "wshard_extra": extra or {},
        "channels": [],
    }
    columns: Dict[str, bytes] = {}
    for name, c in s.channels.items():
        v = np.ascontiguousarray(c.values)
        assert len(v) == s.steps, name
        spec["channels"].append(
            {
                "name": name,
                "lane": c.lane,
                "dtype": c.dtype or CODES[np.dtype(v.dtype)],
                "shape": list(v.shape[1:]),
                "codec": c.codec,
            }
        )
        columns[name] = v.tobytes()
    if s.t_ns is not None:
        ts = np.asarray(s.t_ns, dtype="<i8")
        assert len(ts) == s.steps
        columns["time/timestamps_ns"] = ts.tobytes()
    return Path(_native._write_chunked_stream(str(folder), json.dumps(spec), columns))


def make_single(root: Path, ep_id: str, s: Stream) -> Path:
    """A single-stream (protocol v1) episode directory ``root/ep_id``."""
    folder = root / ep_id
    write_stream(folder, ep_id, s)
    return folder


def event_line(seq: int, t_ns: int, label: str, kind: str, data: Any, source: str) -> Dict[str, Any]:
    if kind == "binary":
        data = base64.b64encode(data).decode("ascii")
    return {"data": data, "kind": kind, "label": label, "seq": seq, "source": source, "t_ns": t_ns}


@dataclass
class Multi:
    """A multi-stream episode to write."""

    streams: Dict[str, Stream]
    events: List[Dict[str, Any]] = field(default_factory=list)  # event_line(...) dicts
    annotations: List[Dict[str, Any]] = field(default_factory=list)
    status: str = "complete"
    torn_tail: bytes = b""


def stream_entry(name: str, s: Stream) -> Dict[str, Any]:
    ts = s.t_ns
    return {
        "channels": [
            {
                "dtype": c.dtype or CODES[np.dtype(c.values.dtype)],
                "lane": c.lane,
                "name": n,
                "shape": list(c.values.shape[1:]),
            }
            for n, c in s.channels.items()
        ],
        "chunks": -(-s.steps // (s.chunk_steps or max(s.steps, 1))),
        "first_t_ns": int(ts[0]) if ts is not None and len(ts) else None,
        "last_t_ns": int(ts[-1]) if ts is not None and len(ts) else None,
        "manifest": f"streams/{name}/{name}_manifest.wshard",
        "name": name,
        "producer": s.producer,
        "status": s.status,
        "steps": s.steps,
        "tick_hz": s.tick_hz,
        "timebase": "ticks" if ts is None else "timestamps_ns",
    }


def make_multi(root: Path, ep_id: str, m: Multi) -> Path:
    """A multi-stream episode directory ``root/ep_id`` (index, streams/, events, annotations)."""
    folder = root / ep_id
    for name, s in m.streams.items():
        write_stream(folder / "streams" / name, name, s, {"episode": ep_id, "stream": name})
    index = {
        "closed": True,
        "created_unix_ns": 1_700_000_000_000_000_000,
        "env_id": "",
        "episode_id": ep_id,
        "events_file": f"{ep_id}_events.jsonl",
        "format": "wshard-episode-index",
        "metadata": {},
        "status": m.status,
        "streams": [stream_entry(n, s) for n, s in m.streams.items()],
        "version": 1,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{ep_id}_index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    if m.events or m.torn_tail:
        lines = b"".join(json.dumps(e, sort_keys=True).encode() + b"\n" for e in m.events)
        (folder / f"{ep_id}_events.jsonl").write_bytes(lines + m.torn_tail)
    if m.annotations:
        doc = {
            "annotations": m.annotations,
            "episode_id": ep_id,
            "format": "wshard-annotations",
            "version": 1,
        }
        (folder / f"{ep_id}_annotations.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return folder


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (NaN payloads and -0.0 included)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def mapped(a: np.ndarray) -> bool:
    """True when ``a`` is a view whose base chain ends in a memory map (numpy.frombuffer
    keeps a memoryview of the map as the base)."""
    base = a
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)
