"""ROS 2 names on DDS: topic ``/x`` is DDS topic ``rt/x``; each supported message type's IDL
struct (:mod:`.idl`) by its canonical name (``sensor_msgs/JointState``)."""

from typing import Dict, List, Type

from cyclonedds.idl import IdlStruct

from ..msgtypes import EVENT_TYPES, STREAM_TYPES
from . import idl
from .errors import UnsupportedTopicType

#: The prefix ROS 2 puts before a topic's name on DDS (``rt``: ROS topic).
TOPIC_PREFIX = "rt"

#: The IDL struct of every message type the converter core records.
DDS_TYPES: Dict[str, Type[IdlStruct]] = {
    "sensor_msgs/JointState": idl.JointState_,
    "sensor_msgs/Image": idl.Image_,
    "sensor_msgs/CompressedImage": idl.CompressedImage_,
    "sensor_msgs/Imu": idl.Imu_,
    "geometry_msgs/WrenchStamped": idl.WrenchStamped_,
    "geometry_msgs/PoseStamped": idl.PoseStamped_,
    "geometry_msgs/TwistStamped": idl.TwistStamped_,
    "std_msgs/Float64MultiArray": idl.Float64MultiArray_,
    "std_msgs/Float64": idl.Float64_,
    "std_msgs/Float32": idl.Float32_,
    "std_msgs/Int64": idl.Int64_,
    "std_msgs/Int32": idl.Int32_,
    "std_msgs/Int16": idl.Int16_,
    "std_msgs/Int8": idl.Int8_,
    "std_msgs/UInt64": idl.UInt64_,
    "std_msgs/UInt32": idl.UInt32_,
    "std_msgs/UInt16": idl.UInt16_,
    "std_msgs/UInt8": idl.UInt8_,
    "std_msgs/String": idl.String_,
    "std_msgs/Bool": idl.Bool_,
}


def dds_topic_name(ros_topic: str) -> str:
    """``rt/x`` for the ROS 2 topic ``/x`` (an absolute name, as the mapping requires)."""
    return TOPIC_PREFIX + "/" + ros_topic.lstrip("/")


def dds_type_name(canonical: str) -> str:
    """``pkg::msg::dds_::T_`` for ``pkg/T``."""
    pkg, name = canonical.split("/")
    return f"{pkg}::msg::dds_::{name}_"


def dds_type_for(topic: str, canonical: str) -> Type[IdlStruct]:
    """The IDL struct of ``canonical`` (``sensor_msgs/JointState``) for ``topic``.

    Raises:
        UnsupportedTopicType: no IDL struct for that type here (names topic and type).
    """
    try:
        return DDS_TYPES[canonical]
    except KeyError:
        raise UnsupportedTopicType(topic, canonical, sorted(DDS_TYPES)) from None


def missing_types() -> List[str]:
    """Types the converter core records that have no IDL struct here (empty: a test checks)."""
    return sorted((set(STREAM_TYPES) | set(EVENT_TYPES)) - set(DDS_TYPES))
