"""The bridge control socket: one JSON request line per connection, one JSON reply line,
typed error codes; the socket file's mode; ``python3 -m wshard_ros.bridge``."""

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator

import bridgekit as K
import pytest

from wshard_ros.bridge import ControlServer, serve_control
from wshard_ros.bridge.errors import ControlSocketError

SRC = Path(__file__).resolve().parents[1] / "src"
CLIENT_SRC = Path(__file__).resolve().parents[2] / "python" / "src"


@pytest.fixture
def sockdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="wsb-", dir="/tmp"))  # short: AF_UNIX paths are < 108 bytes
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


def raw(path: Path, line: bytes) -> Dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(path))
        s.sendall(line)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.endswith(b"\n") and data.count(b"\n") == 1, data
    reply: Dict[str, Any] = json.loads(data)
    return reply


def call(path: Path, **request: Any) -> Dict[str, Any]:
    return raw(path, json.dumps(request).encode() + b"\n")


def code(reply: Dict[str, Any]) -> str:
    assert reply["ok"] is False, reply
    return str(reply["error"]["code"])


def test_ros_bridge_control_socket_commands(daemon, sockdir) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    path = sockdir / "bridge.sock"
    with serve_control(bridge, str(path)):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o660
        assert code(call(path, cmd="stop")) == "NOT_RECORDING"
        assert code(call(path, cmd="abort")) == "NOT_RECORDING"
        assert code(call(path, cmd="annotate", label="x", at_ns=1)) == "NOT_RECORDING"
        r = call(path, cmd="start", episode_id="c1", env_id="env", metadata={"k": 1})
        assert r["ok"] and r["result"]["state"] == "recording" and r["result"]["episode"] == "c1"
        assert code(call(path, cmd="start", episode_id="c2")) == "ALREADY_RECORDING"
        for i in range(4):
            bridge.on_message("/joint_states", K.joints(i), i)
        r = call(path, cmd="annotate", label="grasp", text="t", at_ns=K.stamp(1))
        assert r["ok"] and r["result"]["seq"] == 0
        r = call(path, cmd="annotate", label="j", json={"a": [1, 2]})
        assert r["ok"] and r["result"]["t_ns"] == K.stamp(3)
        st = call(path, cmd="status")["result"]
        assert st["topics"]["/joint_states"]["recorded"] == 4 and st["streams"]["joint_states"]["joined"]
        r = call(path, cmd="stop")
        assert r["ok"] and r["result"]["outcome"] == "completed"
        assert r["result"]["streams"]["joint_states"]["timesteps"] == 4
        assert call(path, cmd="start", episode_id="c2")["ok"]
        bridge.on_message("/joint_states", K.joints(9), 9)
        r = call(path, cmd="abort")
        assert r["ok"] and r["result"]["outcome"] == "aborted"
        assert code(call(path, cmd="start", episode_id="c1")) == "DAEMON"  # EPISODE_EXISTS
    assert not path.exists()
    assert K.index_of(daemon, "c1")["status"] == "complete"
    assert K.index_of(daemon, "c2")["status"] == "aborted"
    assert [a["label"] for a in K.annotations_of(daemon, "c1")] == ["grasp", "j"]


def test_ros_bridge_control_socket_bad_requests(daemon, sockdir) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    path = sockdir / "b.sock"
    with ControlServer(bridge, str(path)):
        for line in (b"not json\n", b"[1, 2]\n", b"\n", b'{"cmd": "dance"}\n', b"{}\n"):
            reply = raw(path, line)
            assert code(reply) == "BAD_REQUEST", line
            assert reply["error"]["message"]
        assert "unknown cmd 'dance'" in raw(path, b'{"cmd": "dance"}\n')["error"]["message"]
        for req in (
            {"cmd": "start"},
            {"cmd": "start", "episode_id": 5},
            {"cmd": "start", "episode_id": "x", "env_id": 1},
            {"cmd": "start", "episode_id": "x", "metadata": [1]},
            {"cmd": "start", "episode_id": "bad id"},
        ):
            assert code(call(path, **req)) == "BAD_REQUEST", req
        assert call(path, cmd="start", episode_id="ok")["ok"]
        for req in (
            {"cmd": "annotate"},
            {"cmd": "annotate", "label": "x", "at_ns": "soon"},
            {"cmd": "annotate", "label": "x", "at_ns": True},
            {"cmd": "annotate", "label": "x", "text": 3, "at_ns": 1},
            {"cmd": "annotate", "label": "x", "text": "a", "json": 1, "at_ns": 1},
        ):
            assert code(call(path, **req)) == "BAD_REQUEST", req
        big = raw(path, b'{"cmd":"status","pad":"' + b"x" * 70000 + b'"}\n')
        assert code(big) == "BAD_REQUEST" and "bytes" in big["error"]["message"]
        assert call(path, cmd="stop")["ok"]


