"""The mapping file: parsing, defaults, stream grouping, and every refusal naming file,
topic and key."""

from pathlib import Path

import pytest

from wshard_ros import MappingError, UnknownMessageType, load_mapping, loads_mapping

GOOD = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 1000

[topics."/camera/color/image_raw"]
type = "sensor_msgs/msg/Image"
stream = "camera"
prefix = "rgb"
codec = "lz4"

[topics."/camera/depth/image_raw"]
type = "sensor_msgs/Image"
stream = "camera"
prefix = "depth"
codec = "zstd-5"

[topics."/gripper/width"]
type = "std_msgs/Float64"

[topics."/imu"]
type = "sensor_msgs/Imu"
time = "receive"

[topics."/wrist/compressed"]
type = "sensor_msgs/CompressedImage"
compressed = "bytes"
max_bytes = 200000

[events."/instruction"]
type = "std_msgs/String"
label = "instruction"

[events."/success"]
type = "std_msgs/msg/Bool"
"""


def test_ros_mapping_good_file(tmp_path: Path) -> None:
    path = tmp_path / "bridge.toml"
    path.write_text(GOOD)
    m = load_mapping(path)
    assert m.file == str(path)
    by_topic = {t.topic: t for t in m.topics}
    js = by_topic["/joint_states"]
    assert (js.type, js.stream, js.time, js.codec, js.prefix, js.tick_hz) == (
        "sensor_msgs/JointState",
        "joint_states",
        "header",
        "default",
        "",
        1000.0,
    )
    assert by_topic["/gripper/width"].time == "receive"  # no header: receive time
    assert by_topic["/gripper/width"].stream == "gripper.width"
    assert by_topic["/imu"].time == "receive"
    assert by_topic["/wrist/compressed"].max_bytes == 200000
    streams = m.streams()
    assert [t.prefix for t in streams["camera"]] == ["rgb", "depth"]
    assert list(streams) == ["joint_states", "camera", "gripper.width", "imu", "wrist.compressed"]
    assert [(e.topic, e.type, e.label) for e in m.events] == [
        ("/instruction", "std_msgs/String", "instruction"),
        ("/success", "std_msgs/Bool", "/success"),
    ]


def _refused(text: str, topic, key, words: str, cls=MappingError) -> None:
    with pytest.raises(cls) as e:
        loads_mapping(text, "bridge.toml")
    assert type(e.value) is cls
    assert (e.value.file, e.value.topic, e.value.key) == ("bridge.toml", topic, key)
    assert words in str(e.value)
    assert "bridge.toml" in str(e.value)
    if topic is not None:
        assert topic in str(e.value)


def test_ros_mapping_unknown_type_refused_at_start() -> None:
    _refused(
        '[topics."/scan"]\ntype = "sensor_msgs/LaserScan"\n',
        "/scan",
        "type",
        "sensor_msgs/LaserScan",
        UnknownMessageType,
    )
    _refused('[topics."/s"]\ntype = "not a type"\n', "/s", "type", "unknown message type", UnknownMessageType)
    # an event type as a stream topic and a stream type as an event topic
    _refused('[topics."/s"]\ntype = "std_msgs/String"\n', "/s", "type", "std_msgs/String", UnknownMessageType)
    _refused('[events."/e"]\ntype = "std_msgs/Float64"\n', "/e", "type", "std_msgs/Float64", UnknownMessageType)


def test_ros_mapping_file_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(MappingError) as e:
        load_mapping(missing)
    assert e.value.file == str(missing) and "cannot read" in str(e.value)
    bad = tmp_path / "bad.toml"
    bad.write_text('[topics."/a"\n')
    with pytest.raises(MappingError) as e:
        load_mapping(bad)
    assert e.value.file == str(bad) and "not valid TOML" in str(e.value)
    _refused("[topics\n", None, None, "not valid TOML")


@pytest.mark.parametrize(
    "text, topic, key, words",
    [
        ("", None, "topics", "no topics"),
        ("version = 1\n", None, "version", "unknown key"),
        ("topics = 3\n", None, "topics", "table"),
        ("events = []\n", None, "events", "table"),
        ('[topics."joint_states"]\ntype = "sensor_msgs/JointState"\n', "joint_states", None, "starts with '/'"),
        ('[topics]\n"/a" = 3\n', "/a", None, "must be a table"),
        ('[topics."/a"]\nstream = "x"\n', "/a", "type", "missing"),
        ('[topics."/a"]\ntype = 5\n', "/a", "type", "must be a str"),
        ('[topics."/a"]\ntype = "std_msgs/Float64"\nrate = 3\n', "/a", "rate", "unknown key"),
        ('[topics."/a"]\ntype = "std_msgs/Float64"\nstream = ".hidden"\n', "/a", "stream", "not starting with '.'"),
        ('[topics."/a"]\ntype = "std_msgs/Float64"\nstream = "a b"\n', "/a", "stream", "1..=64"),
        ('[topics."/' + "x" * 70 + '"]\ntype = "std_msgs/Float64"\n', "/" + "x" * 70, "stream", "give one"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ntime = "sim"\n', "/a", "time", "one of header, receive"),
        ('[topics."/a"]\ntype = "std_msgs/Float64"\ntime = "header"\n', "/a", "time", "has no header"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ncodec = "brotli"\n', "/a", "codec", "unknown codec"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ncodec = "zstd-30"\n', "/a", "codec", "1..=22"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\nprefix = "a b"\n', "/a", "prefix", "letters"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ntick_hz = -1\n', "/a", "tick_hz", ">= 0"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ntick_hz = inf\n', "/a", "tick_hz", ">= 0"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ntick_hz = true\n', "/a", "tick_hz", "must be a"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\ncompressed = "bytes"\n', "/a", "compressed", "only for"),
        ('[topics."/a"]\ntype = "sensor_msgs/Imu"\nmax_bytes = 5\n', "/a", "max_bytes", "only for"),
        ('[topics."/c"]\ntype = "sensor_msgs/CompressedImage"\n', "/c", "max_bytes", "missing"),
        ('[topics."/c"]\ntype = "sensor_msgs/CompressedImage"\nmax_bytes = 0\n', "/c", "max_bytes", "> 0"),
        (
            '[topics."/c"]\ntype = "sensor_msgs/CompressedImage"\ncompressed = "zip"\nmax_bytes = 9\n',
            "/c",
            "compressed",
            "one of bytes, decode",
        ),
        (
            '[topics."/c"]\ntype = "sensor_msgs/CompressedImage"\ncompressed = "decode"\nmax_bytes = 9\n',
            "/c",
            "max_bytes",
            'only with compressed = "bytes"',
        ),
        ('[events."/e"]\ntype = "std_msgs/String"\nlabel = ""\n', "/e", "label", "empty"),
        ('[events."/e"]\ntype = "std_msgs/String"\ncodec = "lz4"\n', "/e", "codec", "unknown key"),
        (
            '[topics."/e"]\ntype = "std_msgs/Float64"\n[events."/e"]\ntype = "std_msgs/String"\n',
            "/e",
            None,
            "both in [topics] and in [events]",
        ),
    ],
)
def test_ros_mapping_bad_entry(text: str, topic, key, words: str) -> None:
    _refused(text, topic, key, words)


SHARED = """
[topics."/a"]
type = "sensor_msgs/Image"
stream = "cam"
prefix = "rgb"
[topics."/b"]
type = "sensor_msgs/Image"
stream = "cam"
"""


def test_ros_mapping_shared_stream_rules() -> None:
    _refused(SHARED + 'prefix = "rgb"\n', "/b", "prefix", "also the prefix of '/a'")
    _refused(SHARED, "/b", "prefix", "each topic needs a prefix")
    _refused(SHARED + 'prefix = "d"\ntime = "receive"\n', "/b", "time", "share a header stamp")
    _refused(SHARED + 'prefix = "d"\ntick_hz = 30\n', "/b", "tick_hz", "differs from '/a'")
    ok = loads_mapping(SHARED + 'prefix = "depth"\n')
    assert [t.topic for t in ok.streams()["cam"]] == ["/a", "/b"]


def test_ros_mapping_core_imports_no_ros_or_dds() -> None:
    """The converter core stays free of rospy, rclpy, DDS and bag libraries (front ends are thin)."""
    import ast

    src = Path(__file__).resolve().parent.parent / "src" / "wshard_ros"
    banned = {"rospy", "rclpy", "cyclonedds", "rosbags", "genpy", "roslib"}
    files = sorted(src.glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in banned, f"{path.name} imports {name}"
