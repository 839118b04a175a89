"""The DDS front end's options: domain ids, the loopback switch, reader QoS, the command
line's refusals (exit 2 naming what is wrong), command parsing."""

import subprocess
import sys
from pathlib import Path

import bridgekit as K
import ddskit as D
import pytest
from cyclonedds.core import Policy

from wshard_ros.ros2dds.cli import options, parser
from wshard_ros.ros2dds.command import parse_command
from wshard_ros.ros2dds.errors import CommandError, DdsSetupError
from wshard_ros.ros2dds.participant import (
    LOOPBACK_CONFIG,
    XCDR1,
    check_domain_id,
    default_domain_id,
    reader_qos,
)


def test_ros_dds_options_domain_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    assert default_domain_id() == 0
    monkeypatch.setenv("ROS_DOMAIN_ID", "42")
    assert default_domain_id() == 42
    monkeypatch.setenv("ROS_DOMAIN_ID", "x1")
    with pytest.raises(DdsSetupError, match="ROS_DOMAIN_ID='x1'"):
        default_domain_id()
    assert check_domain_id(232) == 232
    with pytest.raises(DdsSetupError, match="233"):
        check_domain_id(233)


def test_ros_dds_options_loopback_and_qos(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "<AllowMulticast>false</AllowMulticast>" in LOOPBACK_CONFIG
    assert "<Peer address='127.0.0.1'/>" in LOOPBACK_CONFIG and "name='lo'" in LOOPBACK_CONFIG
    args = ["--mapping", "m.toml", "--socket", "s"]
    monkeypatch.delenv("WSHARD_ROS2_LOOPBACK", raising=False)
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    assert not options(parser().parse_args(args)).dds.loopback
    assert options(parser().parse_args(args + ["--loopback"])).dds.loopback
    monkeypatch.setenv("WSHARD_ROS2_LOOPBACK", "1")
    assert options(parser().parse_args(args)).dds.loopback
    opts = options(parser().parse_args(args + ["--best-effort", "--domain-id", "7"]))
    assert opts.dds.best_effort and opts.dds.domain_id == 7
    reliable = reader_qos(False)
    assert isinstance(reliable[Policy.Reliability], Policy.Reliability.Reliable)
    assert reliable[Policy.History] == Policy.History.KeepAll
    assert reliable[Policy.DataRepresentation] == XCDR1
    assert reader_qos(True)[Policy.Reliability] == Policy.Reliability.BestEffort


def test_ros_dds_options_command_line_refusals(tmp_path: Path) -> None:
    mapping = K.write_mapping(tmp_path, D.MAPPING)
    base = [sys.executable, "-m", "wshard_ros.ros2dds", "--mapping", str(mapping), "--socket", str(tmp_path / "s")]
    for extra, needle in (
        (["--node-name", "9bad"], "--node-name '9bad'"),
        (["--domain-id", "300"], "DDS domain id 300"),
        (["--queue-steps", "0"], "--queue-steps 0"),
    ):
        r = subprocess.run(base + extra, env=D.env(), capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and needle in r.stderr, (extra, r.returncode, r.stderr)
    bad = tmp_path / "bad.toml"
    bad.write_text('[topics."/x"]\ntype = "sensor_msgs/JointState"\ntime = "sim"\n')
    r = subprocess.run(base[:4] + [str(bad)] + base[5:], env=D.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "'/x'" in r.stderr and "'time'" in r.stderr, r.stderr


def test_ros_dds_options_parse_command() -> None:
    assert parse_command('{"cmd": "stop", "id": 7}') == (7, {"cmd": "stop"})
    assert parse_command('{"cmd": "status"}') == (None, {"cmd": "status"})
    with pytest.raises(CommandError, match="not JSON"):
        parse_command("stop")
    with pytest.raises(CommandError, match="got list"):
        parse_command("[1]")
