"""Checks of recorded live episodes against pubgen's messages, bit for bit."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Dict, List

from pubgen import COV, event_text, f64, image_bytes, imu_values, joint_values, stamp_of
from shard_parse import Episode, read_episode


def stream(data_dir: Path, episode: str, name: str) -> Episode:
    return read_episode(data_dir / episode / "streams", name)


def index(data_dir: Path, episode: str) -> Dict[str, Any]:
    return dict(json.loads((data_dir / episode / f"{episode}_index.json").read_text()))


def events(data_dir: Path, episode: str) -> List[Dict[str, Any]]:
    path = data_dir / episode / f"{episode}_events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def annotations(data_dir: Path, episode: str) -> List[Dict[str, Any]]:
    path = data_dir / episode / f"{episode}_annotations.json"
    return list(json.loads(path.read_text())["annotations"]) if path.exists() else []


def i64s(raw: bytes) -> List[int]:
    return list(struct.unpack(f"<{len(raw) // 8}q", raw))


def check_joint(ep: Episode, first: int, count: int, t0: int, rate: float) -> List[int]:
    """JointState ``first..first+count`` bit for bit; returns the receive times."""
    idx = range(first, first + count)
    assert ep.timesteps == count, (ep.timesteps, count)
    assert ep.timestamps == [stamp_of(t0, i, rate) for i in idx]
    assert ep.channel("signal/position") == b"".join(f64(joint_values(i)[0]) for i in idx)
    assert ep.channel("signal/velocity") == b"".join(f64(joint_values(i)[1]) for i in idx)
    assert ep.channel("signal/effort") == b"".join(f64(joint_values(i)[2]) for i in idx)
    return i64s(ep.channel("signal/receive_t_ns"))


def check_image(ep: Episode, first: int, count: int, t0: int, rate: float, width: int, height: int) -> List[int]:
    idx = range(first, first + count)
    assert ep.timesteps == count, (ep.timesteps, count)
    assert ep.timestamps == [stamp_of(t0, i, rate) for i in idx]
    assert ep.channel("signal/image") == b"".join(image_bytes(i, width, height) for i in idx)
    return i64s(ep.channel("signal/receive_t_ns"))


def check_imu(ep: Episode, first: int, count: int, t0: int, rate: float) -> List[int]:
    idx = range(first, first + count)
    assert ep.timesteps == count, (ep.timesteps, count)
    assert ep.timestamps == [stamp_of(t0, i, rate) for i in idx]
    for field in ("orientation", "angular_velocity", "linear_acceleration"):
        assert ep.channel(f"signal/{field}") == b"".join(f64(imu_values(i)[field]) for i in idx), field
        assert ep.channel(f"signal/{field}_covariance") == f64(COV) * count, field
    return i64s(ep.channel("signal/receive_t_ns"))


def check_events(recs: List[Dict[str, Any]], label: str, first: int, count: int) -> List[int]:
    """Text events ``first..first+count`` labelled ``label``; returns their times."""
    mine = [r for r in recs if r["label"] == label]
    assert [(r["kind"], r["data"]) for r in mine] == [("text", event_text(i)) for i in range(first, first + count)]
    return [int(r["t_ns"]) for r in mine]
