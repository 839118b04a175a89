"""The message types the converter core knows, their canonical names and how a message's
time is read. Pure data and small helpers; no converter code (so the mapping can check a
type without importing the converters)."""

import re
from typing import Any, Dict, Optional, Tuple

#: ``sensor_msgs/JointState`` from either spelling: ROS 1 (``pkg/T``) or ROS 2 (``pkg/msg/T``).
_TYPE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/(?:msg/)?([A-Za-z][A-Za-z0-9_]*)$")

NS_PER_S = 1_000_000_000

#: Scalar ``std_msgs`` types recorded as a scalar channel ``data``: (wire dtype, struct code).
SCALAR_TYPES: Dict[str, Tuple[str, str]] = {
    "std_msgs/Float64": ("f64", "d"),
    "std_msgs/Float32": ("f32", "f"),
    "std_msgs/Int64": ("i64", "q"),
    "std_msgs/Int32": ("i32", "i"),
    "std_msgs/Int16": ("i16", "h"),
    "std_msgs/Int8": ("i8", "b"),
    "std_msgs/UInt64": ("u64", "Q"),
    "std_msgs/UInt32": ("u32", "I"),
    "std_msgs/UInt16": ("u16", "H"),
    "std_msgs/UInt8": ("u8", "B"),
}

#: Types recorded as stream channels, and whether they carry a ``header``.
STREAM_TYPES: Dict[str, bool] = {
    "sensor_msgs/JointState": True,
    "sensor_msgs/Image": True,
    "sensor_msgs/CompressedImage": True,
    "sensor_msgs/Imu": True,
    "geometry_msgs/WrenchStamped": True,
    "geometry_msgs/PoseStamped": True,
    "geometry_msgs/TwistStamped": True,
    "std_msgs/Float64MultiArray": False,
    **{name: False for name in SCALAR_TYPES},
}

#: Types recorded as events (no header: receive time).
EVENT_TYPES = ("std_msgs/String", "std_msgs/Bool")


def canonical_type(name: str) -> Optional[str]:
    """``pkg/T`` from ``pkg/T`` or ``pkg/msg/T``; ``None`` when ``name`` is neither."""
    m = _TYPE_RE.match(name.strip())
    return f"{m.group(1)}/{m.group(2)}" if m else None


#: The type of each message class met so far (a per-message regex is measurable at 1 kHz).
_CLASS_TYPES: Dict[type, str] = {}


def message_type_of(msg: Any) -> Optional[str]:
    """The canonical type a message says it has: rosbags' ``__msgtype__``
    (``sensor_msgs/msg/Image``) or rospy's ``_type`` (``sensor_msgs/Image``); ``None``
    when it says nothing (a plain object with the right fields)."""
    cls = type(msg)
    cached = _CLASS_TYPES.get(cls)
    if cached is not None:
        return cached
    for attr in ("__msgtype__", "_type"):
        value = getattr(msg, attr, None)
        if isinstance(value, str):
            name = canonical_type(value) or value
            if getattr(cls, attr, None) == value:  # a class's type (rospy, rosbags): the same for every message
                _CLASS_TYPES[cls] = name
            return name
    return None


def stamp_ns(stamp: Any) -> int:
    """Nanoseconds of a ROS time: ROS 2 / rosbags ``sec`` + ``nanosec`` or rospy's
    ``secs`` + ``nsecs``.

    Raises:
        AttributeError: neither pair is there.
        ValueError: the nanoseconds are outside ``0..1e9`` or the time is negative.
    """
    if hasattr(stamp, "sec") and hasattr(stamp, "nanosec"):
        sec, nsec = int(stamp.sec), int(stamp.nanosec)
    elif hasattr(stamp, "secs") and hasattr(stamp, "nsecs"):
        sec, nsec = int(stamp.secs), int(stamp.nsecs)
    else:
        raise AttributeError("no sec/nanosec (ROS 2) or secs/nsecs (ROS 1) fields")
    if not 0 <= nsec < NS_PER_S:
        raise ValueError(f"nanoseconds {nsec} outside 0..1e9")
    t = sec * NS_PER_S + nsec
    if t < 0:
        raise ValueError(f"negative time {sec} s")
    return t
