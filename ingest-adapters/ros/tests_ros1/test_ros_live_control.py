"""Episode control the ROS way: services ~start / ~annotate / ~stop, then a second episode
through the ~trigger topic; both episodes complete and hold exactly their own messages;
refusals answer their codes; the bridge socket (--bridge-socket) serves the same bridge."""

import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Dict

import livecheck as L
import rospy
from daemon_harness import Daemon
from rosharness import BridgeProc, RosMaster, wait_for

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
MAPPING = '[topics."/joint_states"]\ntype = "sensor_msgs/JointState"\ntick_hz = 200\n'


def _bridge_socket(path: Path, request: dict) -> dict:  # type: ignore[type-arg]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        s.sendall(json.dumps(request).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return dict(json.loads(buf))


def test_ros_live_control_two_episodes_services_then_trigger(
    ros: RosMaster, daemon: Daemon, bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    sock = Path(tempfile.mkdtemp(prefix="wsb-", dir="/tmp")) / "bridge.sock"
    bridge: BridgeProc = bridge_factory(MAPPING, daemon, extra=["--bridge-socket", str(sock)])

    # refusals while idle
    r = bridge.call("stop")
    assert (r.ok, r.code) == (False, "NOT_RECORDING") and r.summary_json == ""
    r = bridge.call("annotate", label="x", text="", json="", at=rospy.Time(0))
    assert (r.ok, r.code) == (False, "NOT_RECORDING")
    r = bridge.call("start", episode_id="", env_id="", metadata_json="")
    assert (r.ok, r.code) == (False, "BAD_REQUEST"), r
    assert _bridge_socket(sock, {"cmd": "status"})["result"]["state"] == "idle"
    # the ROS tools find the service types (wshard_ros_msgs on PYTHONPATH)
    r = subprocess.run(
        ["rosservice", "call", "/wshard_ros_bridge/status"], env=ros.env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and "status_json" in r.stdout and '\\"state\\": \\"idle\\"' in r.stdout, r

    # episode 1 through the services
    r = bridge.call("start", episode_id="c1", env_id="lab", metadata_json='{"operator": "ann"}')
    assert r.ok, r
    r = bridge.call("start", episode_id="c1b", env_id="", metadata_json="")
    assert (r.ok, r.code) == (False, "ALREADY_RECORDING")
    p1 = publishers("joint", "/joint_states", count=100, rate=200, t0=T0)
    assert p1.wait_published() == 100
    bridge.wait_received({"/joint_states": 100})
    r = bridge.call("annotate", label="grasp", text="left cup", json="", at=rospy.Time(0))
    assert r.ok, r
    at = rospy.Time(secs=T0 // NS, nsecs=5 * NS // 200)
    r = bridge.call("annotate", label="score", text="", json='{"points": 3}', at=at)
    assert r.ok, r
    r = bridge.call("annotate", label="bad", text="", json="{nope", at=rospy.Time(0))
    assert (r.ok, r.code) == (False, "BAD_REQUEST")
    r = bridge.call("stop")
    assert r.ok, r
    summary = json.loads(r.summary_json)
    assert summary["episode"] == "c1" and summary["outcome"] == "completed", summary
    p1.finish()

    # episode 2 through the trigger topic
    trig = publishers("text", "/wshard_ros_bridge/trigger", text=["start c2 kitchen"], rate=10, node="trig")
    assert trig.wait_published() == 1
    wait_for("episode c2 recording", lambda: bridge.status()["episode"] == "c2")
    p2 = publishers("joint", "/joint_states", count=100, rate=200, t0=T0, first=100)
    assert p2.wait_published() == 100
    bridge.wait_received({"/joint_states": 200})
    trig2 = publishers(
        "text", "/wshard_ros_bridge/trigger", text=["annotate done all good", "bogus", "stop"], rate=10, node="trig2"
    )
    assert trig2.wait_published() == 3
    wait_for("the trigger's commands received", lambda: bridge.status()["ros"]["trigger"]["received"] == 4)
    # The trigger topic counts a command when it arrives; its stop then finishes the episode
    # (the streams drain, the daemon finalizes), which takes a moment on a loaded machine.
    st = wait_for("the trigger's stop", lambda: (s := bridge.status())["state"] == "idle" and s)
    assert st["state"] == "idle" and st["episode"] is None, st
    assert st["ros"]["trigger"]["refused"] == 1
    assert st["topics"]["/joint_states"]["recorded"] == 200

    data = daemon.data_dir
    for ep, first in (("c1", 0), ("c2", 100)):
        index = L.index(data, ep)
        assert index["status"] == "complete", index
        L.check_joint(L.stream(data, ep, "joint_states"), first, 100, T0, 200)
    ann1 = L.annotations(data, "c1")
    assert [(a["label"], a["t_ns"]) for a in ann1] == [("grasp", T0 + 99 * NS // 200), ("score", T0 + 5 * NS // 200)]
    assert [(a["kind"], a["data"]) for a in ann1] == [("text", "left cup"), ("json", {"points": 3})]
    ann2 = L.annotations(data, "c2")
    assert [(a["label"], a["kind"], a["data"], a["t_ns"]) for a in ann2] == [
        ("done", "text", "all good", T0 + 199 * NS // 200)
    ]
    daemon.assert_verified(data / "c1", data / "c2")


def test_ros_live_control_sigterm_stops_the_episode(
    ros: RosMaster, daemon: Daemon, bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    """SIGTERM (systemctl stop): rospy shuts down, the bridge stops the episode (drained,
    completed) and exits 0."""
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    assert bridge.call("start", episode_id="t1", env_id="", metadata_json="").ok
    pub = publishers("joint", "/joint_states", count=80, rate=200, t0=T0)
    assert pub.wait_published() == 80
    bridge.wait_received({"/joint_states": 80})
    assert bridge.stop() == 0, bridge.log()
    assert L.index(daemon.data_dir, "t1")["status"] == "complete"
    L.check_joint(L.stream(daemon.data_dir, "t1", "joint_states"), 0, 80, T0, 200)


def test_ros_live_control_wshard_bridge_cli(
    ros: RosMaster, daemon: Daemon, binaries: Dict[str, Path], bridge_factory, publishers  # type: ignore[no-untyped-def]
) -> None:
    """`wshard bridge start|annotate|status|stop` on the bridge socket of a ROS 1 bridge."""
    sock = Path(tempfile.mkdtemp(prefix="wsb-", dir="/tmp")) / "bridge.sock"
    bridge_factory(MAPPING, daemon, extra=["--bridge-socket", str(sock)])
    env = dict(os.environ, WSHARD_BRIDGE_SOCKET=str(sock))

    def cli(*args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [str(binaries["wshard"]), "bridge", *args], env=env, capture_output=True, text=True, timeout=60
        )

    r = cli("start", "cli1", "--env-id", "lab", "--metadata", '{"robot": "r2"}')
    assert r.returncode == 0, f"wshard bridge start (a wshard with the bridge verb is needed): {r.stderr}"
    pub = publishers("joint", "/joint_states", count=50, rate=200, t0=T0)
    assert pub.wait_published() == 50
    wait_for("50 received", lambda: json.loads(cli("status", "--json").stdout)["result"]["topics"]["/joint_states"]
             ["received"] >= 50)
    r = cli("annotate", "--label", "grasp", "--text", "from the cli")
    assert r.returncode == 0, r.stderr
    r = cli("stop")
    assert r.returncode == 0, r.stderr
    r = cli("stop", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "NOT_RECORDING", r
    assert L.index(daemon.data_dir, "cli1")["status"] == "complete"
    L.check_joint(L.stream(daemon.data_dir, "cli1", "joint_states"), 0, 50, T0, 200)
    assert [(a["label"], a["data"]) for a in L.annotations(daemon.data_dir, "cli1")] == [("grasp", "from the cli")]
