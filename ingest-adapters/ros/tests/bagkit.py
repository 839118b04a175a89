"""Helpers of the bag import's tests: a workload of ROS messages (JointState, Imu, a
camera's rgb8 and 16UC1 images sharing a header stamp in one stream, String events, an
unmapped topic) written with rosbags' writers as a ROS 1 .bag, a rosbag2 sqlite3 or a
rosbag2 MCAP bag; the import run as its command line; what the episode must hold."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.rosbag2 import Writer as Writer2
from rosbags.typesys import Stores, get_typestore

KINDS = ("ros1", "sqlite3", "mcap")
ROS1 = get_typestore(Stores.ROS1_NOETIC)
ROS2 = get_typestore(Stores.ROS2_HUMBLE)
STORES = {"ros1": ROS1, "sqlite3": ROS2, "mcap": ROS2}
SRC = Path(__file__).resolve().parents[1] / "src"
CLIENT_SRC = Path(__file__).resolve().parents[2] / "python" / "src"
BASE_NS = 1_700_000_000 * 1_000_000_000
#: The bag's log time of a message is its header stamp plus this (the recorder's delay).
LOG_DELAY_NS = 250_000

MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 1000
codec = "none"

[topics."/imu"]
type = "sensor_msgs/Imu"
tick_hz = 200

[topics."/camera/color"]
type = "sensor_msgs/Image"
stream = "camera"
prefix = "rgb"
tick_hz = 30
codec = "lz4"

[topics."/camera/depth"]
type = "sensor_msgs/Image"
stream = "camera"
prefix = "depth"
tick_hz = 30

[events."/instruction"]
type = "std_msgs/String"
label = "instruction"
"""


@dataclass(frozen=True)
class Msg:
    """One message of the workload: topic, rosbags type name, log time, the message."""

    topic: str
    msgtype: str
    log_ns: int
    msg: Any


def _hdr(store: Any, t_ns: int, frame: str) -> Any:
    T = store.types
    stamp = T["builtin_interfaces/msg/Time"](sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)
    if store is ROS1:
        return T["std_msgs/msg/Header"](seq=0, stamp=stamp, frame_id=frame)
    return T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame)


def joint_state(store: Any, i: int) -> Any:
    rng = np.random.default_rng(i)
    pos = rng.standard_normal(7) * 1e3
    pos[0] = -0.0 if i % 2 else 5e-324
    return store.types["sensor_msgs/msg/JointState"](
        header=_hdr(store, BASE_NS + i * 1_000_000, "base"),
        name=[f"joint{k}" for k in range(7)],
        position=pos,
        velocity=rng.standard_normal(7),
        effort=rng.standard_normal(7),
    )


def imu(store: Any, i: int) -> Any:
    T = store.types
    rng = np.random.default_rng(10_000 + i)
    v = rng.standard_normal(10)
    return T["sensor_msgs/msg/Imu"](
        header=_hdr(store, BASE_NS + i * 5_000_000, "imu"),
        orientation=T["geometry_msgs/msg/Quaternion"](x=v[0], y=v[1], z=v[2], w=v[3]),
        orientation_covariance=rng.standard_normal(9),
        angular_velocity=T["geometry_msgs/msg/Vector3"](x=v[4], y=v[5], z=v[6]),
        angular_velocity_covariance=rng.standard_normal(9),
        linear_acceleration=T["geometry_msgs/msg/Vector3"](x=v[7], y=v[8], z=v[9]),
        linear_acceleration_covariance=rng.standard_normal(9),
    )


def image(store: Any, i: int, depth: bool, h: int = 120, w: int = 160) -> Any:
    rng = np.random.default_rng((20_000 if depth else 30_000) + i)
    if depth:
        data = rng.integers(0, 65536, size=(h, w), dtype=np.uint16).astype("<u2").tobytes()
        enc, step = "16UC1", w * 2
    else:
        data = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8).tobytes()
        enc, step = "rgb8", w * 3
    return store.types["sensor_msgs/msg/Image"](
        header=_hdr(store, BASE_NS + i * 33_333_333, "cam"),
        height=h,
        width=w,
        encoding=enc,
        is_bigendian=0,
        step=step,
        data=np.frombuffer(data, dtype=np.uint8).copy(),
    )


def string(store: Any, text: str) -> Any:
    return store.types["std_msgs/msg/String"](data=text)


