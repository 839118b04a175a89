"""Messages built with the rosbags type store (the real field shapes of ROS 2 Humble and
ROS 1 Noetic messages, no ROS install)."""

from types import SimpleNamespace
from typing import Any, Optional, Sequence

import numpy as np
from rosbags.typesys import Stores, get_typestore

ROS2 = get_typestore(Stores.ROS2_HUMBLE)
ROS1 = get_typestore(Stores.ROS1_NOETIC)
T = ROS2.types


def time(sec: int, nanosec: int, store: Any = ROS2) -> Any:
    return store.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def header(sec: int = 1700000000, nanosec: int = 123456789, frame_id: str = "base", store: Any = ROS2) -> Any:
    stamp = time(sec, nanosec, store)
    if store is ROS1:
        return store.types["std_msgs/msg/Header"](seq=7, stamp=stamp, frame_id=frame_id)
    return store.types["std_msgs/msg/Header"](stamp=stamp, frame_id=frame_id)


def joint_state(
    pos: Sequence[float],
    vel: Sequence[float] = (),
    eff: Sequence[float] = (),
    names: Optional[Sequence[str]] = None,
    hdr: Any = None,
) -> Any:
    n = len(pos)
    return T["sensor_msgs/msg/JointState"](
        header=hdr or header(),
        name=list(names) if names is not None else [f"j{i}" for i in range(n)],
        position=np.array(pos, dtype=np.float64),
        velocity=np.array(vel, dtype=np.float64),
        effort=np.array(eff, dtype=np.float64),
    )


def image(
    encoding: str, height: int, width: int, step: int, data: bytes, bigendian: bool = False, hdr: Any = None
) -> Any:
    return T["sensor_msgs/msg/Image"](
        header=hdr or header(),
        height=height,
        width=width,
        encoding=encoding,
        is_bigendian=int(bigendian),
        step=step,
        data=np.frombuffer(data, dtype=np.uint8).copy(),
    )


def vec3(x: float, y: float, z: float) -> Any:
    return T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z)


def quat(x: float, y: float, z: float, w: float) -> Any:
    return T["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w)


def rospy_like_stamp(secs: int, nsecs: int) -> Any:
    """A ROS 1 (rospy) ``Time``: ``secs`` / ``nsecs``."""
    return SimpleNamespace(secs=secs, nsecs=nsecs)
