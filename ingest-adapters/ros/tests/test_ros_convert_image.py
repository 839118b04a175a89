"""Image, CompressedImage and event converters on rosbags messages: pixels bit-exact
against numpy whatever the row padding and byte order, every refusal."""

from types import SimpleNamespace

import numpy as np
import pytest
import rosmsgs as R

from wshard_ros import (
    EventSpec,
    MessageError,
    MessageTypeMismatch,
    ShapeMismatch,
    converter_for,
    event_converter_for,
    loads_mapping,
)

RECV = 42
H, W = 5, 7

# encoding -> (numpy dtype, channels, wire dtype, modality)
CASES = {
    "rgb8": (np.uint8, 3, "u8", "rgb"),
    "bgr8": (np.uint8, 3, "u8", "bgr"),
    "mono8": (np.uint8, 1, "u8", "mono"),
    "mono16": (np.uint16, 1, "u16", "mono"),
    "16UC1": (np.uint16, 1, "u16", "depth"),
    "32FC1": (np.float32, 1, "f32", "depth"),
}


def spec(msg_type: str, topic: str = "/cam", extra: str = ""):
    return loads_mapping(f'[topics."{topic}"]\ntype = "{msg_type}"\n{extra}').topics[0]


def pixels(dtype, channels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (H, W, channels) if channels > 1 else (H, W)
    if dtype == np.float32:
        arr = rng.standard_normal(shape).astype(np.float32)
        arr.flat[0] = np.nan
        arr.flat[1] = -0.0
        return arr
    return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype, endpoint=True)


def encode(arr: np.ndarray, pad: int, bigendian: bool) -> tuple:
    """The ROS wire image: rows of ``step = row + pad`` bytes, in the given byte order."""
    order = ">" if bigendian else "<"
    raw = arr.astype(arr.dtype.newbyteorder(order)).reshape(H, -1).view(np.uint8)
    rows = np.zeros((H, raw.shape[1] + pad), dtype=np.uint8)
    rows[:, : raw.shape[1]] = raw
    rows[:, raw.shape[1] :] = 0xAB  # padding that must not be recorded
    return rows.shape[1], rows.tobytes()


@pytest.mark.parametrize("encoding", list(CASES))
@pytest.mark.parametrize("pad", [0, 3])
@pytest.mark.parametrize("bigendian", [False, True])
def test_ros_convert_image_bit_exact(encoding: str, pad: int, bigendian: bool) -> None:
    dtype, channels, wire, modality = CASES[encoding]
    conv = converter_for(spec("sensor_msgs/Image", extra='codec = "zstd"\n'))
    for seed in range(2):
        arr = pixels(dtype, channels, seed)
        step, data = encode(arr, pad, bigendian)
        s = conv.convert(R.image(encoding, H, W, step, data, bigendian), RECV)
        assert s.payloads[0] == arr.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
        assert s.payloads[1] == np.int64(RECV).astype("<i8").tobytes()
    image = conv.channels()[0]
    shape = (H, W, 3) if channels == 3 else (H, W)
    assert (image.name, image.dtype.name.lower(), image.shape, image.modality) == ("image", wire, shape, modality)
    assert conv.metadata()["encoding"] == encoding


def test_ros_convert_image_rospy_bytes_and_prefix() -> None:
    """rospy gives ``data`` as bytes; a shared stream's prefix names the channels."""
    conv = converter_for(
        loads_mapping(
            '[topics."/a"]\ntype = "sensor_msgs/Image"\nstream = "cam"\nprefix = "rgb"\n'
            '[topics."/b"]\ntype = "sensor_msgs/Image"\nstream = "cam"\nprefix = "depth"\n'
        ).topics[1]
    )
    arr = pixels(np.uint16, 1, 3)
    step, data = encode(arr, 2, False)
    msg = SimpleNamespace(
        _type="sensor_msgs/Image",
        header=SimpleNamespace(stamp=R.rospy_like_stamp(1, 2), frame_id="cam"),
        height=H,
        width=W,
        encoding="16UC1",
        is_bigendian=0,
        step=step,
        data=data,
    )
    s = conv.convert(msg, RECV)
    assert [c.name for c in conv.channels()] == ["depth/image", "depth/receive_t_ns"]
    assert s.payloads[0] == arr.astype("<u2").tobytes() and s.t_ns == 10**9 + 2


