"""Live mode drops the newest step when a stream's queue is full (``queue_full``);
``block_when_full`` waits instead (back-pressure, nothing dropped); ``durable_lag_ms``.
The daemon is held with SIGSTOP so the stream's socket fills (no sleeps)."""

import os
import signal
import threading
import time
from typing import Callable

import bridgekit as K

BIG = dict(h=480, w=640)  # 900 KiB a step: a few fill the socket buffer


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_ros_bridge_queue_full_drops_newest_and_counts(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA, queue_steps=2)
    bridge.start("full")
    ims = [K.rgb(i, **BIG) for i in range(12)]
    bridge.on_message("/camera/image", ims[0], 0)  # joins while the daemon runs
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        for i in range(1, 12):
            bridge.on_message("/camera/image", ims[i], i)  # never blocks
        st = bridge.status()
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    cam = st["topics"]["/camera/image"]
    assert cam["drop_reasons"]["queue_full"] > 0
    assert "queue full" in cam["last_error"]
    summary = bridge.stop()
    cam = bridge.status()["topics"]["/camera/image"]
    assert cam["recorded"] + cam["dropped"] == 12 and cam["dropped"] == cam["drop_reasons"]["queue_full"]
    assert summary["streams"]["cam"]["timesteps"] == cam["recorded"]
    ep = K.stream_of(daemon, "full", "cam")
    kept = [i for i in range(12) if K.stamp(i, 33_000_000) in set(ep.timestamps)]
    assert len(kept) == cam["recorded"] and kept[0] == 0
    assert ep.channel("signal/image") == b"".join(K.pixels(ims[i]) for i in kept)


def test_ros_bridge_block_when_full_back_pressure_never_drops(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA, queue_steps=1, block_when_full=True)
    bridge.start("block")
    ims = [K.rgb(i, **BIG) for i in range(12)]
    bridge.on_message("/camera/image", ims[0], 0)
    sent = []

    def publish() -> None:
        for i in range(1, 12):
            bridge.on_message("/camera/image", ims[i], i)
            sent.append(i)

    os.kill(daemon.proc.pid, signal.SIGSTOP)
    th = threading.Thread(target=publish)
    try:
        th.start()
        wait_for(lambda: bridge.status()["streams"]["cam"]["queued"] == 1, "a full queue")
        # the daemon is stopped: the publisher cannot get all 11 steps through
        assert th.is_alive() and len(sent) < 11
        assert bridge.status()["topics"]["/camera/image"]["dropped"] == 0
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    th.join(30)
    assert not th.is_alive()
    bridge.stop()
    cam = bridge.status()["topics"]["/camera/image"]
    assert (cam["recorded"], cam["dropped"]) == (12, 0)
    ep = K.stream_of(daemon, "block", "cam")
    assert ep.channel("signal/image") == b"".join(K.pixels(m) for m in ims)


def test_ros_bridge_durable_lag(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("lag")
    bridge.on_message("/joint_states", K.joints(0), 0)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 1, "durable 1")
    assert bridge.status()["streams"]["joint_states"]["durable_lag_ms"] == 0.0
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        bridge.on_message("/joint_states", K.joints(1), 1)
        wait_for(lambda: bridge.status()["streams"]["joint_states"]["pushed"] == 2, "pushed 2")
        first = bridge.status()["streams"]["joint_states"]
        assert first["durable"] == 1 and first["durable_lag_ms"] > 0.0
        wait_for(
            lambda: bridge.status()["streams"]["joint_states"]["durable_lag_ms"] > first["durable_lag_ms"], "lag grows"
        )
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 2, "durable 2")
    assert bridge.status()["streams"]["joint_states"]["durable_lag_ms"] == 0.0
    bridge.stop()


def test_ros_bridge_stop_times_out_on_a_stopped_daemon(daemon) -> None:
    import pytest

    from wshard_ros.bridge import BridgeError

    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA, timeout=0.5)
    bridge.start("hung")
    for i in range(5):
        bridge.on_message("/joint_states", K.joints(i), i)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 5, "5 durable steps")
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(BridgeError) as e:
            bridge.stop()  # the stream's CLOSE is never answered in time
        assert e.value.code == "DAEMON" and e.value.message.startswith("stop: episode 'hung': ")
        assert bridge.status()["state"] == "failed"
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    wait_for(lambda: K.index_of(daemon, "hung")["status"] != "recording", "the episode's end")
    assert K.index_of(daemon, "hung")["status"] == "interrupted"
    assert K.stream_of(daemon, "hung", "joint_states").timestamps == [K.stamp(i) for i in range(5)]
    bridge.start("after-hung")  # reconnects
    bridge.stop()
