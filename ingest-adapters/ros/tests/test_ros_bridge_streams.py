"""Shared streams (a camera's rgb and depth paired by header stamp), late steps,
conversion errors and unknown topics, against a real wshardd."""

from types import SimpleNamespace

import bridgekit as K

CAMERA = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"

[topics."/camera/color"]
type = "sensor_msgs/Image"
stream = "camera"
prefix = "rgb"
tick_hz = 30

[topics."/camera/depth"]
type = "sensor_msgs/Image"
stream = "camera"
prefix = "depth"
tick_hz = 30
"""


def t(i: int) -> int:
    return K.stamp(i, 33_000_000)


def test_ros_bridge_shared_stream_pairs_by_stamp_and_drops_unmatched(daemon) -> None:
    bridge = K.make_bridge(daemon, CAMERA)
    bridge.start("cam")
    rgb = {i: K.rgb(i, t_ns=t(i)) for i in range(8)}
    dep = {i: K.depth(i, t_ns=t(i)) for i in range(8)}
    # 0: rgb then depth; 1: depth then rgb; 2: rgb only (given up when 3 completes);
    # 3: both; 4: depth only, 5: both (4 given up); 6: both; 7: rgb only (given up at stop)
    order = [("c", 0), ("d", 0), ("d", 1), ("c", 1), ("c", 2), ("c", 3), ("d", 3), ("d", 4), ("d", 5), ("c", 5)]
    order += [("c", 6), ("d", 6), ("c", 7)]
    for k, (which, i) in enumerate(order):
        topic, msg = ("/camera/color", rgb[i]) if which == "c" else ("/camera/depth", dep[i])
        bridge.on_message(topic, msg, 100 + k)
    summary = bridge.stop()
    kept = [0, 1, 3, 5, 6]
    assert summary["streams"]["camera"]["timesteps"] == len(kept)
    st = bridge.status()["topics"]
    assert st["/camera/color"]["drop_reasons"]["unmatched"] == 2  # stamps 2 and 7
    assert st["/camera/depth"]["drop_reasons"]["unmatched"] == 1  # stamp 4
    assert st["/camera/color"]["recorded"] == len(kept) and st["/camera/depth"]["recorded"] == len(kept)
    assert "camera" in st["/camera/color"]["last_error"]
    ep = K.stream_of(daemon, "cam", "camera")
    assert ep.timestamps == [t(i) for i in kept]
    assert ep.channel("signal/rgb/image") == b"".join(K.pixels(rgb[i]) for i in kept)
    assert ep.channel("signal/depth/image") == b"".join(K.pixels(dep[i]) for i in kept)
    # receive times: each topic's own
    recv = {(w, i): 100 + k for k, (w, i) in enumerate(order)}
    assert ep.channel("signal/rgb/receive_t_ns") == K.i64s([recv[("c", i)] for i in kept])
    assert ep.channel("signal/depth/receive_t_ns") == K.i64s([recv[("d", i)] for i in kept])
    # channel order: the topics' channels in mapping-file order
    names = [c["id"] for c in ep.chunk_meta[0]["channels"]["channels"]]
    assert names == ["rgb/image", "rgb/receive_t_ns", "depth/image", "depth/receive_t_ns"]


def test_ros_bridge_shared_stream_max_pending(daemon) -> None:
    bridge = K.make_bridge(daemon, CAMERA, max_pending=2)
    bridge.start("mp")
    for i in range(4):  # rgb only: at most 2 pending, the oldest go
        bridge.on_message("/camera/color", K.rgb(i, t_ns=t(i)), i)
    bridge.on_message("/camera/depth", K.depth(3, t_ns=t(3)), 9)
    bridge.on_message("/camera/color", K.rgb(9, t_ns=t(9)), 10)
    bridge.on_message("/camera/color", K.rgb(9, t_ns=t(9)), 11)  # a second rgb at a pending stamp
    summary = bridge.stop()
    st = bridge.status()["topics"]
    assert summary["streams"]["camera"]["timesteps"] == 1
    # 0 and 1 over max_pending, 2 older than the completed 3, the duplicate 9, 9 at stop
    assert st["/camera/color"]["drop_reasons"]["unmatched"] == 5
    assert K.stream_of(daemon, "mp", "camera").timestamps == [t(3)]


def test_ros_bridge_late_steps_not_sent_equal_times_kept(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("late")
    for i in (0, 1, 2, 1, 2, 3, 0):
        bridge.on_message("/joint_states", K.joints(i), 7)
    bridge.stop()
    st = bridge.status()["topics"]["/joint_states"]
    assert (st["received"], st["recorded"], st["late"], st["dropped"]) == (7, 5, 2, 0)
    assert "before the last one" in st["last_error"]
    assert K.stream_of(daemon, "late", "joint_states").timestamps == [K.stamp(i) for i in (0, 1, 2, 2, 3)]
    assert K.index_of(daemon, "late")["status"] == "complete"


def test_ros_bridge_conversion_errors_are_counted_and_the_episode_goes_on(daemon, caplog) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("conv")
    bridge.on_message("/joint_states", K.joints(0), 1)
    bridge.on_message("/joint_states", K.joints(1, n=6), 2)  # 6 joints after 7: ShapeMismatch
    bridge.on_message("/joint_states", K.joints(2, n=6), 3)  # logged once, counted twice
    bridge.on_message("/joint_states", SimpleNamespace(__msgtype__="sensor_msgs/msg/Imu"), 4)  # another type
    bridge.on_message("/camera/image", K.rgb(0), 5)
    bad = K.rgb(1)
    bad.encoding = "yuv422"
    bridge.on_message("/camera/image", bad, 6)
    bridge.on_message("/not/mapped", K.joints(3), 7)  # ignored, logged
    bridge.on_message("/joint_states", K.joints(3), 8)
    summary = bridge.stop()
    st = bridge.status()["topics"]
    js = st["/joint_states"]
    assert (js["received"], js["recorded"], js["dropped"], js["drop_reasons"]["error"]) == (5, 2, 3, 3)
    assert "'/joint_states'" in js["last_error"] and "<type>" in js["last_error"]
    assert st["/camera/image"]["drop_reasons"]["error"] == 1 and "encoding" in st["/camera/image"]["last_error"]
    assert "/not/mapped" not in st
    assert summary["streams"]["joint_states"]["timesteps"] == 2
    assert K.stream_of(daemon, "conv", "joint_states").timestamps == [K.stamp(0), K.stamp(3)]
    mismatch_logs = [r for r in caplog.records if "differs from the first message" in r.getMessage()]
    assert len(mismatch_logs) == 1


def test_ros_bridge_stream_refused_drops_only_that_stream(start_daemon) -> None:
    # a step bigger than the daemon's largest frame: the client refuses the join
    # (SchemaError); the other stream records on
    daemon = start_daemon(limits={"max_frame_bytes": 1 << 20})
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("big")
    bridge.on_message("/camera/image", K.rgb(0, h=1024, w=1024), 1)  # 3 MiB a step
    bridge.on_message("/joint_states", K.joints(0), 2)
    bridge.on_message("/camera/image", K.rgb(1, h=1024, w=1024), 3)
    st = bridge.status()
    assert st["state"] == "recording"
    bridge.stop()
    cam = bridge.status()["topics"]["/camera/image"]
    assert cam["drop_reasons"]["error"] == 2 and "refused" in cam["last_error"]
    assert K.stream_of(daemon, "big", "joint_states").timestamps == [K.stamp(0)]


def test_ros_bridge_shm_transport(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA, shm_streams=frozenset({"cam"}))
    bridge.start("shm")
    ims = [K.rgb(i) for i in range(20)]
    for i, m in enumerate(ims):
        bridge.on_message("/camera/image", m, i)
    assert bridge.stop()["streams"]["cam"]["timesteps"] == 20
    assert K.stream_of(daemon, "shm", "cam").channel("signal/image") == b"".join(K.pixels(m) for m in ims)


def test_ros_bridge_concurrent_callbacks(daemon) -> None:
    """rospy calls each subscription from its own thread: rgb, depth and joints at once."""
    import threading

    bridge = K.make_bridge(daemon, CAMERA)
    bridge.start("threads")
    n = 120
    rgb = [K.rgb(i, t_ns=t(i)) for i in range(n)]
    dep = [K.depth(i, t_ns=t(i)) for i in range(n)]
    js = [K.joints(i) for i in range(n)]
    jobs = [("/camera/color", rgb), ("/camera/depth", dep), ("/joint_states", js)]
    threads = [
        threading.Thread(target=lambda tp=tp, ms=ms: [bridge.on_message(tp, m, i) for i, m in enumerate(ms)])
        for tp, ms in jobs
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    bridge.stop()
    st = bridge.status()["topics"]
    assert st["/joint_states"]["recorded"] == n
    for topic in ("/camera/color", "/camera/depth"):
        c = st[topic]
        assert c["recorded"] + c["drop_reasons"]["unmatched"] == n and c["dropped"] == c["drop_reasons"]["unmatched"]
    ep = K.stream_of(daemon, "threads", "camera")
    kept = [(ts - t(0)) // 33_000_000 for ts in ep.timestamps]
    assert kept == sorted(set(kept)) and len(kept) == st["/camera/color"]["recorded"]
    assert ep.channel("signal/rgb/image") == b"".join(K.pixels(rgb[i]) for i in kept)
    assert ep.channel("signal/depth/image") == b"".join(K.pixels(dep[i]) for i in kept)
    assert K.stream_of(daemon, "threads", "joint_states").timestamps == [K.stamp(i) for i in range(n)]