def test_ros_bridge_control_socket_path_in_use_and_stale(daemon, sockdir) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    path = sockdir / "s.sock"
    with ControlServer(bridge, str(path)):
        with pytest.raises(ControlSocketError, match="in use"):
            ControlServer(bridge, str(path))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # bound, never listening: a stale file
    stale.close()
    with ControlServer(bridge, str(path)):
        assert call(path, cmd="status")["result"]["state"] == "idle"
    path.write_text("not a socket")
    with pytest.raises(ControlSocketError, match="not a socket"):
        ControlServer(bridge, str(path))
    with pytest.raises(ValueError):
        serve_control(bridge)  # no path given, none configured
    with pytest.raises(ControlSocketError, match="no/such/dir"):
        ControlServer(bridge, str(sockdir / "no" / "such" / "dir" / "s.sock"))
    path.unlink()
    with ControlServer(bridge, str(path)):
        # the end of the stream ends a request without its newline
        assert raw(path, b'{"cmd": "status"}')["ok"] is True


def test_ros_bridge_main_serves_and_stops_on_sigterm(daemon, sockdir, tmp_path) -> None:
    mapping = K.write_mapping(tmp_path, K.JOINTS_AND_CAMERA)
    path = sockdir / "m.sock"
    env = dict(os.environ, PYTHONPATH=f"{SRC}:{CLIENT_SRC}")
    cmd = [sys.executable, "-m", "wshard_ros.bridge", "--mapping", str(mapping), "--socket", str(daemon.socket)]
    cmd += ["--control-socket", str(daemon.config.parent / "wshardd-control.sock"), "--bridge-socket", str(path)]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "serving PATH" once the socket listens
        assert "serving" in line, line
        assert call(path, cmd="start", episode_id="m1")["ok"]
        assert call(path, cmd="status")["result"]["state"] == "recording"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert K.index_of(daemon, "m1")["status"] == "complete"  # stopped on SIGTERM
    bad = subprocess.run(
        cmd[:3] + ["--mapping", "/nonexistent.toml", "--socket", "s", "--bridge-socket", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "nonexistent.toml" in bad.stderr


def test_ros_bridge_control_socket_request_timeout(daemon, sockdir) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    path = sockdir / "t.sock"
    with ControlServer(bridge, str(path), request_timeout=0.2):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(path))
            s.sendall(b'{"cmd": "sta')  # never finished
            reply = json.loads(s.makefile("rb").readline())
        assert code(reply) == "BAD_REQUEST" and "no request line within 0.2 s" in reply["error"]["message"]
        assert call(path, cmd="status")["ok"]  # still serving


def test_ros_bridge_options_refused() -> None:
    from wshard_ros.bridge import BridgeOptions

    for bad in ({"queue_steps": 0}, {"max_pending": 0}, {"timeout": 0}, {"transport": "tcp"}):
        with pytest.raises(ValueError):
            BridgeOptions(socket_path="s", **bad)
    o = BridgeOptions(socket_path="s", shm_streams={"cam"})
    assert o.stream_transport("cam") == "shm" and o.stream_transport("js") == "socket"
    assert BridgeOptions(socket_path="s", transport="shm").stream_transport("js") == "shm"