def workload(kind: str, joints: int = 300, frames: int = 9) -> List[Msg]:
    """The messages in log-time order (writes at equal log times keep this order)."""
    store = STORES[kind]
    out: List[Msg] = []
    for i in range(joints):
        out.append(
            Msg(
                "/joint_states",
                "sensor_msgs/msg/JointState",
                BASE_NS + i * 1_000_000 + LOG_DELAY_NS,
                joint_state(store, i),
            )
        )
    for i in range(joints // 5):
        out.append(Msg("/imu", "sensor_msgs/msg/Imu", BASE_NS + i * 5_000_000 + LOG_DELAY_NS, imu(store, i)))
    for i in range(frames):
        t = BASE_NS + i * 33_333_333 + LOG_DELAY_NS
        # the same log time for both images of a frame: the bag's order decides
        out.append(Msg("/camera/color", "sensor_msgs/msg/Image", t, image(store, i, False)))
        out.append(Msg("/camera/depth", "sensor_msgs/msg/Image", t, image(store, i, True)))
    for i, text in enumerate(["pick up the red cube", "place it", "done: ok"]):
        out.append(Msg("/instruction", "std_msgs/msg/String", BASE_NS + i * 97_000_000 + 1, string(store, text)))
    for i in range(11):
        f = store.types["std_msgs/msg/Float64"](data=float(i))
        out.append(Msg("/unmapped", "std_msgs/msg/Float64", BASE_NS + i * 20_000_000, f))
    out.sort(key=lambda m: m.log_ns)  # stable: equal log times keep their order above
    return out


def write_bag(kind: str, path: Path, msgs: Sequence[Msg], zstd_chunks: bool = False, lz4: bool = False) -> Path:
    """Write ``msgs`` as a bag of ``kind`` at ``path`` (a ``.bag`` file or a rosbag2
    directory; ``zstd_chunks``: MCAP chunks compressed; ``lz4``: ROS 1 chunks compressed);
    returns what the import is given."""
    store = STORES[kind]
    if kind == "ros1":
        bag = path.with_suffix(".bag")
        w = Writer1(bag)
        if lz4:
            w.set_compression(Writer1.CompressionFormat.LZ4)
        with w:
            conns: Dict[str, Any] = {}
            for m in msgs:
                if m.topic not in conns:
                    conns[m.topic] = w.add_connection(m.topic, m.msgtype, typestore=store)
                w.write(conns[m.topic], m.log_ns, store.serialize_ros1(m.msg, m.msgtype))
        return bag
    plugin = StoragePlugin.MCAP if kind == "mcap" else StoragePlugin.SQLITE3
    w2 = Writer2(path, version=9, storage_plugin=plugin)
    if zstd_chunks:
        w2.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with w2:
        conns = {}
        for m in msgs:
            if m.topic not in conns:
                conns[m.topic] = w2.add_connection(m.topic, m.msgtype, typestore=store)
            w2.write(conns[m.topic], m.log_ns, store.serialize_cdr(m.msg, m.msgtype))
    return path


def storage_file(kind: str, bag: Path) -> Path:
    """The one file holding the data: the .bag, or the rosbag2 directory's storage file."""
    if kind == "ros1":
        return bag
    return next(p for p in bag.iterdir() if p.suffix in (".db3", ".mcap"))


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    summary: Optional[Dict[str, Any]]


def run_import(bags: Sequence[Path], mapping: Path, wshardd: Path, *args: str) -> Run:
    """``python3 -m wshard_ros.bag_import BAG... --mapping M ARGS`` (a real process)."""
    summary = mapping.parent / f"summary-{os.getpid()}-{len(list(mapping.parent.iterdir()))}.json"
    env = dict(os.environ, PYTHONPATH=f"{SRC}:{CLIENT_SRC}", WSHARDD_BIN=str(wshardd))
    cmd = [
        sys.executable,
        "-m",
        "wshard_ros.bag_import",
        *map(str, bags),
        "--mapping",
        str(mapping),
        "--summary-json",
        str(summary),
        *args,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    data = json.loads(summary.read_text()) if summary.exists() else None
    return Run(r.returncode, r.stdout, r.stderr, data)


def stamp_of(msg: Any) -> int:
    s = msg.header.stamp
    return int(s.sec) * 1_000_000_000 + int(s.nanosec)


def by_topic(msgs: Sequence[Msg]) -> Dict[str, List[Msg]]:
    out: Dict[str, List[Msg]] = {}
    for m in msgs:
        out.setdefault(m.topic, []).append(m)
    return out


def tree_bytes(root: Path) -> List[Tuple[str, bytes]]:
    """Every file under ``root`` with its bytes, sorted by relative path."""
    return sorted((str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*") if p.is_file())
