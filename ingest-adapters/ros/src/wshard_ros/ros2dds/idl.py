"""The ROS 2 messages the bridge records, as Cyclone DDS IDL structs with their ROS 2 wire
names.

A ROS 2 message ``pkg/msg/T`` travels as the DDS type ``pkg::msg::dds_::T_`` (the naming of
rosidl's DDS IDL, used by rmw_cyclonedds_cpp and rmw_fastrtps_cpp alike); its fields are
those of the ``.msg`` file in order, each ROS type as its IDL type (``float64`` -> double,
``uint8[]`` -> ``sequence<octet>``, ``float64[9]`` -> ``double[9]``, nested messages as
nested structs). Every struct is ``@final`` and keyless, so in plain CDR (XCDR1, what ROS 2
nodes put on the wire) a sample is exactly the ``.msg`` fields in CDR order.

``uint8[]`` is declared ``bytes`` here: the same bytes on the wire as a
``sequence<uint8>``, but read as one ``bytes`` object instead of a list of ints (an image is
a million of them).
"""

from dataclasses import dataclass, field
from typing import List

from cyclonedds.idl import IdlStruct
from cyclonedds.idl import types as t

# -- builtin_interfaces, std_msgs ------------------------------------------------------


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    """``builtin_interfaces/msg/Time``."""

    sec: t.int32 = 0
    nanosec: t.uint32 = 0


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    """``std_msgs/msg/Header`` (ROS 2: no ``seq``)."""

    stamp: Time_ = field(default_factory=Time_)
    frame_id: str = ""


@dataclass
class MultiArrayDimension_(IdlStruct, typename="std_msgs::msg::dds_::MultiArrayDimension_"):
    """``std_msgs/msg/MultiArrayDimension``."""

    label: str = ""
    size: t.uint32 = 0
    stride: t.uint32 = 0


@dataclass
class MultiArrayLayout_(IdlStruct, typename="std_msgs::msg::dds_::MultiArrayLayout_"):
    """``std_msgs/msg/MultiArrayLayout``."""

    dim: t.sequence[MultiArrayDimension_] = field(default_factory=list)
    data_offset: t.uint32 = 0


@dataclass
class Float64MultiArray_(IdlStruct, typename="std_msgs::msg::dds_::Float64MultiArray_"):
    """``std_msgs/msg/Float64MultiArray``."""

    layout: MultiArrayLayout_ = field(default_factory=MultiArrayLayout_)
    data: t.sequence[t.float64] = field(default_factory=list)


@dataclass
class Float64_(IdlStruct, typename="std_msgs::msg::dds_::Float64_"):
    """``std_msgs/msg/Float64``."""

    data: t.float64 = 0.0


@dataclass
class Float32_(IdlStruct, typename="std_msgs::msg::dds_::Float32_"):
    """``std_msgs/msg/Float32``."""

    data: t.float32 = 0.0


@dataclass
class Int64_(IdlStruct, typename="std_msgs::msg::dds_::Int64_"):
    """``std_msgs/msg/Int64``."""

    data: t.int64 = 0


@dataclass
class Int32_(IdlStruct, typename="std_msgs::msg::dds_::Int32_"):
    """``std_msgs/msg/Int32``."""

    data: t.int32 = 0


@dataclass
class Int16_(IdlStruct, typename="std_msgs::msg::dds_::Int16_"):
    """``std_msgs/msg/Int16``."""

    data: t.int16 = 0


@dataclass
class Int8_(IdlStruct, typename="std_msgs::msg::dds_::Int8_"):
    """``std_msgs/msg/Int8``."""

    data: t.int8 = 0


@dataclass
class UInt64_(IdlStruct, typename="std_msgs::msg::dds_::UInt64_"):
    """``std_msgs/msg/UInt64``."""

    data: t.uint64 = 0


@dataclass
class UInt32_(IdlStruct, typename="std_msgs::msg::dds_::UInt32_"):
    """``std_msgs/msg/UInt32``."""

    data: t.uint32 = 0


@dataclass
class UInt16_(IdlStruct, typename="std_msgs::msg::dds_::UInt16_"):
    """``std_msgs/msg/UInt16``."""

    data: t.uint16 = 0


@dataclass
class UInt8_(IdlStruct, typename="std_msgs::msg::dds_::UInt8_"):
    """``std_msgs/msg/UInt8``."""

    data: t.uint8 = 0


@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    """``std_msgs/msg/String`` (events; the bridge's command topic)."""

    data: str = ""


@dataclass
class Bool_(IdlStruct, typename="std_msgs::msg::dds_::Bool_"):
    """``std_msgs/msg/Bool``."""

    data: bool = False


# -- geometry_msgs ---------------------------------------------------------------------


@dataclass
class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    """``geometry_msgs/msg/Vector3``."""

    x: t.float64 = 0.0
    y: t.float64 = 0.0
    z: t.float64 = 0.0


