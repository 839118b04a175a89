"""The private ``wshardd`` of ``--data-dir``: its own config (deterministic output: no
age-based chunk roll), a temporary socket directory, readiness by ``sd_notify``
(``READY=1`` on a datagram socket of ours), a clean stop by SIGTERM."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

from .errors import DaemonStartError

#: The longest a Unix socket path may be (sun_path less its NUL).
MAX_SOCKET_PATH = 107
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 120.0
#: Config of the private daemon. `rotation.max_seconds` at its maximum: chunks roll on
#: size and step count only, never on the wall clock, so one bag gives the same chunks.
#: (The daemon splits a batch at the step the limit falls on, so how the client batched
#: the steps does not move a chunk boundary.)
DEFAULT_MAX_TIMESTEPS = 100_000
CONFIG = """data_dir = {data_dir}
[socket]
path = {socket}
[control]
path = {control}
[rotation]
max_seconds = 86400
max_timesteps = {max_timesteps}
[log]
level = "warn"
"""


def find_wshardd(explicit: Optional[str]) -> str:
    """``--wshardd``, else ``$WSHARDD_BIN``, else the ``wshardd`` beside ``$WSHARD_BIN`` or
    beside the ``wshard`` on PATH, else ``wshardd`` on PATH.

    Raises:
        DaemonStartError: none of them is an executable file.
    """
    candidates: List[str] = []
    if explicit:
        candidates.append(explicit)
    elif os.environ.get("WSHARDD_BIN"):
        candidates.append(os.environ["WSHARDD_BIN"])
    else:
        for wshard in (os.environ.get("WSHARD_BIN"), shutil.which("wshard")):
            if wshard:
                candidates.append(str(Path(wshard).resolve().with_name("wshardd")))
        found = shutil.which("wshardd")
        if found:
            candidates.append(found)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    tried = ", ".join(candidates) or "--wshardd, $WSHARDD_BIN, beside wshard, PATH"
    raise DaemonStartError(f"wshardd not found (tried {tried}): give --wshardd PATH")


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class PrivateDaemon:
    """A ``wshardd`` writing to ``data_dir``, for one import (chunks of at most
    ``max_timesteps`` steps). ``socket`` and ``control`` are its sockets; :meth:`stop` ends
    it (also a context manager).

    Raises (from the constructor):
        DaemonStartError: it could not start or did not become ready (its log is quoted).
    """

    def __init__(self, binary: str, data_dir: str, max_timesteps: int = DEFAULT_MAX_TIMESTEPS) -> None:
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        base = tempfile.gettempdir()
        if len(os.path.join(base, "x" * 24, "wshardd-control.sock")) > MAX_SOCKET_PATH:
            base = "/tmp"
        self.dir = Path(tempfile.mkdtemp(prefix="wshard-import-", dir=base))
        self.socket = str(self.dir / "wshardd.sock")
        self.control = str(self.dir / "wshardd-control.sock")
        self.log_path = self.dir / "wshardd.log"
        config = self.dir / "wshardd.toml"
        config.write_text(
            CONFIG.format(
                data_dir=_toml_str(str(Path(data_dir).resolve())),
                socket=_toml_str(self.socket),
                control=_toml_str(self.control),
                max_timesteps=max_timesteps,
            )
        )
        notify_path = str(self.dir / "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            notify.bind(notify_path)
            env = dict(os.environ, NOTIFY_SOCKET=notify_path)
            with open(self.log_path, "wb") as log:
                try:
                    self.proc = subprocess.Popen(
                        [binary, "--config", str(config)], stdout=log, stderr=subprocess.STDOUT, env=env
                    )
                except OSError as e:
                    self._cleanup()
                    raise DaemonStartError(f"cannot run {binary}: {e.strerror or e}") from None
            self._wait_ready(notify)
        finally:
            notify.close()

    def log(self) -> str:
        """The last lines of the daemon's log."""
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def _wait_ready(self, notify: socket.socket) -> None:
        notify.settimeout(0.25)
        waited = 0.0
        while waited < READY_TIMEOUT_S:
            try:
                if b"READY=1" in notify.recv(4096):
                    return
            except socket.timeout:
                waited += 0.25
            if self.proc.poll() is not None:
                log = self.log()
                self._cleanup()
                raise DaemonStartError(f"wshardd exited with {self.proc.returncode} at start:\n{log}")
        self.proc.kill()
        self.proc.wait()
        log = self.log()
        self._cleanup()
        raise DaemonStartError(f"wshardd not ready after {READY_TIMEOUT_S:.0f} s:\n{log}")

    def stop(self) -> int:
        """SIGTERM, wait for it to finalize and exit; returns its exit code.

        Raises:
            DaemonStartError: it did not exit within the timeout (then it is killed).
        """
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise DaemonStartError(f"wshardd did not stop within {STOP_TIMEOUT_S:.0f} s; killed") from None
        code = int(self.proc.returncode)
        if code != 0:
            log = self.log()
            self._cleanup()
            raise DaemonStartError(f"wshardd exited with {code} when stopped:\n{log}")
        self._cleanup()
        return code

    def _cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "PrivateDaemon":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()
        else:
            self._cleanup()
