"""SIGKILL mid-episode, live: the bridge (the daemon ends the episode `interrupted` when the
bridge's connections drop; every acknowledged step is kept) and the daemon (the bridge stays
up reporting `failed`; after the daemon's restart and recovery a new episode started through
~start records normally)."""

import signal
import subprocess
from pathlib import Path
from typing import Dict

import livecheck as L
from daemon_harness import Daemon
from rosharness import BridgeProc, RosMaster, wait_for

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
MAPPING = '[topics."/joint_states"]\ntype = "sensor_msgs/JointState"\ntick_hz = 200\n'


def _durable(bridge: BridgeProc, at_least: int) -> int:
    def check() -> int:
        return int(bridge.status()["streams"]["joint_states"]["durable"])

    return int(wait_for(f"{at_least} durable steps", lambda: check() >= at_least and check(), timeout=30))


def _restart(d: Daemon, wshardd: Path) -> None:
    """Start wshardd again on the same config and data dir (in place, so teardown stops it)."""
    d._log.close()
    d._log = open(d.log_path, "ab")
    d.proc = subprocess.Popen([str(wshardd), "--config", str(d.config)], stdout=d._log, stderr=subprocess.STDOUT)
    d._wait_ready()


def test_ros_live_crash_sigkill_bridge_keeps_acknowledged(
    ros: RosMaster, daemon: Daemon, bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    assert bridge.call("start", episode_id="k1", env_id="", metadata_json="").ok
    pub = publishers("joint", "/joint_states", count=600, rate=200, t0=T0)
    durable = _durable(bridge, 50)
    assert bridge.stop(signal.SIGKILL) == -signal.SIGKILL
    # the bridge's connections dropped: the daemon finalizes the episode interrupted
    wait_for("k1 interrupted", lambda: L.index(daemon.data_dir, "k1")["status"] == "interrupted", timeout=30)
    ep = L.stream(daemon.data_dir, "k1", "joint_states")
    assert ep.timesteps >= durable
    L.check_joint(ep, 0, ep.timesteps, T0, 200)  # every kept step bit for bit, in order
    pub.finish()

    # a new bridge process records the next episode
    bridge2: BridgeProc = bridge_factory(MAPPING, daemon)
    assert bridge2.call("start", episode_id="k2", env_id="", metadata_json="").ok
    p2 = publishers("joint", "/joint_states", count=50, rate=200, t0=T0)
    assert p2.wait_published() == 50
    bridge2.wait_received({"/joint_states": 50})
    assert bridge2.call("stop").ok
    assert L.index(daemon.data_dir, "k2")["status"] == "complete"
    L.check_joint(L.stream(daemon.data_dir, "k2", "joint_states"), 0, 50, T0, 200)


def test_ros_live_crash_sigkill_daemon_bridge_reports_failed_then_records(
    ros: RosMaster, daemon: Daemon, binaries: Dict[str, Path], bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    assert bridge.call("start", episode_id="d1", env_id="", metadata_json="").ok
    pub = publishers("joint", "/joint_states", count=600, rate=200, t0=T0)
    durable = _durable(bridge, 50)
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    # the bridge stays up and says what happened
    st = wait_for("the bridge failed", lambda: (s := bridge.status())["state"] == "failed" and s)
    assert st["last_error"], st
    assert bridge.proc.poll() is None
    r = bridge.call("stop")
    assert (r.ok, r.code) == (False, "FAILED"), r
    pub.finish()

    _restart(daemon, binaries["wshardd"])
    # recovery finalized the killed episode; every acknowledged step kept
    d1 = L.index(daemon.data_dir, "d1")
    assert d1["status"] == "recovered", d1  # docs/DURABILITY.md: cut while recording
    ep = L.stream(daemon.data_dir, "d1", "joint_states")
    assert ep.timesteps >= durable
    L.check_joint(ep, 0, ep.timesteps, T0, 200)

    # the same bridge process: the next ~start connects anew
    r = bridge.call("start", episode_id="d2", env_id="", metadata_json="")
    assert r.ok, r
    p2 = publishers("joint", "/joint_states", count=50, rate=200, t0=T0, first=1000)
    assert p2.wait_published() == 50
    wait_for("50 recorded in d2", lambda: bridge.status()["streams"]["joint_states"]["pushed"] >= 50)
    r = bridge.call("stop")
    assert r.ok, r
    assert L.index(daemon.data_dir, "d2")["status"] == "complete"
    L.check_joint(L.stream(daemon.data_dir, "d2", "joint_states"), 1000, 50, T0, 200)
