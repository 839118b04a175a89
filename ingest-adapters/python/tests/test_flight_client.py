"""Flight mode from the Python client against the real wshardd: ``flight=`` and
``latched=`` at open record into the daemon's ring, and ``wshard trigger`` persists a
window of it as a new multi-stream episode holding exactly the steps sent."""

from __future__ import annotations

import json
import struct
import subprocess
import time
from typing import List

import pytest
from conftest import Daemon
from shard_parse import read_episode

from wshard_client import Channel, Recorder, SchemaError

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
NS_PER_MS = 1_000_000
T0 = 1_700_000_000_000_000_000


def _t(i: int) -> int:
    return T0 + i * 10 * NS_PER_MS


def _step(i: int) -> List[bytes]:
    return [struct.pack("<3f", float(i), float(i) + 0.5, -float(i))]


def _trigger(daemon: Daemon, *args: str) -> dict:
    r = subprocess.run(
        [str(daemon.wshard), "trigger", "--config", str(daemon.config), "--json", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{daemon.log()}"
    return json.loads(r.stdout)["result"]


def _wait_window(daemon: Daemon, w: str) -> dict:
    index = daemon.data_dir / w / f"{w}_index.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if index.exists():
            doc = json.loads(index.read_text())
            if doc.get("status") == "complete":
                return doc
        time.sleep(0.02)
    raise AssertionError(f"window {w} not persisted:\n{daemon.log()}")


def test_flight_python_client_window_holds_the_steps_sent(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("pyfl", CHANNELS, "", 100.0, flight={"ring_seconds": 1}) as ep:
            for i in range(150):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            r = _trigger(daemon, "--pre", "200ms", "--post", "100ms", "--reason", "py")
            assert r["merged"] is False
            for i in range(150, 200):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            index = _wait_window(daemon, r["episode"])
    assert index["metadata"]["origin"] == "flight_window"
    assert [s["name"] for s in index["streams"]] == ["pyfl"]
    daemon.assert_verified(daemon.data_dir / r["episode"], daemon.data_dir / "pyfl")
    win = read_episode(daemon.data_dir / r["episode"] / "streams", "pyfl")
    # t = _t(149): the window is [t - 200 ms, t + 100 ms], steps 129..=159, exactly.
    want = range(149 - 20, 149 + 10 + 1)
    ts = win.blocks["time/timestamps_ns"]
    assert list(struct.unpack(f"<{len(ts) // 8}q", ts)) == [_t(i) for i in want]
    assert win.blocks["signal/joints"] == b"".join(_step(i)[0] for i in want)


def test_flight_python_client_refuses_a_bad_flight_option() -> None:
    from wshard_client._flight import with_flight

    assert json.loads(with_flight("", True, True)) == {"wshard.flight": True, "wshard.latched": True}
    with pytest.raises(SchemaError):
        with_flight("", {"ring_minutes": 3})
