"""The daemon SIGKILLed mid-episode: the bridge goes ``failed`` with a clear
``last_error``, ``on_message`` never raises (messages counted ``dropped``/``failed``), the
bridge stays up; after the daemon restarts, ``start`` connects anew, and the killed
episode is recovered (``recovered``) with every acknowledged step kept. The bridge
process SIGKILLed instead: the daemon ends the episode ``interrupted``."""

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import bridgekit as K
import pytest
from daemon_harness import Daemon

from wshard_ros.bridge import BridgeError


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="wsk-", dir="/tmp"))  # short, fixed socket paths across restarts
    yield d
    shutil.rmtree(d, ignore_errors=True)


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_ros_bridge_daemon_killed_mid_episode(binaries, workdir) -> None:
    first = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    bridge = K.make_bridge(first, K.JOINTS_AND_CAMERA)
    bridge.start("killed")
    js = [K.joints(i) for i in range(60)]
    for i in range(40):
        bridge.on_message("/joint_states", js[i], i)
    bridge.on_message("/camera/image", K.rgb(0), 0)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 40, "40 durable steps")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(30)
    # the bridge notices on the next message or status; never raises into on_message
    for i in range(40, 60):
        bridge.on_message("/joint_states", js[i], i)
    wait_for(lambda: bridge.status()["state"] == "failed", "state failed")
    for i in range(40, 45):
        bridge.on_message("/joint_states", js[i], i)  # after the failure: dropped, failed
    st = bridge.status()
    assert st["episode"] == "killed"
    assert st["last_error"].startswith("episode 'killed': ")
    assert "connection to the daemon lost" in st["last_error"]
    js_c = st["topics"]["/joint_states"]
    assert js_c["received"] == 65
    assert js_c["recorded"] + js_c["drop_reasons"]["failed"] == 65
    assert js_c["drop_reasons"]["failed"] >= 5
    for op in (bridge.stop, bridge.abort, lambda: bridge.annotate("x", at_ns=1)):
        with pytest.raises(BridgeError) as e:
            op()
        assert e.value.code == "FAILED" and st["last_error"] in e.value.message
    with pytest.raises(BridgeError) as e:
        bridge.start("while-down")
    assert e.value.code == "DAEMON"
    assert bridge.status()["state"] == "failed"

    second = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    try:
        bridge.start("after")
        assert bridge.status()["state"] == "recording" and bridge.status()["last_error"] is None
        bridge.on_message("/joint_states", js[0], 1)
        assert bridge.stop()["streams"]["joint_states"]["timesteps"] == 1
        index = K.index_of(second, "killed")
        # recovery after the daemon's crash: the index says `recovered` (DURABILITY.md)
        assert index["status"] == "recovered", index["status"]
        ep = K.stream_of(second, "killed", "joint_states")
        n = len(ep.timestamps)
        assert n >= 40  # every acknowledged step kept
        assert ep.timestamps == [K.stamp(i) for i in range(n)]
        assert ep.channel("signal/position") == b"".join(K.f64(m.position) for m in js[:n])
        assert K.index_of(second, "after")["status"] == "complete"
    finally:
        assert second.stop() == 0, second.log()
        first.stop()


def test_ros_bridge_daemon_killed_idle_stream_status_notices(binaries, workdir) -> None:
    # no message after the kill: status() finds the owner connection gone
    d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    try:
        bridge = K.make_bridge(d, K.JOINTS_AND_CAMERA)
        bridge.start("quiet")
        bridge.on_message("/joint_states", K.joints(0), 0)
        wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 1, "1 durable step")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(30)
        wait_for(lambda: bridge.status()["state"] == "failed", "state failed")
        last = bridge.status()["last_error"]
        assert last.startswith("episode 'quiet': ") and "connection to the daemon lost: " in last, last
        bridge.close()  # never raises
    finally:
        d.stop()
    assert os.path.exists(workdir / "data" / "quiet")


def test_ros_bridge_durable_lag_is_not_measured_once_the_stream_failed(binaries, workdir) -> None:
    # steps in flight (the daemon stopped) when the daemon dies: they never become durable,
    # so the stream has no lag to report (null), not an age that grows for ever
    d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    try:
        bridge = K.make_bridge(d, K.JOINTS_AND_CAMERA)
        bridge.start("lagging")
        bridge.on_message("/joint_states", K.joints(0), 0)
        wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 1, "1 durable step")
        d.proc.send_signal(signal.SIGSTOP)
        for i in range(1, 4):
            bridge.on_message("/joint_states", K.joints(i), i)
        wait_for(lambda: bridge.status()["streams"]["joint_states"]["pushed"] == 4, "4 steps pushed")
        assert bridge.status()["streams"]["joint_states"]["durable_lag_ms"] > 0.0
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(30)
        wait_for(lambda: bridge.status()["state"] == "failed", "state failed")
        first = bridge.status()["streams"]["joint_states"]
        time.sleep(0.05)
        again = bridge.status()["streams"]["joint_states"]
        assert first["durable_lag_ms"] is None and again["durable_lag_ms"] is None, (first, again)
        assert (again["pushed"], again["durable"]) == (4, 1)
        bridge.close()
    finally:
        d.stop()