@dataclass
class Point_(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    """``geometry_msgs/msg/Point``."""

    x: t.float64 = 0.0
    y: t.float64 = 0.0
    z: t.float64 = 0.0


@dataclass
class Quaternion_(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    """``geometry_msgs/msg/Quaternion`` (ROS 2's default is the identity, ``w = 1``)."""

    x: t.float64 = 0.0
    y: t.float64 = 0.0
    z: t.float64 = 0.0
    w: t.float64 = 1.0


@dataclass
class Pose_(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    """``geometry_msgs/msg/Pose``."""

    position: Point_ = field(default_factory=Point_)
    orientation: Quaternion_ = field(default_factory=Quaternion_)


@dataclass
class PoseStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::PoseStamped_"):
    """``geometry_msgs/msg/PoseStamped``."""

    header: Header_ = field(default_factory=Header_)
    pose: Pose_ = field(default_factory=Pose_)


@dataclass
class Twist_(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    """``geometry_msgs/msg/Twist``."""

    linear: Vector3_ = field(default_factory=Vector3_)
    angular: Vector3_ = field(default_factory=Vector3_)


@dataclass
class TwistStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::TwistStamped_"):
    """``geometry_msgs/msg/TwistStamped``."""

    header: Header_ = field(default_factory=Header_)
    twist: Twist_ = field(default_factory=Twist_)


@dataclass
class Wrench_(IdlStruct, typename="geometry_msgs::msg::dds_::Wrench_"):
    """``geometry_msgs/msg/Wrench``."""

    force: Vector3_ = field(default_factory=Vector3_)
    torque: Vector3_ = field(default_factory=Vector3_)


@dataclass
class WrenchStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::WrenchStamped_"):
    """``geometry_msgs/msg/WrenchStamped``."""

    header: Header_ = field(default_factory=Header_)
    wrench: Wrench_ = field(default_factory=Wrench_)


# -- sensor_msgs -----------------------------------------------------------------------


@dataclass
class JointState_(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    """``sensor_msgs/msg/JointState``."""

    header: Header_ = field(default_factory=Header_)
    name: t.sequence[str] = field(default_factory=list)
    position: t.sequence[t.float64] = field(default_factory=list)
    velocity: t.sequence[t.float64] = field(default_factory=list)
    effort: t.sequence[t.float64] = field(default_factory=list)


@dataclass
class Image_(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    """``sensor_msgs/msg/Image``."""

    header: Header_ = field(default_factory=Header_)
    height: t.uint32 = 0
    width: t.uint32 = 0
    encoding: str = ""
    is_bigendian: t.uint8 = 0
    step: t.uint32 = 0
    data: t.sequence[t.uint8] = b""


@dataclass
class CompressedImage_(IdlStruct, typename="sensor_msgs::msg::dds_::CompressedImage_"):
    """``sensor_msgs/msg/CompressedImage``."""

    header: Header_ = field(default_factory=Header_)
    format: str = ""
    data: t.sequence[t.uint8] = b""


def _zero9() -> List[float]:
    return [0.0] * 9


@dataclass
class Imu_(IdlStruct, typename="sensor_msgs::msg::dds_::Imu_"):
    """``sensor_msgs/msg/Imu``."""

    header: Header_ = field(default_factory=Header_)
    orientation: Quaternion_ = field(default_factory=Quaternion_)
    orientation_covariance: t.array[t.float64, 9] = field(default_factory=_zero9)
    angular_velocity: Vector3_ = field(default_factory=Vector3_)
    angular_velocity_covariance: t.array[t.float64, 9] = field(default_factory=_zero9)
    linear_acceleration: Vector3_ = field(default_factory=Vector3_)
    linear_acceleration_covariance: t.array[t.float64, 9] = field(default_factory=_zero9)


def _octets_as_bytes(cls: type, member: str) -> None:
    """Read and write the ``uint8[]`` field ``member`` of ``cls`` as one ``bytes`` object.

    The struct declares it ``sequence<uint8>`` (so its XTypes type information is the real
    one), but cyclonedds's generic machine for it goes element by element (a Python int per
    byte: ~20 ms per 640x480 rgb8 image). Cyclone's ``bytes`` machine puts exactly the same
    bytes on the wire (a uint32 length, then the octets; no alignment inside) and copies
    them in one go, so it takes the sequence's place in both CDR versions' machines. A
    test compares the result with rosbags' CDR serializer.

    Raises:
        ImportError: this cyclonedds's internals are not what this was written for.
    """
    from cyclonedds.idl._machinery import BytesMachine, PlainCdrV2SequenceOfPrimitiveMachine, StructMachine

    support = getattr(cls, "__idl__", None)
    if support is None:
        raise ImportError(f"cyclonedds: {cls.__name__} has no __idl__")
    support.populate()
    for machine in (support.v1_machine, support.v2_machine):
        if not isinstance(machine, StructMachine) or not isinstance(
            machine.members_machines.get(member), PlainCdrV2SequenceOfPrimitiveMachine
        ):
            raise ImportError(f"cyclonedds: unexpected machine for {cls.__name__}.{member}: {machine!r}")
        machine.members_machines[member] = BytesMachine()  # type: ignore[no-untyped-call]


_octets_as_bytes(Image_, "data")
_octets_as_bytes(CompressedImage_, "data")
