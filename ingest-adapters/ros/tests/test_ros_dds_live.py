"""The ROS 2 front end end to end: the bridge process (``python3 -m wshard_ros.ros2dds``)
subscribes over DDS (Cyclone, loopback, no multicast), publishers run in separate
processes, a real wshardd records; every value read back bit for bit."""

import subprocess
import sys
import time
from pathlib import Path

import bridgekit as K
import dds_workload as W
import ddskit as D


def test_ros_dds_live_joints_images_events_bit_exact(daemon, tmp_path: Path) -> None:
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, D.MAPPING), tmp_path, domain)
    try:
        t_start = time.time_ns()
        bridge.ok({"cmd": "start", "episode_id": "dds1", "env_id": "arm"})
        n_js, n_img, n_ev = 1500, 45, 10
        pubs = [
            D.Publisher(domain, "/joint_states", "joint_state", 1000, n_js),
            D.Publisher(
                domain, "/camera/image_raw", "image", 30, n_img, "--width", str(D.W_IMG), "--height", str(D.H_IMG)
            ),
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
    D.check_joints(daemon, "dds1", 0, n_js)
    cam = K.stream_of(daemon, "dds1", "cam")
    assert cam.timestamps == [W.stamp(i, 30) for i in range(n_img)]
    base = W.image_base(D.W_IMG, D.H_IMG)
    assert cam.channel("signal/image") == b"".join(W.image_bytes(i, D.W_IMG, D.H_IMG, base) for i in range(n_img))

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
    """A publisher that goes away mid-episode and comes back, twice: once exiting cleanly
    (its writer unregisters: DDS hands the reader a sample without data, which is not a
    message), once SIGKILLed after its samples were acknowledged (no goodbye on DDS).
    Everything before and after is recorded, in order, nothing twice or extra."""
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, D.MAPPING), tmp_path, domain)
    try:
        bridge.ok({"cmd": "start", "episode_id": "restart"})
        D.run_all([D.Publisher(domain, "/joint_states", "joint_state", 1000, 300)], [300])
        bridge.wait_received({"/joint_states": 300})
        killed = D.Publisher(domain, "/joint_states", "joint_state", 1000, 300, "--start", "300", "--hold")
        killed.expect("matched")
        killed.expect("done 300")
        killed.kill()
        bridge.wait_received({"/joint_states": 600})
        last = D.Publisher(domain, "/joint_states", "joint_state", 1000, 400, "--start", "600")
        D.run_all([last], [400])
        status = bridge.wait_received({"/joint_states": 1000})
        summary = bridge.ok({"cmd": "stop"})
    finally:
        assert bridge.stop() == 0, bridge.log()
    t = status["topics"]["/joint_states"]
    assert (t["received"], t["recorded"], t["dropped"], t["late"]) == (1000, 1000, 0, 0), t
    assert summary["streams"]["joint_states"]["timesteps"] == 1000
    D.check_joints(daemon, "restart", 0, 1000)


def test_ros_dds_live_unknown_type_refused_at_start(tmp_path: Path) -> None:
    """A mapping type the bridge cannot subscribe: exit 2 before touching DDS or the
    daemon, naming topic and type."""
    mapping = K.write_mapping(tmp_path, D.MAPPING + '\n[topics."/points"]\ntype = "sensor_msgs/PointCloud2"\n')
    cmd = [sys.executable, "-m", "wshard_ros.ros2dds", "--mapping", str(mapping), "--socket", str(tmp_path / "none")]
    r = subprocess.run(cmd + ["--loopback"], env=D.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r
    assert "'/points'" in r.stderr and "'sensor_msgs/PointCloud2'" in r.stderr, r.stderr
