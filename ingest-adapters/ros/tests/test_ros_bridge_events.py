"""Event topics (std_msgs/String, Bool) sent on the owner connection, and annotate through
the daemon's control socket, against a real wshardd."""

from types import SimpleNamespace

import bridgekit as K
import pytest
import rosmsgs as R

from wshard_ros import loads_mapping
from wshard_ros.bridge import Bridge, BridgeError, BridgeOptions

EVENTS = (
    K.JOINTS_AND_CAMERA
    + """
[events."/instruction"]
type = "std_msgs/String"
label = "instruction"

[events."/success"]
type = "std_msgs/Bool"
"""
)


def string(s: str):
    return R.T["std_msgs/msg/String"](data=s)


def boolean(b: bool):
    return R.T["std_msgs/msg/Bool"](data=b)


def test_ros_bridge_events_recorded(daemon) -> None:
    bridge = K.make_bridge(daemon, EVENTS)
    bridge.on_message("/instruction", string("before"), 1)  # idle
    bridge.start("ev")
    bridge.on_message("/joint_states", K.joints(0), 10)
    bridge.on_message("/instruction", string("pick the red cube ✓"), 111)
    bridge.on_message("/success", boolean(True), 222)
    bridge.on_message("/success", SimpleNamespace(data=3), 333)  # not a bool: dropped, error
    bridge.on_message("/instruction", string("x" * 5000), 444)
    bridge.stop()
    evs = K.events_of(daemon, "ev")
    assert [(e["t_ns"], e["label"], e["kind"], e["data"]) for e in evs] == [
        (111, "instruction", "text", "pick the red cube ✓"),
        (222, "/success", "json", True),
        (444, "instruction", "text", "x" * 5000),
    ]
    st = bridge.status()["events"]
    assert st["/instruction"]["received"] == 3 and st["/instruction"]["recorded"] == 2
    assert st["/instruction"]["idle"] == 1
    assert st["/success"]["dropped"] == 1 and "not a bool" in st["/success"]["last_error"]


def test_ros_bridge_event_refused_by_the_daemon_is_dropped(start_daemon) -> None:
    daemon = start_daemon(limits={"max_event_bytes": 64})
    bridge = K.make_bridge(daemon, EVENTS)
    bridge.start("evlim")
    bridge.on_message("/instruction", string("y" * 100), 5)  # over the daemon's limit
    bridge.on_message("/instruction", string("ok"), 6)
    assert bridge.status()["state"] == "recording"
    bridge.stop()
    st = bridge.status()["events"]["/instruction"]
    assert (st["recorded"], st["dropped"], st["drop_reasons"]["error"]) == (1, 1, 1)
    assert "LIMIT" in st["last_error"]
    assert [e["data"] for e in K.events_of(daemon, "evlim")] == ["ok"]


def test_ros_bridge_annotate_through_the_daemon(daemon) -> None:
    bridge = K.make_bridge(daemon, EVENTS)
    bridge.start("ann")
    with pytest.raises(BridgeError) as e:
        bridge.annotate("early")  # no at_ns, nothing recorded yet
    assert e.value.code == "BAD_REQUEST" and "at_ns" in e.value.message
    for i in range(3):
        bridge.on_message("/joint_states", K.joints(i), i)
    r = bridge.annotate("grasp", text="closed gripper")
    assert r["seq"] == 0 and r["t_ns"] == K.stamp(2)
    r = bridge.annotate("score", json={"value": 0.5}, at_ns=K.stamp(1))
    assert r["seq"] == 1
    with pytest.raises(BridgeError) as e:
        bridge.annotate("both", text="a", json=1)
    assert e.value.code == "BAD_REQUEST"
    with pytest.raises(BridgeError) as e:
        bridge.annotate("l" * 300, at_ns=1)  # the daemon refuses a label over 256 bytes
    assert e.value.code == "DAEMON" and "BAD_REQUEST" in e.value.message
    with pytest.raises(BridgeError) as e:
        bridge.annotate("big", text="z" * 5000, at_ns=1)  # over the control socket's 4096 bytes
    assert e.value.code == "BAD_REQUEST" and "4096" in e.value.message
    bridge.stop()
    ann = K.annotations_of(daemon, "ann")
    assert [(a["seq"], a["label"], a["t_ns"], a["kind"], a["data"]) for a in ann] == [
        (0, "grasp", K.stamp(2), "text", "closed gripper"),
        (1, "score", K.stamp(1), "json", {"value": 0.5}),
    ]


def test_ros_bridge_annotate_without_control_socket(daemon, tmp_path) -> None:
    mapping = loads_mapping(EVENTS)
    bridge = Bridge(mapping, BridgeOptions(socket_path=str(daemon.socket)))
    bridge.start("noctl")
    with pytest.raises(BridgeError) as e:
        bridge.annotate("x", at_ns=1)
    assert e.value.code == "DAEMON" and "control_path" in e.value.message
    bridge.stop()
    missing = Bridge(mapping, BridgeOptions(socket_path=str(daemon.socket), control_path=str(tmp_path / "no.sock")))
    missing.start("noctl2")
    with pytest.raises(BridgeError) as e:
        missing.annotate("x", at_ns=1)
    assert e.value.code == "DAEMON" and "no.sock" in e.value.message
    missing.stop()
