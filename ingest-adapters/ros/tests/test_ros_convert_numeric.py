"""Numeric converters on messages built with rosbags' type store: channels learned from the
first message, payloads bit-exact against numpy, the two clocks, every refusal."""

import struct
from types import SimpleNamespace

import numpy as np
import pytest
import rosmsgs as R
from wshard_client import Codec, DType

from wshard_ros import (
    MessageError,
    MessageTypeMismatch,
    NotLearned,
    ShapeMismatch,
    TopicSpec,
    converter_for,
    loads_mapping,
)

STAMP_NS = 1700000000 * 10**9 + 123456789
RECV = 1700000000 * 10**9 + 999


def spec(msg_type: str, topic: str = "/t", **opts: object) -> TopicSpec:
    lines = [f'[topics."{topic}"]', f'type = "{msg_type}"']
    lines += [f"{k} = {v!r}".replace("'", '"') for k, v in opts.items()]
    return loads_mapping("\n".join(lines) + "\n").topics[0]


def layout(conv) -> list:
    return [(c.name, c.dtype.name.lower(), c.shape) for c in conv.channels()]


# values whose bits a float conversion would change: NaN with a payload, -0.0, a denormal
ODD = [float.fromhex("0x1.0000000000001p+0"), -0.0, 5e-324, struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0]]


def test_ros_convert_joint_state_bit_exact() -> None:
    conv = converter_for(spec("sensor_msgs/JointState", "/joint_states", codec="lz4"))
    with pytest.raises(NotLearned):
        conv.channels()
    pos = np.array([0.1, -2.5] + ODD + [1e300], dtype=np.float64)
    vel = np.arange(7, dtype=np.float64) / 3
    eff = -np.arange(7, dtype=np.float64) * 1e-9
    msg = R.joint_state(pos, vel, eff)
    sample = conv.convert(msg, RECV)
    assert layout(conv) == [
        ("position", "f64", (7,)),
        ("velocity", "f64", (7,)),
        ("effort", "f64", (7,)),
        ("receive_t_ns", "i64", ()),
    ]
    assert all(c.codec == Codec.LZ4 for c in conv.channels()[:3])
    assert conv.channels()[0].modality == "proprioception"
    assert sample.t_ns == STAMP_NS
    assert sample.payloads == [
        pos.astype("<f8").tobytes(),
        vel.astype("<f8").tobytes(),
        eff.astype("<f8").tobytes(),
        np.int64(RECV).astype("<i8").tobytes(),
    ]
    assert conv.metadata()["name"] == [f"j{i}" for i in range(7)]
    assert conv.metadata()["topic"] == "/joint_states" and conv.metadata()["time"] == "header"


def test_ros_convert_joint_state_rospy_lists_and_empty_fields() -> None:
    """rospy gives tuples of floats and ``secs``/``nsecs``; empty velocity/effort have no channel."""
    conv = converter_for(spec("sensor_msgs/JointState"))
    pos = (0.5, *ODD)
    msg = SimpleNamespace(
        _type="sensor_msgs/JointState",
        header=SimpleNamespace(stamp=R.rospy_like_stamp(12, 34), frame_id=""),
        name=["a", "b", "c", "d", "e"],
        position=pos,
        velocity=(),
        effort=[],
    )
    sample = conv.convert(msg, RECV)
    assert layout(conv) == [("position", "f64", (5,)), ("receive_t_ns", "i64", ())]
    assert sample.t_ns == 12 * 10**9 + 34
    assert sample.payloads[0] == np.array(pos, dtype="<f8").tobytes()
    # the second message may keep them empty ...
    assert conv.convert(msg, RECV).payloads[0] == sample.payloads[0]
    # ... but not fill one in
    msg.effort = [1.0] * 5
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(msg, RECV)
    assert (e.value.topic, e.value.field, e.value.expected, e.value.got) == ("/t", "effort", "absent", "f64[5]")


def test_ros_convert_joint_state_shape_and_names_change_refused() -> None:
    conv = converter_for(spec("sensor_msgs/JointState", "/arm"))
    conv.convert(R.joint_state([1.0] * 7, [0.0] * 7, [0.0] * 7), RECV)
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(R.joint_state([1.0] * 6, [0.0] * 6, [0.0] * 6), RECV)
    assert (e.value.topic, e.value.field) == ("/arm", "name")  # the names went first: 7 -> 6 joints
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(R.joint_state([1.0] * 7, [0.0] * 6, [0.0] * 7), RECV)
    assert (e.value.topic, e.value.field, e.value.expected, e.value.got) == ("/arm", "velocity", "f64[7]", "f64[6]")
    assert "'/arm'" in str(e.value) and "'velocity'" in str(e.value)
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(R.joint_state([1.0] * 7, [0.0] * 7, [0.0] * 7, names=[f"k{i}" for i in range(7)]), RECV)
    assert e.value.field == "name"
    assert conv.convert(R.joint_state([2.0] * 7, [0.0] * 7, [0.0] * 7), RECV).payloads[0] == struct.pack(
        "<7d", *[2.0] * 7
    )


