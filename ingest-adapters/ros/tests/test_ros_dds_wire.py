"""The ROS 2 wire mapping of the DDS front end, checked against an independent CDR
implementation (rosbags' ROS 2 Humble type store): for every supported type, the bytes
Cyclone DDS writes (plain CDR, XCDR1) are the bytes rosbags writes for the same message,
and each side reads the other's. Plus the names: ``rt/x``, ``pkg::msg::dds_::T_``."""

import struct
from typing import Any, Callable, Dict, Tuple

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from wshard_ros import EVENT_TYPES, STREAM_TYPES, loads_mapping
from wshard_ros.ros2dds import idl
from wshard_ros.ros2dds.errors import UnsupportedTopicType
from wshard_ros.ros2dds.names import DDS_TYPES, dds_topic_name, dds_type_for, dds_type_name, missing_types

ROS2 = get_typestore(Stores.ROS2_HUMBLE)
T = ROS2.types
NAN_PAYLOAD = struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0]
F64 = [1.5, -0.0, 5e-324, NAN_PAYLOAD, 1e300]


def both_time(sec: int, nsec: int) -> Tuple[Any, Any]:
    return idl.Time_(sec, nsec), T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec)


def both_header(frame: str = "base_link") -> Tuple[Any, Any]:
    d, r = both_time(1700000001, 999999999)
    return idl.Header_(d, frame), T["std_msgs/msg/Header"](stamp=r, frame_id=frame)


def both_vec(cls_d: Any, name: str, *v: float) -> Tuple[Any, Any]:
    keys = "xyzw"[: len(v)]
    return cls_d(*v), T[name](**dict(zip(keys, v)))


def joint_state() -> Tuple[Any, Any]:
    hd, hr = both_header()
    names = ["shoulder", "\u00e9lbow", "w"]
    d = idl.JointState_(hd, names, F64[:3], [], F64[2:5])
    r = T["sensor_msgs/msg/JointState"](
        header=hr,
        name=names,
        position=np.array(F64[:3]),
        velocity=np.array([], dtype=np.float64),
        effort=np.array(F64[2:5]),
    )
    return d, r


def image() -> Tuple[Any, Any]:
    hd, hr = both_header("cam")
    data = bytes(range(256)) * 3 + b"\x01"  # 769 bytes: the length is not a multiple of 4
    d = idl.Image_(hd, 1, 256, "rgb8", 1, 769, data)
    r = T["sensor_msgs/msg/Image"](
        header=hr,
        height=1,
        width=256,
        encoding="rgb8",
        is_bigendian=1,
        step=769,
        data=np.frombuffer(data, dtype=np.uint8),
    )
    return d, r


def compressed_image() -> Tuple[Any, Any]:
    hd, hr = both_header("cam")
    data = b"\xff\xd8\xff" + bytes(10)
    d = idl.CompressedImage_(hd, "jpeg", data)
    r = T["sensor_msgs/msg/CompressedImage"](header=hr, format="jpeg", data=np.frombuffer(data, dtype=np.uint8))
    return d, r


def imu() -> Tuple[Any, Any]:
    hd, hr = both_header("imu")
    qd, qr = both_vec(idl.Quaternion_, "geometry_msgs/msg/Quaternion", 0.1, 0.2, 0.3, 0.9)
    ad, ar = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", *F64[:3])
    ld, lr = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", 9.81, 0.0, -1.0)
    cov = [float(k) / 7 for k in range(9)]
    d = idl.Imu_(hd, qd, cov, ad, cov[::-1], ld, cov)
    r = T["sensor_msgs/msg/Imu"](
        header=hr,
        orientation=qr,
        orientation_covariance=np.array(cov),
        angular_velocity=ar,
        angular_velocity_covariance=np.array(cov[::-1]),
        linear_acceleration=lr,
        linear_acceleration_covariance=np.array(cov),
    )
    return d, r


def pose_stamped() -> Tuple[Any, Any]:
    hd, hr = both_header()
    pd, pr = both_vec(idl.Point_, "geometry_msgs/msg/Point", 1.0, 2.0, 3.0)
    qd, qr = both_vec(idl.Quaternion_, "geometry_msgs/msg/Quaternion", 0.0, 0.0, 0.0, 1.0)
    d = idl.PoseStamped_(hd, idl.Pose_(pd, qd))
    r = T["geometry_msgs/msg/PoseStamped"](header=hr, pose=T["geometry_msgs/msg/Pose"](position=pr, orientation=qr))
    return d, r


def twist_stamped() -> Tuple[Any, Any]:
    hd, hr = both_header()
    ld, lr = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", 0.5, 0.0, -0.5)
    ad, ar = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", *F64[2:5])
    d = idl.TwistStamped_(hd, idl.Twist_(ld, ad))
    r = T["geometry_msgs/msg/TwistStamped"](header=hr, twist=T["geometry_msgs/msg/Twist"](linear=lr, angular=ar))
    return d, r


def wrench_stamped() -> Tuple[Any, Any]:
    hd, hr = both_header("ft")
    fd, fr = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", 1.0, -2.0, 30.0)
    td, tr = both_vec(idl.Vector3_, "geometry_msgs/msg/Vector3", 0.1, 0.2, 0.3)
    d = idl.WrenchStamped_(hd, idl.Wrench_(fd, td))
    r = T["geometry_msgs/msg/WrenchStamped"](header=hr, wrench=T["geometry_msgs/msg/Wrench"](force=fr, torque=tr))
    return d, r


