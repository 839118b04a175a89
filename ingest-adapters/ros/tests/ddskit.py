"""Helpers of the DDS front end's tests: the bridge (``python3 -m wshard_ros.ros2dds``) and
publishers (tests/dds_publisher.py) as separate processes on loopback (no multicast), each
test on its own DDS domain."""

import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import bridgekit as K
import dds_workload as W
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from daemon_harness import Daemon

from wshard_ros.ros2dds.command import reply_qos
from wshard_ros.ros2dds.idl import String_
from wshard_ros.ros2dds.participant import DdsOptions, Participant, writer_qos

HERE = Path(__file__).resolve().parent
ROS = HERE.parent
PYTHONPATH = os.pathsep.join([str(ROS / "src"), str(ROS.parent / "python" / "src")])
#: A domain per test (per pytest process) so concurrent runs on one host do not mix.
_DOMAINS = itertools.count(100 + os.getpid() % 60)
DEADLINE_S = 30.0


def env() -> Dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHONPATH + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.pop("CYCLONEDDS_URI", None)
    return e


def new_domain() -> int:
    return next(_DOMAINS) % 230


def wait_for(what: str, check: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    """Poll ``check`` until true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class BridgeProc:
    """The bridge process: ``request()`` talks to its bridge socket; ``stop()`` SIGTERMs it."""

    def __init__(self, daemon: Daemon, mapping: Path, workdir: Path, domain: int, *extra: str) -> None:
        self.sock = str(workdir / "bridge.sock")
        self.log_path = workdir / "bridge.log"
        self._log = open(self.log_path, "wb")
        control = str(daemon.config.parent / "wshardd-control.sock")
        cmd = [sys.executable, "-m", "wshard_ros.ros2dds", "--mapping", str(mapping), "--socket", str(daemon.socket)]
        cmd += ["--control-socket", control, "--bridge-socket", self.sock, "--domain-id", str(domain), "--loopback"]
        self.proc = subprocess.Popen(cmd + list(extra), env=env(), stdout=self._log, stderr=subprocess.STDOUT)
        wait_for("the bridge socket", self._ready)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"bridge exited with {self.proc.returncode}:\n{self.log()}")
        return os.path.exists(self.sock)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def request(self, req: Dict[str, Any]) -> Dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            s.connect(self.sock)
            s.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        reply: Dict[str, Any] = json.loads(buf)
        return reply

    def ok(self, req: Dict[str, Any]) -> Dict[str, Any]:
        reply = self.request(req)
        assert reply["ok"], f"{req} -> {reply}\n{self.log()}"
        result: Dict[str, Any] = reply["result"]
        return result

    def wait_received(self, counts: Dict[str, int]) -> Dict[str, Any]:
        """Until the bridge has received ``counts[topic]`` messages of each topic (topics
        and event topics); the status then."""
        status: Dict[str, Any] = {}

        def check() -> bool:
            nonlocal status
            status = self.ok({"cmd": "status"})
            got = {**status["topics"], **status["events"]}
            return all(got[t]["received"] >= n for t, n in counts.items())

        wait_for(f"received counts {counts}", check)
        return status

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self._log.close()
        return int(self.proc.returncode)


class Publisher:
    """One tests/dds_publisher.py process."""

    def __init__(self, domain: int, topic: str, kind: str, rate: float, count: int, *extra: str) -> None:
        cmd = [sys.executable, str(HERE / "dds_publisher.py"), "--domain", str(domain), "--loopback"]
        cmd += ["--topic", topic, "--kind", kind, "--rate", str(rate), "--count", str(count), *extra]
        self.proc = subprocess.Popen(
            cmd, env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: List[str] = []

    def expect(self, line: str) -> None:
        """Read stdout lines until ``line`` (fails on EOF)."""
        assert self.proc.stdout is not None
        while True:
            got = self.proc.stdout.readline()
            if not got:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"publisher ended ({self.proc.wait()}) before {line!r}: {self.lines}\n{err}")
            self.lines.append(got.strip())
            if got.strip() == line:
                return

    def wait(self, timeout: float = 60.0) -> int:
        """Close stdin (a ``--hold`` publisher then exits) and wait."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


class Commander:
    """A DDS participant in the test process: writes commands, reads replies."""

    def __init__(self, domain: int, node: str = "wshard_ros_bridge") -> None:
        self.part = Participant(DdsOptions(domain_id=domain, loopback=True))
        cmd = Topic(self.part.dp, f"rt/{node}/command", String_)
        rep = Topic(self.part.dp, f"rt/{node}/reply", String_)
        self.writer = DataWriter(self.part.dp, cmd, qos=writer_qos())
        self.reader = DataReader(self.part.dp, rep, qos=reply_qos())
        wait_for("the bridge's command reader", lambda: bool(self.writer.get_matched_subscriptions()))
        self.replies: Dict[Any, Dict[str, Any]] = {}

    def send(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Write ``request`` (with an id) and wait for its reply."""
        req_id = f"r{len(self.replies)}-{time.monotonic_ns()}"
        self.writer.write(String_(data=json.dumps({**request, "id": req_id})))

        def got() -> bool:
            for s in self.reader.take(N=16):
                reply = json.loads(s.data)
                self.replies[reply.get("id")] = reply
            return req_id in self.replies

        wait_for(f"the reply to {request}", got)
        return self.replies[req_id]

    def send_raw(self, text: str) -> None:
        self.writer.write(String_(data=text))

    def close(self) -> None:
        self.part.close()


def run_all(pubs: List["Publisher"], counts: List[int]) -> None:
    """Wait for every publisher's ``matched`` and ``done N``, then its exit 0."""
    for p in pubs:
        p.expect("matched")
    for p, n in zip(pubs, counts):
        p.expect(f"done {n}")
        assert p.wait() == 0


def read_events(daemon: Daemon, episode: str) -> List[Dict[str, Any]]:
    path = daemon.data_dir / episode / f"{episode}_events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 1000

[topics."/camera/image_raw"]
type = "sensor_msgs/Image"
stream = "cam"
codec = "none"
tick_hz = 30

[events."/instruction"]
type = "std_msgs/String"
label = "instruction"

[events."/success"]
type = "std_msgs/Bool"
"""

W_IMG, H_IMG = 32, 24


def f64s(values: List[float]) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def check_joints(daemon: Daemon, episode: str, first: int, n: int) -> None:
    """Stream ``joint_states`` of ``episode``: messages ``first..first+n`` of the workload, bit for bit."""
    s = K.stream_of(daemon, episode, "joint_states")
    assert s.status == "complete"
    idx = range(first, first + n)
    assert s.timestamps == [W.stamp(i, 1000) for i in idx]
    vals = [W.joint_values(i) for i in idx]
    assert s.channel("signal/position") == b"".join(f64s(v[0]) for v in vals)
    assert s.channel("signal/velocity") == b"".join(f64s(v[1]) for v in vals)
    assert s.channel("signal/effort") == b"".join(f64s(v[2]) for v in vals)
    recv = struct.unpack(f"<{n}q", s.channel("signal/receive_t_ns"))
    assert list(recv) == sorted(recv) and recv[0] > W.BASE_NS  # wall clock, after the stamps' base


def publish_triggers(domain: int, topic: str, kind: str, text: str = "", count: int = 1) -> None:
    """Run tests/dds_trigger_publisher.py: ``count`` messages of ``kind`` (``string``:
    std_msgs/String ``text``; ``fault``: a type the bridge has no IDL of) on ``topic``,
    each acknowledged by the bridge's reader."""
    cmd = [sys.executable, str(HERE / "dds_trigger_publisher.py"), "--domain", str(domain), "--topic", topic]
    cmd += ["--kind", kind, "--text", text, "--count", str(count)]
    r = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f"done {count}" in r.stdout, f"exit {r.returncode}: {r.stdout}\n{r.stderr}"
