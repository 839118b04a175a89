"""The daemon's episode control the ROS way: the services ~keep, ~stop_episode and
~abort_episode of a live bridge (rosmaster, rospy publishers, the real wshardd), and the
bridge's lifecycle when an operator ends its episode from outside (`wshard stop`): the node
does not crash, it goes idle and records the next episode on ~start."""

import subprocess
from pathlib import Path
from typing import Dict

import livecheck as L
from daemon_harness import Daemon
from rosharness import BridgeProc, RosMaster, wait_for

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
MAPPING = '[topics."/joint_states"]\ntype = "sensor_msgs/JointState"\ntick_hz = 200\n'


def test_ros_live_episode_control_keep_stop_abort_and_an_operator_stop(  # type: ignore[no-untyped-def]
    ros: RosMaster, daemon: Daemon, binaries: Dict[str, Path], bridge_factory, publishers
) -> None:
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    data = daemon.data_dir

    # refusals while idle: no episode named and none recording; an unknown episode
    r = bridge.call("stop_episode", episode_id="", timeout_ms=0)
    assert (r.ok, r.code) == (False, "BAD_REQUEST") and r.result_json == "", r
    r = bridge.call("keep", episode_id="no-such", release=False)
    assert (r.ok, r.code, r.kept) == (False, "DAEMON", False) and "UNKNOWN_EPISODE" in r.message, r

    # episode 1: kept, then stopped through the daemon (complete); the bridge is idle
    assert bridge.call("start", episode_id="k1", env_id="", metadata_json="").ok
    p1 = publishers("joint", "/joint_states", count=60, rate=200, t0=T0)
    assert p1.wait_published() == 60
    st = bridge.wait_received({"/joint_states": 60})
    wait_for("60 durable", lambda: bridge.status()["streams"]["joint_states"]["durable"] == 60)
    r = bridge.call("keep", episode_id="", release=False)
    assert (r.ok, r.kept) == (True, True), r
    assert (data / ".keep" / "k1").is_file()
    r = bridge.call("stop_episode", episode_id="", timeout_ms=0)
    assert r.ok, r
    assert '"status": "complete"' in r.result_json, r.result_json
    st = bridge.status()
    assert st["state"] == "idle" and "ended by the daemon" in st["last_error"], st
    p1.finish()
    assert L.index(data, "k1")["status"] == "complete"
    L.check_joint(L.stream(data, "k1", "joint_states"), 0, 60, T0, 200)

    # episode 2: an operator's `wshard stop` from outside; the node notices on its own
    assert bridge.call("start", episode_id="k2", env_id="", metadata_json="").ok
    p2 = publishers("joint", "/joint_states", count=40, rate=200, t0=T0, first=60)
    assert p2.wait_published() == 40
    bridge.wait_received({"/joint_states": 100})
    wait_for("40 durable", lambda: bridge.status()["streams"]["joint_states"]["durable"] == 40)
    out = subprocess.run(
        [str(binaries["wshard"]), "stop", "k2", "--control", str(daemon.control)],  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out
    wait_for("the bridge idle", lambda: bridge.status()["state"] == "idle")
    assert bridge.proc.poll() is None, bridge.log()
    p2.finish()
    assert L.index(data, "k2")["status"] == "complete"
    L.check_joint(L.stream(data, "k2", "joint_states"), 60, 40, T0, 200)

    # episode 3: aborted through the daemon by name; the mark of k1 is released
    assert bridge.call("start", episode_id="k3", env_id="", metadata_json="").ok
    p3 = publishers("joint", "/joint_states", count=20, rate=200, t0=T0, first=100)
    assert p3.wait_published() == 20
    wait_for("20 durable", lambda: bridge.status()["streams"]["joint_states"]["durable"] == 20)
    r = bridge.call("abort_episode", episode_id="k3", timeout_ms=20000)
    assert r.ok and '"status": "aborted"' in r.result_json, r
    assert bridge.status()["state"] == "idle"
    p3.finish()
    assert L.index(data, "k3")["status"] == "aborted"
    r = bridge.call("keep", episode_id="k1", release=True)
    assert (r.ok, r.kept) == (True, False), r
    assert not (data / ".keep" / "k1").exists()
    daemon.assert_verified(data / "k1", data / "k2", data / "k3")
    assert "Traceback" not in bridge.log(), bridge.log()
