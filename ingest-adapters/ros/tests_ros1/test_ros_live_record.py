"""Live ROS 1 recording end to end: real rosmaster, real rospy publisher processes, the
bridge process, the real wshardd; every published message is in the right stream, bit for
bit, with its header stamp (or its receive time), and the counters on ~status agree."""

import time
from pathlib import Path

import livecheck as L
from daemon_harness import Daemon
from rosharness import BridgeProc, RosMaster, wait_for

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 300

[topics."/camera/image"]
type = "sensor_msgs/Image"
stream = "cam"
tick_hz = 30

[topics."/imu"]
type = "sensor_msgs/Imu"
tick_hz = 200

[events."/instruction"]
type = "std_msgs/String"
label = "instruction"
"""
JOINT_N, IMAGE_N, IMU_N, EVENT_N = 600, 30, 200, 5


def test_ros_live_record_every_message_bit_exact(
    ros: RosMaster, daemon: Daemon, bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    r = bridge.call("start", episode_id="live1", env_id="lab", metadata_json='{"robot": "arm7"}')
    assert r.ok, r
    wall_before = time.time_ns()
    pubs = [
        publishers("joint", "/joint_states", count=JOINT_N, rate=300, t0=T0),
        publishers("image", "/camera/image", count=IMAGE_N, rate=30, t0=T0, width=640, height=480),
        publishers("imu", "/imu", count=IMU_N, rate=200, t0=T0),
        publishers("event", "/instruction", count=EVENT_N, rate=5, t0=T0),
    ]
    assert [p.wait_published() for p in pubs] == [JOINT_N, IMAGE_N, IMU_N, EVENT_N]
    st = bridge.wait_received(
        {"/joint_states": JOINT_N, "/camera/image": IMAGE_N, "/imu": IMU_N, "/instruction": EVENT_N}
    )
    stop = bridge.call("stop")
    wall_after = time.time_ns()
    assert stop.ok, stop

    # counters on ~status: everything received was recorded, nothing dropped or late
    st = bridge.status()
    assert st["state"] == "idle"
    for topic, n in (("/joint_states", JOINT_N), ("/camera/image", IMAGE_N), ("/imu", IMU_N)):
        c = st["topics"][topic]
        assert (c["received"], c["recorded"], c["dropped"], c["late"], c["idle"]) == (n, n, 0, 0, 0), (topic, c)
    assert st["events"]["/instruction"]["recorded"] == EVENT_N
    assert st["ros"]["node"] == "/wshard_ros_bridge" and st["ros"]["use_sim_time"] is False

    data = daemon.data_dir
    index = L.index(data, "live1")
    assert index["status"] == "complete", index
    assert sorted(s["name"] for s in index["streams"]) == ["cam", "imu", "joint_states"]
    receive = L.check_joint(L.stream(data, "live1", "joint_states"), 0, JOINT_N, T0, 300)
    receive += L.check_image(L.stream(data, "live1", "cam"), 0, IMAGE_N, T0, 30, 640, 480)
    receive += L.check_imu(L.stream(data, "live1", "imu"), 0, IMU_N, T0, 200)
    # receive time: ROS time (the wall clock here), within the run
    assert all(wall_before <= t <= wall_after for t in receive)
    ev_t = L.check_events(L.events(data, "live1"), "instruction", 0, EVENT_N)
    assert ev_t == sorted(ev_t) and all(wall_before <= t <= wall_after for t in ev_t)
    daemon.assert_verified(data / "live1")


def test_ros_live_sim_time_receive_clock(
    ros: RosMaster, daemon: Daemon, bridge_factory, publishers, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """use_sim_time: the receive time is the /clock publisher's time, not the wall clock."""
    ros.set_param("/use_sim_time", True)
    mapping = '[topics."/imu"]\ntype = "sensor_msgs/Imu"\ntime = "receive"\n'
    bridge: BridgeProc = bridge_factory(mapping, daemon)
    sim_t0 = 5_000 * NS  # far from the wall clock
    # under use_sim_time the publisher's own node subscribes to /clock too: wait for 2
    clock = publishers("clock", "/clock", count=1, rate=1, t0=sim_t0, node="sim_clock", subs=2)
    assert clock.wait_published() == 1
    wait_for("the bridge on /clock", lambda: bridge.status()["ros"]["ros_time_ns"] == sim_t0)
    assert bridge.call("start", episode_id="sim1", env_id="", metadata_json="").ok
    pub = publishers("imu", "/imu", count=20, rate=100, t0=T0)
    assert pub.wait_published() == 20
    bridge.wait_received({"/imu": 20})
    st = bridge.status()
    assert st["ros"]["use_sim_time"] is True and st["ros"]["ros_time_ns"] == sim_t0
    assert bridge.call("stop").ok
    ep = L.stream(daemon.data_dir, "sim1", "imu")
    # time = "receive": the step time is the (simulated) receive time; the stamp is kept
    assert ep.timestamps == [sim_t0] * 20
    assert L.i64s(ep.channel("signal/header_t_ns")) == [T0 + i * (NS // 100) for i in range(20)]
