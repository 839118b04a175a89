"""The recording core end to end against a real wshardd: JointState and Image messages
(rosbags type store) recorded into a multi-stream episode, read back bit for bit."""

import bridgekit as K
import pytest

from wshard_ros.bridge import BridgeError


def test_ros_bridge_records_joints_and_images_bit_exact(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("ep1", env_id="arm", metadata={"robot": "r1"})
    js = [K.joints(i) for i in range(300)]
    ims = [K.rgb(i) for i in range(10)]
    recv = []
    for i, m in enumerate(js):
        recv.append(5_000 + i)
        bridge.on_message("/joint_states", m, 5_000 + i)
        if i % 30 == 0:
            bridge.on_message("/camera/image", ims[i // 30], 9_000 + i)
    summary = bridge.stop()
    assert summary["outcome"] == "completed"
    assert summary["streams"]["joint_states"]["timesteps"] == 300
    assert summary["streams"]["cam"]["timesteps"] == 10
    st = bridge.status()
    assert st["state"] == "idle" and st["last_error"] is None
    assert st["topics"]["/joint_states"]["received"] == 300
    assert st["topics"]["/joint_states"]["recorded"] == 300
    assert st["topics"]["/camera/image"]["recorded"] == 10
    assert st["topics"]["/joint_states"]["dropped"] == 0

    index = K.index_of(daemon, "ep1")
    assert index["status"] == "complete"
    assert index["env_id"] == "arm" and index["metadata"] == {"robot": "r1"}
    # streams join in the order of their first messages
    assert [s["name"] for s in index["streams"]] == ["joint_states", "cam"]
    j = K.stream_of(daemon, "ep1", "joint_states")
    assert j.status == "complete"
    assert j.timestamps == [K.stamp(i) for i in range(300)]
    assert j.channel("signal/position") == b"".join(K.f64(m.position) for m in js)
    assert j.channel("signal/velocity") == b"".join(K.f64(m.velocity) for m in js)
    assert j.channel("signal/effort") == b"".join(K.f64(m.effort) for m in js)
    assert j.channel("signal/receive_t_ns") == K.i64s(recv)
    c = K.stream_of(daemon, "ep1", "cam")
    assert c.timestamps == [K.stamp(i, 33_000_000) for i in range(10)]
    assert c.channel("signal/image") == b"".join(K.pixels(m) for m in ims)
    meta = {s["name"]: s for s in index["streams"]}
    assert meta["joint_states"]["tick_hz"] == 100
    daemon.assert_verified()


def test_ros_bridge_two_episodes_and_idle_messages(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.on_message("/joint_states", K.joints(0), 1)  # before start: idle
    bridge.start("a")
    for i in range(5):
        bridge.on_message("/joint_states", K.joints(i), i)
    bridge.stop()
    bridge.on_message("/joint_states", K.joints(5), 1)  # between episodes: idle
    bridge.start("b")
    for i in range(6, 9):
        bridge.on_message("/joint_states", K.joints(i), i)
    summary = bridge.stop()
    assert summary["streams"]["cam"] == {"joined": False, "timesteps": 0, "durable": 0}
    t = bridge.status()["topics"]["/joint_states"]
    assert (t["received"], t["recorded"], t["idle"]) == (10, 8, 2)
    assert K.stream_of(daemon, "a", "joint_states").timestamps == [K.stamp(i) for i in range(5)]
    assert K.stream_of(daemon, "b", "joint_states").timestamps == [K.stamp(i) for i in range(6, 9)]
    assert [s["name"] for s in K.index_of(daemon, "b")["streams"]] == ["joint_states"]


def test_ros_bridge_abort_keeps_data(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("ab")
    for i in range(20):
        bridge.on_message("/joint_states", K.joints(i), i)
    assert bridge.abort()["outcome"] == "aborted"
    assert K.index_of(daemon, "ab")["status"] == "aborted"
    assert K.stream_of(daemon, "ab", "joint_states").timestamps == [K.stamp(i) for i in range(20)]


def test_ros_bridge_operation_errors(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    for op in (bridge.stop, bridge.abort, lambda: bridge.annotate("x", at_ns=1)):
        with pytest.raises(BridgeError) as e:
            op()
        assert e.value.code == "NOT_RECORDING"
    bridge.start("e1")
    with pytest.raises(BridgeError) as e:
        bridge.start("e2")
    assert e.value.code == "ALREADY_RECORDING" and "'e1'" in e.value.message
    bridge.stop()
    with pytest.raises(BridgeError) as e:
        bridge.start("e1")  # the daemon refuses: EPISODE_EXISTS
    assert e.value.code == "DAEMON" and "EPISODE_EXISTS" in e.value.message
    with pytest.raises(BridgeError) as e:
        bridge.start("bad id with spaces")
    assert e.value.code == "BAD_REQUEST"
    assert bridge.status()["state"] == "idle"
    bridge.start("e3")  # still usable
    bridge.stop()


def test_ros_bridge_start_without_daemon(tmp_path) -> None:
    from wshard_ros import loads_mapping
    from wshard_ros.bridge import Bridge, BridgeOptions

    bridge = Bridge(loads_mapping(K.JOINTS_AND_CAMERA), BridgeOptions(socket_path=str(tmp_path / "none.sock")))
    with pytest.raises(BridgeError) as e:
        bridge.start("x")
    assert e.value.code == "DAEMON" and "none.sock" in e.value.message
    assert bridge.status()["state"] == "idle"
