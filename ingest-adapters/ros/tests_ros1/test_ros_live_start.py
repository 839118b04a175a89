"""The ROS 1 front end's start-up and its parts that need no recording: a message type not
installed is refused at start naming topic and type, a bad mapping is refused, the trigger
commands. The service types: test_ros_live_srv.py."""

import os
import subprocess
from pathlib import Path

import pytest
from daemon_harness import Daemon
from rosharness import PYTHON, PYTHONPATH, BridgeProc, RosMaster, free_port, wait_for

from wshard_ros.ros1.errors import BadTrigger
from wshard_ros.ros1.trigger import parse_trigger


def test_ros_live_type_not_installed_refused_at_start(ros: RosMaster, tmp_path: Path) -> None:
    # geometry_msgs without its .msg module (std_msgs is there): the type is known to the converters,
    # but rospy has no class for it.
    fake = tmp_path / "shadow" / "geometry_msgs"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[topics."/gripper"]\ntype = "std_msgs/Float64"\n[topics."/ft"]\ntype = "geometry_msgs/WrenchStamped"\n'
    )
    env = dict(ros.env, PYTHONPATH=f"{fake.parent}:{PYTHONPATH}")
    r = subprocess.run(
        [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(mapping), "--socket", str(tmp_path / "none.sock")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "topic '/ft'" in r.stderr and "'geometry_msgs/WrenchStamped'" in r.stderr and "not installed" in r.stderr


def _refused(tmp_path: Path, env: dict, mapping_text: str, *extra: str) -> str:  # type: ignore[type-arg]
    mapping = tmp_path / "m.toml"
    mapping.write_text(mapping_text)
    r = subprocess.run(
        [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(mapping), "--socket", str(tmp_path / "none.sock"), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, (r.returncode, r.stderr)
    return r.stderr


def _shadow(tmp_path: Path, module: str) -> str:
    """A PYTHONPATH whose ``module`` fails to import (as on a python without it)."""
    d = tmp_path / "shadow"
    d.mkdir(exist_ok=True)
    (d / f"{module}.py").write_text(f"raise ImportError('no {module} here')\n")
    return f"{d}:{PYTHONPATH}"


def test_ros_live_start_refused_without_rospy(ros: RosMaster, tmp_path: Path) -> None:
    env = dict(ros.env, PYTHONPATH=_shadow(tmp_path, "rospy"))
    err = _refused(tmp_path, env, '[topics."/imu"]\ntype = "sensor_msgs/Imu"\n')
    assert "rospy cannot be imported" in err and "/usr/bin/python3" in err


def test_ros_live_start_refused_without_pillow_for_decode(ros: RosMaster, tmp_path: Path) -> None:
    env = dict(ros.env, PYTHONPATH=_shadow(tmp_path, "PIL"))
    err = _refused(tmp_path, env, '[topics."/cam"]\ntype = "sensor_msgs/CompressedImage"\ncompressed = "decode"\n')
    assert "decode" in err and "Pillow" in err and "python3-pil" in err, err


def test_ros_live_start_refused_bridge_socket_in_use(ros: RosMaster, tmp_path: Path) -> None:
    import socket as so
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="wsb-", dir="/tmp")) / "bridge.sock"
    with so.socket(so.AF_UNIX, so.SOCK_STREAM) as live:
        live.bind(str(path))
        live.listen(1)
        err = _refused(tmp_path, ros.env, '[topics."/imu"]\ntype = "sensor_msgs/Imu"\n', "--bridge-socket", str(path))
    assert str(path) in err and "in use" in err, err


def test_ros_live_bad_mapping_refused_at_start(ros: RosMaster, tmp_path: Path) -> None:
    mapping = tmp_path / "m.toml"
    mapping.write_text('[topics."/x"]\ntype = "sensor_msgs/PointCloud2"\n')
    r = subprocess.run(
        [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(mapping), "--socket", str(tmp_path / "none.sock")],
        env=ros.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "topic '/x'" in r.stderr and "PointCloud2" in r.stderr


def test_ros_live_trigger_commands() -> None:
    assert parse_trigger("start ep1") == {"cmd": "start", "episode_id": "ep1", "env_id": ""}
    assert parse_trigger("  start ep1 kitchen ") == {"cmd": "start", "episode_id": "ep1", "env_id": "kitchen"}
    assert parse_trigger("stop") == {"cmd": "stop"}
    assert parse_trigger("ABORT") == {"cmd": "abort"}
    assert parse_trigger("annotate grasp the red  cup") == {"cmd": "annotate", "label": "grasp", "text": "the red  cup"}
    assert parse_trigger("annotate ok") == {"cmd": "annotate", "label": "ok"}
    assert parse_trigger('{"cmd": "annotate", "label": "x", "json": {"a": 1}}')["json"] == {"a": 1}
    for bad, why in [
        ("", "empty"),
        ("start", "EPISODE_ID"),
        ("start a b c", "3 arguments"),
        ("stop now", "no arguments"),
        ("annotate", "LABEL"),
        ("record ep", "unknown command 'record'"),
        ("{nope", "not JSON"),
        ('{"cmd": "reboot"}', "'cmd'"),
        ("[1]", "unknown command"),
    ]:
        with pytest.raises(BadTrigger, match=why):
            parse_trigger(bad)


def test_ros_live_start_before_the_master(tmp_path: Path, daemon: Daemon) -> None:
    """Started before rosmaster (a boot order systemd does not fix): rospy keeps trying,
    the services come up once the master does, and the bridge records."""
    port = free_port()
    env = dict(
        os.environ,
        ROS_MASTER_URI=f"http://127.0.0.1:{port}",
        ROS_IP="127.0.0.1",
        ROS_HOSTNAME="localhost",
        PYTHONPATH=PYTHONPATH,
        ROS_HOME=str(tmp_path / "ros_home"),
    )
    mapping = tmp_path / "m.toml"
    mapping.write_text('[topics."/imu"]\ntype = "sensor_msgs/Imu"\n')
    log = open(tmp_path / "bridge.log", "wb")  # noqa: SIM115 - closed by bridge.stop()
    proc = subprocess.Popen(
        [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(mapping), "--socket", str(daemon.socket)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    master = None
    bridge = None
    try:
        wait_for(
            "rospy's retry message", lambda: b"master may not be running yet" in (tmp_path / "bridge.log").read_bytes()
        )
        master = RosMaster(tmp_path, port)
        os.environ["ROS_MASTER_URI"] = master.uri
        bridge = BridgeProc.attach(master, proc, log)
        assert bridge.call("start", episode_id="late", env_id="", metadata_json="").ok
        assert bridge.call("stop").ok
        assert bridge.stop() == 0
    finally:
        if bridge is None:
            proc.kill()
            proc.wait()
            log.close()
        if master is not None:
            master.stop()


def test_ros_live_start_node_name_remapped(ros: RosMaster, daemon: Daemon, bridge_factory) -> None:  # type: ignore[no-untyped-def]
    """`__name:=` renames the node: services and trigger follow its private namespace."""
    mapping = '[topics."/imu"]\ntype = "sensor_msgs/Imu"\n'
    bridge: BridgeProc = bridge_factory(mapping, daemon, extra=["__name:=recorder2"], wait=False)
    bridge.node = "/recorder2"
    bridge._wait_services()
    st = bridge.status()
    assert st["ros"]["node"] == "/recorder2" and st["state"] == "idle"