def test_ros_convert_image_refusals() -> None:
    conv = converter_for(spec("sensor_msgs/Image", "/cam"))
    arr = pixels(np.uint8, 3, 0)
    step, data = encode(arr, 0, False)

    def refused(msg, field: str, words: str, cls=MessageError) -> None:
        with pytest.raises(cls) as e:
            conv.convert(msg, RECV)
        assert type(e.value) is cls
        assert (e.value.topic, e.value.field) == ("/cam", field) and words in str(e.value)

    refused(R.image("yuv422", H, W, step, data), "encoding", "not supported")
    refused(R.image("rgb8", H, W, step - 1, data[: (step - 1) * H]), "step", "< 21 bytes")
    refused(R.image("rgb8", H, W, step, data[:-1]), "data", f"step {step} x height {H}")
    refused(R.image("rgb8", H, W, step, data + b"\0"), "data", "bytes")
    bad = R.image("rgb8", H, W, step, data)
    bad.data = np.zeros(4, dtype=np.uint16)
    refused(bad, "data", "not bytes")
    conv.convert(R.image("rgb8", H, W, step, data), RECV)  # learned: rgb8 [5, 7, 3]
    refused(R.image("bgr8", H, W, step, data), "encoding", "'rgb8'", ShapeMismatch)
    small = pixels(np.uint8, 3, 1)[:, :4]
    refused(R.image("rgb8", H, 4, 12, small.tobytes()), "image", "u8[5, 7, 3]", ShapeMismatch)
    refused(R.joint_state([1.0]), "<type>", "sensor_msgs/JointState", MessageTypeMismatch)


def test_ros_convert_compressed_image_bytes() -> None:
    conv = converter_for(spec("sensor_msgs/CompressedImage", "/jpeg", "max_bytes = 16\n"))
    cls = R.T["sensor_msgs/msg/CompressedImage"]
    jpeg = bytes(range(200, 211))
    s = conv.convert(cls(header=R.header(), format="jpeg", data=np.frombuffer(jpeg, np.uint8).copy()), RECV)
    assert [(c.name, c.dtype.name.lower(), c.shape) for c in conv.channels()] == [
        ("data", "u8", (16,)),
        ("size", "u32", ()),
        ("receive_t_ns", "i64", ()),
    ]
    assert s.payloads[:2] == [jpeg + bytes(5), np.uint32(11).astype("<u4").tobytes()]
    assert conv.metadata()["format"] == "jpeg"
    with pytest.raises(MessageError) as e:
        conv.convert(cls(header=R.header(), format="jpeg", data=np.zeros(17, np.uint8)), RECV)
    assert (e.value.topic, e.value.field) == ("/jpeg", "data") and "max_bytes = 16" in str(e.value)
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(cls(header=R.header(), format="png", data=np.zeros(3, np.uint8)), RECV)
    assert (e.value.field, e.value.expected, e.value.got) == ("format", "jpeg", "png")


def test_ros_convert_events() -> None:
    m = loads_mapping(
        '[events."/say"]\ntype = "std_msgs/String"\nlabel = "instruction"\n[events."/ok"]\ntype = "std_msgs/Bool"\n'
    )
    text, flag = (event_converter_for(e) for e in m.events)
    ev = text.convert(R.T["std_msgs/msg/String"](data="pick up the red cube"), 7)
    assert (ev.t_ns, ev.label, ev.data) == (7, "instruction", "pick up the red cube")
    ev = flag.convert(R.T["std_msgs/msg/Bool"](data=True), 8)
    assert (ev.t_ns, ev.label, ev.data) == (8, "/ok", True) and type(ev.data) is bool
    assert flag.convert(SimpleNamespace(_type="std_msgs/Bool", data=np.bool_(False)), 9).data is False
    for conv, value, word in ((text, b"bytes", "not a string"), (flag, 1, "not a bool")):
        with pytest.raises(MessageError) as e:
            conv.convert(SimpleNamespace(data=value), 1)
        assert (e.value.topic, e.value.field) == (conv.spec.topic, "data") and word in str(e.value)
    with pytest.raises(MessageError) as e:
        text.convert(SimpleNamespace(), 1)
    assert e.value.field == "data"
    with pytest.raises(MessageTypeMismatch) as e:
        text.convert(R.T["std_msgs/msg/Bool"](data=True), 1)
    assert (e.value.topic, e.value.expected, e.value.got) == ("/say", "std_msgs/String", "std_msgs/Bool")
    assert isinstance(m.events[0], EventSpec)