def test_ros_convert_time_sources_and_stamps() -> None:
    recv = converter_for(spec("sensor_msgs/JointState", time="receive"))
    s = recv.convert(R.joint_state([1.0]), RECV)
    assert s.t_ns == RECV and s.payloads[-1] == struct.pack("<q", STAMP_NS)
    assert layout(recv)[-1] == ("header_t_ns", "i64", ())
    # ROS 1 (Noetic) header with seq
    ros1 = converter_for(spec("sensor_msgs/JointState"))
    js1 = R.ROS1.types["sensor_msgs/msg/JointState"](
        header=R.header(5, 6, store=R.ROS1),
        name=["a"],
        position=np.array([1.0]),
        velocity=np.array([]),
        effort=np.array([]),
    )
    assert ros1.convert(js1, RECV).t_ns == 5 * 10**9 + 6
    # a headerless type: receive time, no extra clock channel
    scalar = converter_for(spec("std_msgs/Float64"))
    s = scalar.convert(R.T["std_msgs/msg/Float64"](data=2.5), RECV)
    assert s.t_ns == RECV and layout(scalar) == [("data", "f64", ())]


@pytest.mark.parametrize(
    "stamp, words",
    [
        (R.time(1, 1_000_000_000), "outside 0..1e9"),
        (R.time(-5, 0), "negative"),
        (SimpleNamespace(seconds=3), "no sec/nanosec"),
    ],
)
def test_ros_convert_bad_stamp(stamp, words: str) -> None:
    conv = converter_for(spec("sensor_msgs/JointState", "/js"))
    msg = R.joint_state([1.0])
    msg.header.stamp = stamp
    with pytest.raises(MessageError) as e:
        conv.convert(msg, RECV)
    assert (e.value.topic, e.value.field) == ("/js", "header.stamp") and words in str(e.value)


def test_ros_convert_unreadable_field_and_wrong_type() -> None:
    conv = converter_for(spec("sensor_msgs/JointState", "/js"))
    msg = R.joint_state([1.0])
    msg.position = None
    with pytest.raises(MessageError) as e:
        conv.convert(msg, RECV)
    assert (e.value.topic, e.value.field) == ("/js", "position")
    with pytest.raises(MessageError) as e:
        conv.convert(SimpleNamespace(name=["a"]), RECV)
    assert e.value.field == "position"
    with pytest.raises(MessageTypeMismatch) as e:
        conv.convert(R.T["std_msgs/msg/Float64"](data=1.0), RECV)
    assert (e.value.topic, e.value.expected, e.value.got) == ("/js", "sensor_msgs/JointState", "std_msgs/Float64")


def test_ros_convert_imu() -> None:
    conv = converter_for(spec("sensor_msgs/Imu", "/imu"))
    cov = [np.arange(9, dtype=np.float64) * k for k in (0.5, 0.25, 0.125)]
    msg = R.T["sensor_msgs/msg/Imu"](
        header=R.header(),
        orientation=R.quat(0.1, 0.2, 0.3, ODD[0]),
        orientation_covariance=cov[0],
        angular_velocity=R.vec3(ODD[1], ODD[2], ODD[3]),
        angular_velocity_covariance=cov[1],
        linear_acceleration=R.vec3(0.0, 0.0, 9.81),
        linear_acceleration_covariance=cov[2],
    )
    s = conv.convert(msg, RECV)
    assert layout(conv) == [
        ("orientation", "f64", (4,)),
        ("orientation_covariance", "f64", (9,)),
        ("angular_velocity", "f64", (3,)),
        ("angular_velocity_covariance", "f64", (9,)),
        ("linear_acceleration", "f64", (3,)),
        ("linear_acceleration_covariance", "f64", (9,)),
        ("receive_t_ns", "i64", ()),
    ]
    assert s.payloads[:6] == [
        np.array([0.1, 0.2, 0.3, ODD[0]], "<f8").tobytes(),
        cov[0].astype("<f8").tobytes(),
        np.array(ODD[1:4], "<f8").tobytes(),
        cov[1].astype("<f8").tobytes(),
        np.array([0.0, 0.0, 9.81], "<f8").tobytes(),
        cov[2].astype("<f8").tobytes(),
    ]
    assert conv.channels()[0].modality == "imu"
    msg.angular_velocity_covariance = np.zeros(4)
    with pytest.raises(MessageError) as e:
        conv.convert(msg, RECV)
    assert (e.value.topic, e.value.field) == ("/imu", "angular_velocity_covariance")


