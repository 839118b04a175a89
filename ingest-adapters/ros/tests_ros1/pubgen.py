"""Deterministic messages of the live tests and the benchmark: message ``i`` of a kind is the
same in the publisher process (ros_pub.py) and in the test that checks the recording, so
every recorded value is compared bit for bit with what was published.

Values are exact functions of ``i`` (float64 from integer arithmetic and ``math.sin``,
same libm in both processes); stamps are ``t0_ns + i * period_ns``.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Dict, List, Tuple

import numpy as np

NS = 1_000_000_000
JOINTS = [f"joint_{j}" for j in range(7)]
COV = [float(k) / 7.0 for k in range(9)]


def stamp_of(t0_ns: int, i: int, rate_hz: float) -> int:
    """The header stamp (ns) of message ``i``."""
    return t0_ns + i * int(round(NS / rate_hz))


def joint_values(i: int) -> Tuple[List[float], List[float], List[float]]:
    """position, velocity, effort of JointState ``i`` (7 joints)."""
    pos = [math.sin(i * 0.001 + j) * 3.0 for j in range(7)]
    vel = [i * 1e-3 + j / 7.0 for j in range(7)]
    eff = [-((i ^ j) / 3.0) for j in range(7)]
    return pos, vel, eff


def image_bytes(i: int, width: int, height: int, channels: int = 3) -> bytes:
    """rgb8 pixels of Image ``i`` (row-major, no padding)."""
    n = width * height * channels
    return ((np.arange(n, dtype=np.uint32) * 31 + i * 7) % 251).astype(np.uint8).tobytes()


_NOISE: Dict[Tuple[int, int], List[bytes]] = {}
NOISE_FRAMES = 16


def noise_bytes(i: int, width: int, height: int) -> bytes:
    """Incompressible rgb8 pixels for the benchmark: frame ``i % 16`` of a random pool (not
    deterministic across processes; the tests use :func:`image_bytes`)."""
    import os

    pool = _NOISE.get((width, height))
    if pool is None:
        pool = _NOISE[(width, height)] = [os.urandom(width * height * 3) for _ in range(NOISE_FRAMES)]
    return pool[i % NOISE_FRAMES]


def imu_values(i: int) -> Dict[str, List[float]]:
    """orientation (x, y, z, w), angular_velocity, linear_acceleration of Imu ``i``."""
    return {
        "orientation": [math.cos(i * 0.01), math.sin(i * 0.01), 0.25, -0.5 + i * 1e-6],
        "angular_velocity": [i * 0.5, -i * 0.25, 1.0 / (i + 1)],
        "linear_acceleration": [9.81, math.sin(i), math.cos(i)],
    }


def event_text(i: int) -> str:
    """The text of event ``i``."""
    return f"event {i}: ünïcode ok"


def f64(values: List[float]) -> bytes:
    """Little-endian f64 bytes of ``values`` (what the recording must hold)."""
    return struct.pack(f"<{len(values)}d", *values)


def _time(ns: int) -> Any:
    import rospy

    return rospy.Time(secs=ns // NS, nsecs=ns % NS)


def make_message(kind: str, i: int, t_ns: int, width: int = 64, height: int = 48) -> Any:
    """rospy message ``i`` of ``kind`` (``joint``, ``image``, ``image_noise``, ``imu``, ``event``, ``clock``)
    with header stamp ``t_ns``."""
    if kind == "joint":
        from sensor_msgs.msg import JointState

        pos, vel, eff = joint_values(i)
        m = JointState(name=list(JOINTS), position=pos, velocity=vel, effort=eff)
        m.header.stamp = _time(t_ns)
        m.header.frame_id = "base"
        return m
    if kind in ("image", "image_noise"):
        from sensor_msgs.msg import Image

        m = Image(height=height, width=width, encoding="rgb8", is_bigendian=0, step=width * 3)
        m.data = image_bytes(i, width, height) if kind == "image" else noise_bytes(i, width, height)
        m.header.stamp = _time(t_ns)
        m.header.frame_id = "camera"
        return m
    if kind == "imu":
        from geometry_msgs.msg import Quaternion, Vector3
        from sensor_msgs.msg import Imu

        v = imu_values(i)
        m = Imu()
        m.orientation = Quaternion(*v["orientation"])
        m.angular_velocity = Vector3(*v["angular_velocity"])
        m.linear_acceleration = Vector3(*v["linear_acceleration"])
        m.orientation_covariance = list(COV)
        m.angular_velocity_covariance = list(COV)
        m.linear_acceleration_covariance = list(COV)
        m.header.stamp = _time(t_ns)
        m.header.frame_id = "imu"
        return m
    if kind == "event":
        from std_msgs.msg import String

        return String(data=event_text(i))
    if kind == "clock":
        from rosgraph_msgs.msg import Clock

        return Clock(clock=_time(t_ns))
    raise ValueError(f"unknown kind {kind!r}")


def message_class(kind: str) -> Any:
    """The rospy class of ``kind``."""
    return type(make_message(kind, 0, NS, 1, 1))
