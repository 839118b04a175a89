"""A REAL ``wshardd`` for tests (no mocks): its own config, data dir and socket, stopped
with SIGTERM at teardown (exit code 0 asserted). Shared by the Python client's tests and the
ROS bridge's tests (ingest-adapters/ros/tests), which put this directory on ``sys.path``.

The binary: ``$WSHARDD_BIN``, else ``target/debug/wshardd`` of this repository (build it with
``cargo build -p wshard-recorder -p wshard-cli --bins``). ``wshard`` (for ``wshard verify``)
is ``$WSHARD_BIN`` or the binary next to ``wshardd``. When the binary is missing the tests
fail (never skip silently): the test command `tests/all.sh` builds it first.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from shard_parse import Episode, read_episode

REPO = Path(__file__).resolve().parents[3]


def _missing(what: str) -> None:
    msg = f"{what} not found: build it with `cargo build -p wshard-recorder -p wshard-cli --bins` or point WSHARDD_BIN at it"
    pytest.fail(msg, pytrace=False)


@pytest.fixture(scope="session")
def binaries(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """``wshardd`` and ``wshard``, copied once per session so a concurrent rebuild of the
    target dir cannot pull them away mid-run."""
    wshardd = Path(os.environ.get("WSHARDD_BIN") or REPO / "target" / "debug" / "wshardd")
    wshard = Path(os.environ.get("WSHARD_BIN") or wshardd.with_name("wshard"))
    if not wshardd.is_file():
        _missing(f"wshardd binary {wshardd}")
    if not wshard.is_file():
        _missing(f"wshard binary {wshard}")
    bindir = tmp_path_factory.mktemp("bin")
    out = {}
    for name, src in (("wshardd", wshardd), ("wshard", wshard)):
        dst = bindir / name
        shutil.copy2(src, dst)
        out[name] = dst
    return out


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


class Daemon:
    """One running wshardd: ``socket`` to connect to, ``data_dir`` to read back."""

    def __init__(self, wshardd: Path, wshard: Path, workdir: Path, overrides: Dict[str, Dict[str, Any]]) -> None:
        self.wshard = wshard
        self.data_dir = workdir / "data"
        sock_dir = workdir
        if len(str(workdir / "wshardd.sock")) >= 100:
            sock_dir = Path(tempfile.mkdtemp(prefix="wsd-", dir="/tmp"))
        self._sock_dir = sock_dir if sock_dir != workdir else None
        self.socket = sock_dir / "wshardd.sock"
        sections: Dict[str, Dict[str, Any]] = {"socket": {"path": str(self.socket)}, "log": {"level": "info"}}
        for section, values in overrides.items():
            sections.setdefault(section, {}).update(values)
        lines = [f"data_dir = {_toml(self.data_dir)}"]
        for section, values in sections.items():
            lines.append(f"[{section}]")
            lines += [f"{k} = {_toml(v)}" for k, v in values.items()]
        self.config = workdir / "wshardd.toml"
        self.config.write_text("\n".join(lines) + "\n")
        self.log_path = workdir / "wshardd.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(wshardd), "--config", str(self.config)], stdout=self._log, stderr=subprocess.STDOUT
        )
        self._wait_ready()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def _wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wshardd exited with {self.proc.returncode}:\n{self.log()}")
            if self.socket.exists():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(str(self.socket))
                    return
                except OSError:
                    pass
                finally:
                    s.close()
            time.sleep(0.02)
        raise RuntimeError(f"wshardd socket {self.socket} not ready after {timeout} s:\n{self.log()}")

    def stop(self) -> int:
        """SIGTERM, wait, return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if self._sock_dir is not None:
            shutil.rmtree(self._sock_dir, ignore_errors=True)
        return int(self.proc.returncode)

    def verify(self, *paths: Path) -> "subprocess.CompletedProcess[str]":
        """``wshard verify`` on ``paths`` (default: the whole data dir)."""
        targets = [str(p) for p in paths] or [str(self.data_dir)]
        return subprocess.run([str(self.wshard), "verify", *targets], capture_output=True, text=True, timeout=120)

    def assert_verified(self, *paths: Path) -> None:
        r = self.verify(*paths)
        assert r.returncode == 0, f"wshard verify exit {r.returncode}\n{r.stdout}\n{r.stderr}"

    def episode(self, episode_id: str) -> Episode:
        return read_episode(self.data_dir, episode_id)


@pytest.fixture
def start_daemon(binaries: Dict[str, Path], tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Factory: ``start_daemon(rotation={"max_timesteps": 100})`` starts a wshardd with
    those config sections overridden; every daemon started is stopped at teardown and
    must exit 0."""
    started: List[Daemon] = []

    def start(**overrides: Dict[str, Any]) -> Daemon:
        workdir = tmp_path / f"wshardd{len(started)}"
        workdir.mkdir()
        d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, overrides)
        started.append(d)
        return d

    yield start
    for d in started:
        code = d.stop()
        assert code == 0, f"wshardd exited with {code} after SIGTERM:\n{d.log()}"


@pytest.fixture
def daemon(start_daemon: Callable[..., Daemon]) -> Daemon:
    """A wshardd with the default config (ack durability, interval fsync, zstd-3 default)."""
    return start_daemon()
