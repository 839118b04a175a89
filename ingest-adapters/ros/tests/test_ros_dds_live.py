"""The ROS 2 front end end to end: the bridge process (``python3 -m wshard_ros.ros2dds``)
subscribes over DDS (Cyclone, loopback, no multicast), publishers run in separate
processes, a real wshardd records; every value read back bit for bit."""

import struct
import subprocess
import sys
import time
from pathlib import Path

import bridgekit as K
import dds_workload as W
import ddskit as D

MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 1000

[topics."/camera/image_raw"]
type = "sensor_msgs/Image"
stream = "cam"
codec = "none"
tick_hz = 30

[events."/instruction"]
type = "std_msgs/String"
label = "instruction"

[events."/success"]
type = "std_msgs/Bool"
"""

W_IMG, H_IMG = 32, 24


def f64s(values: list) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def check_joints(daemon, episode: str, first: int, n: int) -> None:
    s = K.stream_of(daemon, episode, "joint_states")
    assert s.status == "complete"
    idx = range(first, first + n)
    assert s.timestamps == [W.stamp(i, 1000) for i in idx]
    vals = [W.joint_values(i) for i in idx]
    assert s.channel("signal/position") == b"".join(f64s(v[0]) for v in vals)
    assert s.channel("signal/velocity") == b"".join(f64s(v[1]) for v in vals)
    assert s.channel("signal/effort") == b"".join(f64s(v[2]) for v in vals)
    recv = struct.unpack(f"<{n}q", s.channel("signal/receive_t_ns"))
    assert list(recv) == sorted(recv) and recv[0] > W.BASE_NS  # wall clock, after the stamps' base


def test_ros_dds_live_joints_images_events_bit_exact(daemon, tmp_path: Path) -> None:
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, MAPPING), tmp_path, domain)
    try:
        t_start = time.time_ns()
        bridge.ok({"cmd": "start", "episode_id": "dds1", "env_id": "arm"})
        n_js, n_img, n_ev = 1500, 45, 10
        pubs = [
            D.Publisher(domain, "/joint_states", "joint_state", 1000, n_js),
            D.Publisher(domain, "/camera/image_raw", "image", 30, n_img, "--width", str(W_IMG), "--height", str(H_IMG)),
            D.Publisher(domain, "/instruction", "string", 20, n_ev),
            D.Publisher(domain, "/success", "bool", 20, n_ev),
        ]
        D.run_all(pubs, [n_js, n_img, n_ev, n_ev])
        status = bridge.wait_received(
            {"/joint_states": n_js, "/camera/image_raw": n_img, "/instruction": n_ev, "/success": n_ev}
        )
        summary = bridge.ok({"cmd": "stop"})
        t_stop = time.time_ns()
    finally:
        assert bridge.stop() == 0, bridge.log()
    assert summary["outcome"] == "completed"
    assert summary["streams"]["joint_states"]["timesteps"] == n_js
    assert summary["streams"]["cam"]["timesteps"] == n_img
    topics = status["topics"]
    assert topics["/joint_states"]["dropped"] == 0 and topics["/camera/image_raw"]["dropped"] == 0

    assert K.index_of(daemon, "dds1")["status"] == "complete"
    check_joints(daemon, "dds1", 0, n_js)
    cam = K.stream_of(daemon, "dds1", "cam")
    assert cam.timestamps == [W.stamp(i, 30) for i in range(n_img)]
    base = W.image_base(W_IMG, H_IMG)
    assert cam.channel("signal/image") == b"".join(W.image_bytes(i, W_IMG, H_IMG, base) for i in range(n_img))

    events = D.read_events(daemon, "dds1")
    by_label = {}
    for ev in events:
        by_label.setdefault(ev["label"], []).append(ev)
    assert [e["data"] for e in by_label["instruction"]] == [W.message("string", i, 20).data for i in range(n_ev)]
    assert all(e["kind"] == "text" for e in by_label["instruction"])
    assert [e["data"] for e in by_label["/success"]] == [i % 2 == 0 for i in range(n_ev)]
    assert all(e["kind"] == "json" for e in by_label["/success"])
    assert all(t_start <= e["t_ns"] <= t_stop for e in events)  # receive time: the wall clock
    daemon.assert_verified()


def test_ros_dds_live_publisher_restart_mid_episode(daemon, tmp_path: Path) -> None:
    """A publisher killed mid-episode (after its samples were acknowledged) and started
    again: everything before and after is recorded, in order, nothing twice."""
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, MAPPING), tmp_path, domain)
    try:
        bridge.ok({"cmd": "start", "episode_id": "restart"})
        first = D.Publisher(domain, "/joint_states", "joint_state", 1000, 400, "--hold")
        first.expect("matched")
        first.expect("done 400")
        first.kill()  # SIGKILL: no clean goodbye on DDS
        bridge.wait_received({"/joint_states": 400})
        second = D.Publisher(domain, "/joint_states", "joint_state", 1000, 600, "--start", "400")
        D.run_all([second], [600])
        status = bridge.wait_received({"/joint_states": 1000})
        summary = bridge.ok({"cmd": "stop"})
    finally:
        assert bridge.stop() == 0, bridge.log()
    t = status["topics"]["/joint_states"]
    assert (t["received"], t["recorded"], t["dropped"], t["late"]) == (1000, 1000, 0, 0)
    assert summary["streams"]["joint_states"]["timesteps"] == 1000
    check_joints(daemon, "restart", 0, 1000)


def test_ros_dds_live_unknown_type_refused_at_start(tmp_path: Path) -> None:
    """A mapping type the bridge cannot subscribe: exit 2 before touching DDS or the
    daemon, naming topic and type."""
    mapping = K.write_mapping(tmp_path, MAPPING + '\n[topics."/points"]\ntype = "sensor_msgs/PointCloud2"\n')
    cmd = [sys.executable, "-m", "wshard_ros.ros2dds", "--mapping", str(mapping), "--socket", str(tmp_path / "none")]
    r = subprocess.run(cmd + ["--loopback"], env=D.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r
    assert "'/points'" in r.stderr and "'sensor_msgs/PointCloud2'" in r.stderr, r.stderr