CHILD = """
import sys, time
sys.path[:0] = sys.argv[1:3]
import bridgekit as K
from daemon_harness import Daemon
from wshard_ros import loads_mapping
from wshard_ros.bridge import Bridge, BridgeOptions
b = Bridge(loads_mapping(K.JOINTS_AND_CAMERA), BridgeOptions(socket_path=sys.argv[3]))
b.start("bridge-killed")
for i in range(30):
    b.on_message("/joint_states", K.joints(i), i)
deadline = time.monotonic() + 20
while b.status()["streams"]["joint_states"]["durable"] < 30 and time.monotonic() < deadline:
    time.sleep(0.01)
print("durable", b.status()["streams"]["joint_states"]["durable"], flush=True)
time.sleep(3600)
"""


def test_ros_bridge_process_killed_episode_interrupted(daemon) -> None:
    import subprocess
    import sys

    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parents[1] / "python" / "tests")]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(here.parent / "src"), str(here.parents[1] / "python" / "src")])
    )
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *paths, str(daemon.socket)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().split() == ["durable", "30"]
    finally:
        child.kill()
        child.wait()
    wait_for(lambda: K.index_of(daemon, "bridge-killed")["status"] != "recording", "the episode's end")
    assert K.index_of(daemon, "bridge-killed")["status"] == "interrupted"
    ep = K.stream_of(daemon, "bridge-killed", "joint_states")
    assert ep.timestamps == [K.stamp(i) for i in range(30)]


def test_ros_bridge_operator_stops_a_stream(daemon) -> None:
    # `wshard close EP/STREAM`: the daemon ends that stream (ERROR STOPPED on its
    # connection); status() notices without a message, the bridge goes failed
    from wshard_ros.bridge.daemon_control import control_request

    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("op")
    bridge.on_message("/joint_states", K.joints(0), 0)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == 1, "1 durable step")
    control = str(daemon.config.parent / "wshardd-control.sock")
    control_request(control, {"verb": "close", "episode": "op/joint_states"}, 30)
    wait_for(lambda: bridge.status()["state"] == "failed", "state failed")
    assert bridge.status()["last_error"].startswith("episode 'op': stream 'joint_states': ")
    bridge.on_message("/joint_states", K.joints(1), 1)
    assert bridge.status()["topics"]["/joint_states"]["drop_reasons"]["failed"] == 1
    bridge.close()


def test_ros_bridge_daemon_killed_before_a_stream_joins_and_before_an_event(binaries, workdir) -> None:
    from test_ros_bridge_events import EVENTS, string

    d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    try:
        bridge = K.make_bridge(d, EVENTS)
        bridge.start("nojoin")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(30)
        bridge.on_message("/camera/image", K.rgb(0), 0)  # its join cannot connect
        st = bridge.status()
        assert st["state"] == "failed"
        assert st["last_error"].startswith("episode 'nojoin': stream 'cam': connection to the daemon lost: ")
        assert st["topics"]["/camera/image"]["drop_reasons"]["failed"] == 1
        assert not st["streams"]["cam"]["joined"]
        bridge.on_message("/instruction", string("late"), 1)
        assert bridge.status()["events"]["/instruction"]["drop_reasons"]["failed"] == 1
    finally:
        d.stop()


def test_ros_bridge_daemon_killed_then_an_event_fails_the_bridge(binaries, workdir) -> None:
    from test_ros_bridge_events import EVENTS, string

    d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {})
    try:
        bridge = K.make_bridge(d, EVENTS)
        bridge.start("evdead")
        bridge.on_message("/instruction", string("one"), 1)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(30)
        bridge.on_message("/instruction", string("two"), 2)  # the owner connection is gone
        st = bridge.status()
        assert st["state"] == "failed" and "connection to the daemon lost" in st["last_error"]
        ev = st["events"]["/instruction"]
        assert (ev["recorded"], ev["drop_reasons"]["failed"]) == (1, 1)
    finally:
        d.stop()


def test_ros_bridge_daemon_refuses_a_step(start_daemon) -> None:
    # the episode's wire-byte limit: the daemon answers ERROR LIMIT on the stream; the
    # bridge goes failed ("the daemon refused"), what was accepted is kept
    daemon = start_daemon(limits={"max_episode_wire_bytes": 1 << 20})
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("limit")
    ims = [K.rgb(i, h=240, w=320) for i in range(8)]  # 225 KiB a step: the 5th is over 1 MiB
    for i, m in enumerate(ims[:3]):
        bridge.on_message("/camera/image", m, i)
    wait_for(lambda: bridge.status()["streams"]["cam"]["durable"] == 3, "3 durable steps")
    for i, m in enumerate(ims[3:], 3):
        bridge.on_message("/camera/image", m, i)
    wait_for(lambda: bridge.status()["state"] == "failed", "state failed")
    st = bridge.status()
    assert st["last_error"].startswith("episode 'limit': stream 'cam': the daemon refused: ")
    assert "LIMIT" in st["last_error"]
    cam = st["topics"]["/camera/image"]
    assert cam["recorded"] + cam["drop_reasons"]["failed"] == 8
    wait_for(lambda: K.index_of(daemon, "limit")["status"] != "recording", "the episode's end")
    assert K.index_of(daemon, "limit")["status"] == "interrupted"
    ep = K.stream_of(daemon, "limit", "cam")
    n = len(ep.timestamps)
    assert 3 <= n <= 4 and ep.channel("signal/image") == b"".join(K.pixels(m) for m in ims[:n])
