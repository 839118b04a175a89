"""Fixtures of the live ROS 1 tests (run by Debian's /usr/bin/python3, the python that has
rospy): a real ``rosmaster --core`` per test (``ros``), the real ``wshardd`` (``daemon``,
``start_daemon`` from ingest-adapters/python/tests/daemon_harness.py, with a control socket),
bridge and publisher processes (rosharness.py)."""

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
CLIENT_TESTS = HERE.parents[1] / "python" / "tests"
sys.path.insert(0, str(CLIENT_TESTS))  # daemon_harness, shard_parse
sys.path.insert(0, str(HERE))  # rosharness, pubgen

from daemon_harness import Daemon, binaries, start_daemon  # noqa: E402,F401
from rosharness import BridgeProc, Publisher, RosMaster  # noqa: E402


@pytest.fixture
def ros(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RosMaster]:
    """A real rosmaster on loopback; this process's ROS_* point at it (service calls)."""
    master = RosMaster(tmp_path)
    for key in ("ROS_MASTER_URI", "ROS_IP", "ROS_HOSTNAME"):
        monkeypatch.setenv(key, master.env[key])
    yield master
    master.stop()


@pytest.fixture
def daemon(start_daemon: Callable[..., Daemon]) -> Daemon:  # noqa: F811
    """A wshardd with a control socket (``daemon.control``) for ~annotate."""
    ctl_dir = Path(tempfile.mkdtemp(prefix="wsc-", dir="/tmp"))
    d = start_daemon(control={"path": str(ctl_dir / "ctl.sock")})
    d.control = ctl_dir / "ctl.sock"  # type: ignore[attr-defined]
    return d


@pytest.fixture
def bridge_factory(ros: RosMaster, tmp_path: Path) -> Iterator[Callable[..., BridgeProc]]:
    """``bridge_factory(mapping_text, daemon)``: a bridge process; all stopped at teardown."""
    started: List[BridgeProc] = []

    def make(mapping: str, daemon: Daemon, **kw: Any) -> BridgeProc:
        b = BridgeProc(ros, tmp_path, mapping, daemon.socket, getattr(daemon, "control", None), **kw)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def publishers(ros: RosMaster, tmp_path: Path) -> Iterator[Callable[..., Publisher]]:
    """``publishers(kind, topic, **opts)``: a ros_pub.py process; all finished at teardown."""
    started: List[Publisher] = []

    def make(kind: str, topic: str, **opts: Any) -> Publisher:
        p = Publisher(ros, tmp_path, kind, topic, **opts)
        started.append(p)
        return p

    yield make
    for p in started:
        p.finish()


def episode_files(daemon: Daemon, episode_id: str) -> Dict[str, Any]:
    """The index, events and annotations of a multi-stream episode."""
    import json

    folder = daemon.data_dir / episode_id
    out: Dict[str, Any] = {"index": json.loads((folder / f"{episode_id}_index.json").read_text())}
    ev = folder / f"{episode_id}_events.jsonl"
    out["events"] = [json.loads(line) for line in ev.read_text().splitlines() if line.strip()] if ev.exists() else []
    an = folder / f"{episode_id}_annotations.json"
    out["annotations"] = json.loads(an.read_text()) if an.exists() else None
    return out
