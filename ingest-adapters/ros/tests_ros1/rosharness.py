"""Real ROS 1 parts for the live tests and the benchmark: a ``rosmaster --core`` on loopback
(free port), the bridge process (``/usr/bin/python3 -m wshard_ros.ros1``) and rospy publisher
processes (ros_pub.py). Everything is a real process; stopped with SIGTERM (SIGKILL where a
test says so)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROS_DIR = HERE.parent
REPO = ROS_DIR.parents[1]
PYTHON = "/usr/bin/python3"
PYTHONPATH = os.pathsep.join([str(ROS_DIR / "src"), str(REPO / "ingest-adapters" / "python" / "src")])


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def wait_for(what: str, check: Callable[[], Any], timeout: float = 20.0, every: float = 0.02) -> Any:
    """Poll ``check`` until it returns something truthy; AssertionError naming ``what`` after
    ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class RosMaster:
    """``rosmaster --core`` on 127.0.0.1:PORT; ``env`` is what every ROS process gets."""

    def __init__(self, workdir: Path, port: Optional[int] = None) -> None:
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ)
        self.env.update(
            ROS_MASTER_URI=self.uri,
            ROS_IP="127.0.0.1",
            ROS_HOSTNAME="localhost",
            ROS_HOME=str(workdir / "ros_home"),
            ROS_LOG_DIR=str(workdir / "ros_log"),
            PYTHONPATH=PYTHONPATH,
            PYTHONUNBUFFERED="1",
        )
        self.log_path = workdir / "rosmaster.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            ["rosmaster", "--core", "-p", str(self.port)], env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        wait_for("rosmaster", self._up, timeout=20.0)

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"rosmaster exited {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
        import xmlrpc.client

        try:
            code, _, _ = xmlrpc.client.ServerProxy(self.uri).getSystemState("/test")
            return bool(code == 1)
        except OSError:
            return False

    def set_param(self, key: str, value: Any) -> None:
        import xmlrpc.client

        code, msg, _ = xmlrpc.client.ServerProxy(self.uri).setParam("/test", key, value)
        assert code == 1, msg

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class Publisher:
    """One ros_pub.py process (see its docstring); ``finish()`` closes its stdin."""

    def __init__(self, master: RosMaster, workdir: Path, kind: str, topic: str, **opts: Any) -> None:
        args = [PYTHON, str(HERE / "ros_pub.py"), "--kind", kind, "--topic", topic]
        for key, value in opts.items():
            for v in value if isinstance(value, list) else [value]:
                args += [f"--{key}", str(v)]
        self.log_path = workdir / f"pub{topic.replace('/', '_')}_{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            args, env=master.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )

    def wait_published(self, timeout: float = 60.0) -> int:
        """Block until it printed ``published N``; returns N."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not line.startswith("published"):
            self.proc.wait(timeout=timeout)
            raise AssertionError(f"publisher failed ({self.proc.returncode}): {self.log_path.read_text()[-2000:]}")
        return int(line.split()[1])

    def finish(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class BridgeProc:
    """The bridge process: ``/usr/bin/python3 -m wshard_ros.ros1`` with the mapping."""

    def __init__(
        self,
        master: RosMaster,
        workdir: Path,
        mapping: str,
        socket_path: Path,
        control_socket: Optional[Path] = None,
        extra: Optional[List[str]] = None,
        wait: bool = True,
    ) -> None:
        self.master = master
        self.mapping_path = workdir / f"mapping_{time.monotonic_ns()}.toml"
        self.mapping_path.write_text(mapping)
        args = [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(self.mapping_path), "--socket", str(socket_path)]
        if control_socket is not None:
            args += ["--control-socket", str(control_socket)]
        args += extra or []
        self.log_path = workdir / f"bridge_{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, env=master.env, stdout=self._log, stderr=subprocess.STDOUT)
        self.node = "/wshard_ros_bridge"
        if wait:
            self._wait_services()

    @classmethod
    def attach(cls, master: RosMaster, proc: "subprocess.Popen[bytes]", log: Any) -> "BridgeProc":
        """A bridge process the caller started with its output on the file ``log`` (closed
        by :meth:`stop`), once its services answer."""
        b = cls.__new__(cls)
        b.master, b.proc, b.node, b.log_path, b._log = master, proc, "/wshard_ros_bridge", Path(log.name), log
        b._wait_services()
        return b

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def _wait_services(self) -> None:
        """Until ~status answers (a killed bridge's registration may still be listed)."""

        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"bridge exited {self.proc.returncode}:\n{self.log()}")
            try:
                self.status()
                return True
            except Exception:  # noqa: BLE001 - not registered yet, or a dead node's URI (rospy raises several kinds)
                return False

        wait_for("the bridge's services", up, timeout=30.0, every=0.05)

    def call(self, name: str, **fields: Any) -> Any:
        """Call ``~name`` (wshard_ros_msgs) and return the response."""
        os.environ["ROS_MASTER_URI"] = self.master.uri
        import rospy

        from wshard_ros_msgs import srv

        cls = getattr(srv, "".join(part.capitalize() for part in name.split("_")))
        proxy = rospy.ServiceProxy(f"{self.node}/{name}", cls)
        return proxy(**fields)

    def status(self) -> Dict[str, Any]:
        return dict(json.loads(self.call("status").status_json))

    def wait_received(self, counts: Dict[str, int], timeout: float = 60.0) -> Dict[str, Any]:
        """Poll ~status until each topic's ``received`` reached its count."""

        def done() -> Optional[Dict[str, Any]]:
            st = self.status()
            got = {**st.get("topics", {}), **st.get("events", {})}
            if all(got.get(t, {}).get("received", 0) >= n for t, n in counts.items()):
                return st
            return None

        return dict(wait_for(f"received counts {counts}", done, timeout=timeout, every=0.1))

    def wait_publishers(self, n: int, timeout: float = 20.0) -> None:
        """Until ``n`` publisher connections in total show on ~status."""
        wait_for(f"{n} publisher connections", lambda: sum(self.status()["ros"]["publishers"].values()) >= n, timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return int(self.proc.returncode)


def run_module_python(code: str, env: Dict[str, str]) -> "subprocess.CompletedProcess[str]":
    """Run ``code`` with /usr/bin/python3 and the source dirs on PYTHONPATH."""
    return subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60)


__all__ = ["BridgeProc", "Publisher", "RosMaster", "free_port", "wait_for", "run_module_python", "sys"]