def test_ros_convert_geometry_stamped() -> None:
    w = converter_for(spec("geometry_msgs/WrenchStamped", "/ft"))
    wrench = R.T["geometry_msgs/msg/WrenchStamped"](
        header=R.header(), wrench=R.T["geometry_msgs/msg/Wrench"](force=R.vec3(1, 2, ODD[3]), torque=R.vec3(-0.0, 5, 6))
    )
    s = w.convert(wrench, RECV)
    assert layout(w)[:2] == [("force", "f64", (3,)), ("torque", "f64", (3,))]
    assert s.payloads[:2] == [np.array([1, 2, ODD[3]], "<f8").tobytes(), np.array([-0.0, 5, 6], "<f8").tobytes()]

    p = converter_for(spec("geometry_msgs/PoseStamped", "/pose"))
    pose = R.T["geometry_msgs/msg/PoseStamped"](
        header=R.header(frame_id="world"),
        pose=R.T["geometry_msgs/msg/Pose"](
            position=R.T["geometry_msgs/msg/Point"](x=1.5, y=-2.0, z=ODD[2]), orientation=R.quat(0, 0, 0.7071, 0.7071)
        ),
    )
    s = p.convert(pose, RECV)
    assert layout(p)[:2] == [("position", "f64", (3,)), ("orientation", "f64", (4,))]
    assert s.payloads[:2] == [
        np.array([1.5, -2.0, ODD[2]], "<f8").tobytes(),
        np.array([0, 0, 0.7071, 0.7071], "<f8").tobytes(),
    ]
    assert p.metadata()["frame_id"] == "world"
    pose.header.frame_id = "map"
    with pytest.raises(ShapeMismatch) as e:
        p.convert(pose, RECV)
    assert (e.value.field, e.value.expected, e.value.got) == ("frame_id", "world", "map")

    t = converter_for(spec("geometry_msgs/TwistStamped", "/cmd"))
    twist = R.T["geometry_msgs/msg/TwistStamped"](
        header=R.header(), twist=R.T["geometry_msgs/msg/Twist"](linear=R.vec3(0.1, 0, 0), angular=R.vec3(0, 0, ODD[0]))
    )
    s = t.convert(twist, RECV)
    assert layout(t)[:2] == [("linear", "f64", (3,)), ("angular", "f64", (3,))]
    assert s.payloads[:2] == [np.array([0.1, 0, 0], "<f8").tobytes(), np.array([0, 0, ODD[0]], "<f8").tobytes()]
    twist.twist.linear = None
    with pytest.raises(MessageError) as e:
        t.convert(twist, RECV)
    assert (e.value.topic, e.value.field) == ("/cmd", "twist.linear")


def _multi(data, dims=(), offset=0):
    dim = [R.T["std_msgs/msg/MultiArrayDimension"](label=f"d{i}", size=s, stride=0) for i, s in enumerate(dims)]
    layout_ = R.T["std_msgs/msg/MultiArrayLayout"](dim=dim, data_offset=offset)
    return R.T["std_msgs/msg/Float64MultiArray"](layout=layout_, data=np.array(data, dtype=np.float64))


def test_ros_convert_float64_multi_array() -> None:
    data = np.arange(6, dtype=np.float64) * 0.1
    shaped = converter_for(spec("std_msgs/Float64MultiArray", "/m"))
    s = shaped.convert(_multi(data, (2, 3)), RECV)
    assert layout(shaped) == [("data", "f64", (2, 3))] and s.payloads == [data.astype("<f8").tobytes()]
    assert s.t_ns == RECV
    with pytest.raises(ShapeMismatch) as e:
        shaped.convert(_multi(data, (3, 2)), RECV)
    assert (e.value.topic, e.value.field, e.value.expected, e.value.got) == ("/m", "data", "f64[2, 3]", "f64[3, 2]")
    flat = converter_for(spec("std_msgs/Float64MultiArray"))
    flat.convert(_multi(data, (4, 2)), RECV)  # dims that do not multiply to the length: flat
    assert layout(flat) == [("data", "f64", (6,))]
    flat2 = converter_for(spec("std_msgs/Float64MultiArray"))
    flat2.convert(_multi(data, (2, 3), offset=1), RECV)
    assert layout(flat2) == [("data", "f64", (6,))]


@pytest.mark.parametrize(
    "msg_type, dtype, value, bad",
    [
        ("std_msgs/Float64", "f64", ODD[3], "x"),
        ("std_msgs/Float32", "f32", float(np.float32(0.1)), "x"),
        ("std_msgs/Int64", "i64", -(2**63), 2**63),
        ("std_msgs/Int32", "i32", -(2**31), 2**31),
        ("std_msgs/Int16", "i16", -(2**15), 2**15),
        ("std_msgs/Int8", "i8", -128, 128),
        ("std_msgs/UInt64", "u64", 2**64 - 1, -1),
        ("std_msgs/UInt32", "u32", 2**32 - 1, 2**32),
        ("std_msgs/UInt16", "u16", 65535, 65536),
        ("std_msgs/UInt8", "u8", 255, 256),
    ],
)
def test_ros_convert_scalars(msg_type: str, dtype: str, value, bad) -> None:
    conv = converter_for(spec(msg_type, "/s"))
    cls = R.T[msg_type.replace("/", "/msg/")]
    s = conv.convert(cls(data=value), RECV)
    np_dtype = DType.parse(dtype).info.numpy
    assert layout(conv) == [("data", dtype, ())]
    assert s.payloads == [np.array(value, dtype=np_dtype).astype(np.dtype(np_dtype).newbyteorder("<")).tobytes()]
    with pytest.raises(MessageError) as e:
        conv.convert(cls(data=bad), RECV)
    assert (e.value.topic, e.value.field) == ("/s", "data")
