"""Helpers of the recording core's tests: a Bridge on a real wshardd, reading streams and
the episode index back."""

import json
import struct
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np
import rosmsgs as R
from daemon_harness import Daemon
from shard_parse import Episode, read_episode

from wshard_ros import loads_mapping
from wshard_ros.bridge import Bridge, BridgeOptions

JOINTS_AND_CAMERA = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 100

[topics."/camera/image"]
type = "sensor_msgs/Image"
stream = "cam"
"""

BASE_S = 1_700_000_000


def make_bridge(daemon: Daemon, mapping_text: str, **options: Any) -> Bridge:
    """A Bridge on ``daemon``'s ingest socket (and its control socket)."""
    control = str(daemon.config.parent / "wshardd-control.sock")
    opts = BridgeOptions(socket_path=str(daemon.socket), control_path=control, **options)
    return Bridge(loads_mapping(mapping_text), opts)


def stream_of(daemon: Daemon, episode: str, stream: str) -> Episode:
    """The stream ``stream`` of the multi-stream episode ``episode``."""
    return read_episode(daemon.data_dir / episode / "streams", stream)


def index_of(daemon: Daemon, episode: str) -> Dict[str, Any]:
    """The episode index (``{EP}_index.json``)."""
    return json.loads((daemon.data_dir / episode / f"{episode}_index.json").read_text())


def events_of(daemon: Daemon, episode: str) -> List[Dict[str, Any]]:
    path = daemon.data_dir / episode / f"{episode}_events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def annotations_of(daemon: Daemon, episode: str) -> List[Dict[str, Any]]:
    path = daemon.data_dir / episode / f"{episode}_annotations.json"
    return json.loads(path.read_text())["annotations"] if path.exists() else []


def i64s(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


def stamp(i: int, period_ns: int = 10_000_000) -> int:
    """The header stamp (ns) of message ``i``."""
    return BASE_S * 1_000_000_000 + i * period_ns


def hdr(t_ns: int, frame_id: str = "base") -> Any:
    return R.header(t_ns // 1_000_000_000, t_ns % 1_000_000_000, frame_id)


def joints(i: int, n: int = 7) -> Any:
    """JointState ``i``: distinct, awkward f64 values (negative zero, tiny, huge)."""
    rng = np.random.default_rng(i)
    pos = rng.standard_normal(n) * 1e3
    pos[0] = -0.0 if i % 2 else 5e-324
    return R.joint_state(pos, rng.standard_normal(n), rng.standard_normal(n), hdr=hdr(stamp(i)))


def rgb(i: int, h: int = 12, w: int = 16, t_ns: int = 0) -> Any:
    data = np.random.default_rng(1000 + i).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    return R.image("rgb8", h, w, w * 3, data.tobytes(), hdr=hdr(t_ns or stamp(i, 33_000_000), "cam"))


def depth(i: int, h: int = 12, w: int = 16, t_ns: int = 0) -> Any:
    data = np.random.default_rng(2000 + i).integers(0, 65536, size=(h, w), dtype=np.uint16)
    return R.image("16UC1", h, w, w * 2, data.astype("<u2").tobytes(), hdr=hdr(t_ns or stamp(i, 33_000_000), "cam"))


def pixels(msg: Any) -> bytes:
    return bytes(np.asarray(msg.data, dtype=np.uint8).tobytes())


def f64(arr: Any) -> bytes:
    return bytes(np.asarray(arr, dtype="<f8").tobytes())


def write_mapping(tmp: Path, text: str) -> Path:
    p = tmp / "bridge.toml"
    p.write_text(text)
    return p