def float64_multi_array() -> Tuple[Any, Any]:
    dims = [("rows", 2, 6), ("cols", 3, 3)]
    d = idl.Float64MultiArray_(idl.MultiArrayLayout_([idl.MultiArrayDimension_(*x) for x in dims], 0), F64 + [7.0])
    r = T["std_msgs/msg/Float64MultiArray"](
        layout=T["std_msgs/msg/MultiArrayLayout"](
            dim=[T["std_msgs/msg/MultiArrayDimension"](label=a, size=b, stride=c) for a, b, c in dims], data_offset=0
        ),
        data=np.array(F64 + [7.0]),
    )
    return d, r


SCALARS: Dict[str, Any] = {
    "std_msgs/Float64": NAN_PAYLOAD,
    "std_msgs/Float32": 0.5,
    "std_msgs/Int64": -(2**63),
    "std_msgs/Int32": -(2**31),
    "std_msgs/Int16": -300,
    "std_msgs/Int8": -128,
    "std_msgs/UInt64": 2**64 - 1,
    "std_msgs/UInt32": 2**32 - 1,
    "std_msgs/UInt16": 65535,
    "std_msgs/UInt8": 255,
    "std_msgs/String": "go to the \u00e9tag\u00e8re",
    "std_msgs/Bool": True,
}


def scalar(name: str) -> Callable[[], Tuple[Any, Any]]:
    def build() -> Tuple[Any, Any]:
        value = SCALARS[name]
        pkg, short = name.split("/")
        return DDS_TYPES[name](data=value), T[f"{pkg}/msg/{short}"](data=value)

    return build


BUILDERS: Dict[str, Callable[[], Tuple[Any, Any]]] = {
    "sensor_msgs/JointState": joint_state,
    "sensor_msgs/Image": image,
    "sensor_msgs/CompressedImage": compressed_image,
    "sensor_msgs/Imu": imu,
    "geometry_msgs/PoseStamped": pose_stamped,
    "geometry_msgs/TwistStamped": twist_stamped,
    "geometry_msgs/WrenchStamped": wrench_stamped,
    "std_msgs/Float64MultiArray": float64_multi_array,
    **{name: scalar(name) for name in SCALARS},
}


def ros2_name(canonical: str) -> str:
    pkg, short = canonical.split("/")
    return f"{pkg}/msg/{short}"


def test_ros_dds_wire_every_recorded_type_has_an_idl_struct() -> None:
    assert missing_types() == []
    assert set(BUILDERS) == set(STREAM_TYPES) | set(EVENT_TYPES) == set(DDS_TYPES)


@pytest.mark.parametrize("canonical", sorted(BUILDERS))
def test_ros_dds_wire_cdr_matches_rosbags(canonical: str) -> None:
    """Cyclone's XCDR1 bytes == rosbags' CDR bytes (ROS 2 Humble definitions), both ways."""
    dds_msg, ros_msg = BUILDERS[canonical]()
    ours = dds_msg.serialize(use_version_2=False)
    theirs = bytes(ROS2.serialize_cdr(ros_msg, ros2_name(canonical)))
    assert ours[:4] == b"\x00\x01\x00\x00", "plain CDR, little-endian encapsulation"
    assert ours == theirs
    # Cyclone reads rosbags' bytes back to the same message, and rosbags reads ours.
    back = type(dds_msg).deserialize(theirs)
    assert back.serialize(use_version_2=False) == ours
    again = ROS2.deserialize_cdr(ours, ros2_name(canonical))
    assert bytes(ROS2.serialize_cdr(again, ros2_name(canonical))) == theirs


def test_ros_dds_wire_octet_sequences_read_as_bytes() -> None:
    """``uint8[]`` reads as one bytes object (not a list of ints), bit for bit."""
    dds_msg, _ = image()
    back = idl.Image_.deserialize(dds_msg.serialize(use_version_2=False))
    assert isinstance(back.data, bytes) and back.data == dds_msg.data
    big = idl.Image_(data=bytes(range(256)) * 3600)
    assert idl.Image_.deserialize(big.serialize()).data == big.data


def test_ros_dds_wire_names() -> None:
    assert dds_topic_name("/joint_states") == "rt/joint_states"
    assert dds_topic_name("/camera/color/image_raw") == "rt/camera/color/image_raw"
    for canonical, cls in DDS_TYPES.items():
        assert cls.__idl__.idl_transformed_typename == dds_type_name(canonical)
    assert dds_type_name("sensor_msgs/JointState") == "sensor_msgs::msg::dds_::JointState_"
    assert idl.Header_.__idl__.idl_transformed_typename == "std_msgs::msg::dds_::Header_"
    assert idl.Time_.__idl__.idl_transformed_typename == "builtin_interfaces::msg::dds_::Time_"


def test_ros_dds_wire_unsupported_type_names_topic_and_type() -> None:
    """A type with no IDL struct here is refused naming topic and type (the mapping itself
    refuses types the converter core does not know; this is the front end's own check)."""
    spec = loads_mapping('[topics."/scan"]\ntype = "std_msgs/Float64"\n').topics[0]
    assert dds_type_for(spec.topic, spec.type) is idl.Float64_
    with pytest.raises(UnsupportedTopicType) as e:
        dds_type_for("/points", "sensor_msgs/PointCloud2")
    assert "'/points'" in str(e.value) and "'sensor_msgs/PointCloud2'" in str(e.value)
    assert e.value.topic == "/points" and e.value.msg_type == "sensor_msgs/PointCloud2"
