"""The messages the DDS test publishers send, generated from (kind, index) alone, so a
test can rebuild exactly what a publisher process sent and compare the recording bit for
bit. Shared by tests/dds_publisher.py, the tests and bench/ros/ros2_dds_live.py."""

import random
import struct
from typing import Any, Dict, List, Tuple

from wshard_ros.ros2dds import idl

#: Header stamp of message 0; message i is stamped ``BASE_NS + i * period``.
BASE_NS = 1_700_000_000 * 10**9 + 5
JOINTS = 7
#: f64 bit patterns a float round trip could change: NaN with a payload, -0.0, a denormal.
ODD = [
    struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0],
    -0.0,
    5e-324,
    float.fromhex("0x1.0000000000001p+0"),
]
#: kind -> the mapping's type.
TYPES = {
    "joint_state": "sensor_msgs/JointState",
    "image": "sensor_msgs/Image",
    "imu": "sensor_msgs/Imu",
    "string": "std_msgs/String",
    "bool": "std_msgs/Bool",
}


def period_ns(rate_hz: float) -> int:
    return int(round(1e9 / rate_hz))


def stamp(i: int, rate_hz: float) -> int:
    return BASE_NS + i * period_ns(rate_hz)


def _time(t_ns: int) -> Any:
    return idl.Time_(sec=t_ns // 10**9, nanosec=t_ns % 10**9)


def _header(i: int, rate_hz: float, frame: str) -> Any:
    return idl.Header_(stamp=_time(stamp(i, rate_hz)), frame_id=frame)


def joint_values(i: int) -> Tuple[List[float], List[float], List[float]]:
    pos = [i * 0.001 + j for j in range(JOINTS)]
    pos[i % JOINTS] = ODD[i % len(ODD)]
    vel = [-(i + j) / 3.0 for j in range(JOINTS)]
    eff = [1e-9 * (i * j) for j in range(JOINTS)]
    return pos, vel, eff


def image_bytes(i: int, width: int, height: int, base: bytes = b"") -> bytes:
    """rgb8 pixels: a fixed pattern with the index in the first 8 bytes (cheap for big frames)."""
    n = width * height * 3
    if not base:
        base = image_base(width, height)
    assert len(base) == n
    return struct.pack("<Q", i) + base[8:]


def image_base(width: int, height: int) -> bytes:
    """Pseudo-random rgb8 pixels, the same for the same size (incompressible, like a camera's)."""
    return random.Random(width * 100_003 + height).randbytes(width * height * 3)


def imu_values(i: int) -> Dict[str, List[float]]:
    return {
        "orientation": [0.0, 0.0, float(i) * 1e-3, 1.0],
        "angular_velocity": [i * 0.5, -1.0, ODD[i % len(ODD)]],
        "linear_acceleration": [9.81, 0.0, float(-i)],
        "cov": [float(k) for k in range(9)],
    }


def message(kind: str, i: int, rate_hz: float, width: int = 8, height: int = 6, base: bytes = b"") -> Any:
    """Message ``i`` of ``kind`` (see :data:`TYPES`)."""
    if kind == "joint_state":
        pos, vel, eff = joint_values(i)
        return idl.JointState_(
            header=_header(i, rate_hz, "base"),
            name=[f"j{j}" for j in range(JOINTS)],
            position=pos,
            velocity=vel,
            effort=eff,
        )
    if kind == "image":
        return idl.Image_(
            header=_header(i, rate_hz, "camera"),
            height=height,
            width=width,
            encoding="rgb8",
            is_bigendian=0,
            step=width * 3,
            data=image_bytes(i, width, height, base),
        )
    if kind == "imu":
        v = imu_values(i)
        return idl.Imu_(
            header=_header(i, rate_hz, "imu"),
            orientation=idl.Quaternion_(*v["orientation"]),
            orientation_covariance=v["cov"],
            angular_velocity=idl.Vector3_(*v["angular_velocity"]),
            angular_velocity_covariance=v["cov"],
            linear_acceleration=idl.Vector3_(*v["linear_acceleration"]),
            linear_acceleration_covariance=v["cov"],
        )
    if kind == "string":
        return idl.String_(data=f"event {i} \u00e9")
    if kind == "bool":
        return idl.Bool_(data=i % 2 == 0)
    raise ValueError(f"unknown kind {kind!r}")
