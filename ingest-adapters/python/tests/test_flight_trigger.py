"""Flight triggers from the Python client against the real wshardd: ``trigger()`` on the
episode writer, on a second connection (the teleop button's process) and on a
multi-stream episode names the window episode at once; the window holds exactly the
steps of ``[t - pre, t + post]``; bad input is refused with :class:`TriggerRefused`
naming the field or stream while the stream records on."""

from __future__ import annotations

import json
import struct
import time
from typing import List

import pytest
from conftest import Daemon
from shard_parse import read_episode

from wshard_client import Channel, ErrorCode, NeedsVersion, Recorder, TriggerRefused, TriggerWindow
from wshard_client._trigger import is_trigger_refusal
from wshard_client._wire import Triggered, encode_trigger, parse_server_frame

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
NS_PER_MS = 1_000_000
T0 = 1_700_000_000_000_000_000


def _t(i: int) -> int:
    return T0 + i * 10 * NS_PER_MS


def _step(i: int) -> List[bytes]:
    return [struct.pack("<3f", float(i), float(i) + 0.5, -float(i))]


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


def _timestamps(daemon: Daemon, w: str, stream: str) -> List[int]:
    win = read_episode(daemon.data_dir / w / "streams", stream)
    ts = win.blocks["time/timestamps_ns"]
    return list(struct.unpack(f"<{len(ts) // 8}q", ts))


def test_flight_trigger_from_the_writer_names_the_window_and_holds_its_steps(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    with Recorder.connect(daemon.socket, protocol_version=2) as rec:
        with rec.episode("pytrig", CHANNELS, "", 100.0, flight={"ring_seconds": 2}) as ep:
            for i in range(150):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            w = ep.trigger(pre_s=0.2, post_s=0.1, reason="grasp failed")
            assert isinstance(w, TriggerWindow)
            assert w.merged is False
            assert w.window_start_ns == _t(149) - 200 * NS_PER_MS
            assert w.window_end_ns == _t(149) + 100 * NS_PER_MS
            # The teleop button's own process: another connection, recording nothing.
            with Recorder.connect(daemon.socket, protocol_version=2) as button:
                again = button.trigger(pre_s=0.0, post_s=0.05, reason="button", at_ns=_t(149))
            assert again.merged is True and again.episode == w.episode
            for i in range(150, 200):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            _wait_window(daemon, w.episode)
    daemon.assert_verified(daemon.data_dir / w.episode)
    want = range(149 - 20, 149 + 10 + 1)
    assert _timestamps(daemon, w.episode, "pytrig") == [_t(i) for i in want]
    win = read_episode(daemon.data_dir / w.episode / "streams", "pytrig")
    assert win.blocks["signal/joints"] == b"".join(_step(i)[0] for i in want)
    events = (daemon.data_dir / w.episode / f"{w.episode}_events.jsonl").read_text()
    assert "grasp failed" in events and "button" in events


def test_flight_trigger_bad_input_typed_errors_and_the_stream_records_on(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    with Recorder.connect(daemon.socket, protocol_version=2) as idle:
        with pytest.raises(TriggerRefused) as e:
            idle.trigger(pre_s=1.0, post_s=1.0)
        assert e.value.code == ErrorCode.NOT_OPEN and "flight mode" in e.value.message
    with Recorder.connect(daemon.socket, protocol_version=2) as rec:
        with rec.episode("pybad", CHANNELS, "", 100.0, flight=True) as ep:
            for i in range(50):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            with pytest.raises(TriggerRefused) as e:
                ep.trigger(pre_s=-1.0, post_s=1.0)
            assert e.value.code == ErrorCode.LIMIT and "pre_ns" in e.value.message
            assert e.value.message.startswith("TRIGGER:")
            with pytest.raises(TriggerRefused) as e:
                ep.trigger(pre_s=1.0, post_s=7200.0)
            assert e.value.code == ErrorCode.LIMIT and "post_ns" in e.value.message
            with pytest.raises(TriggerRefused) as e:
                ep.trigger(streams=["ghost/cam"])
            assert e.value.code == ErrorCode.UNKNOWN_EPISODE and "ghost/cam" in e.value.message
            with pytest.raises(TriggerRefused) as e:
                ep.trigger(pre_s="soon")  # type: ignore[arg-type]
            assert "pre_s" in e.value.message
            for i in range(50, 100):
                ep.push(_t(i), 0.0, False, _step(i))
            assert ep.flush() >= 100
    daemon.assert_verified(daemon.data_dir / "pybad")
    assert not [p for p in daemon.data_dir.iterdir() if p.name.startswith("flight-")]
    with Recorder.connect(daemon.socket) as v1:
        with pytest.raises(NeedsVersion):
            v1.trigger()


def test_flight_trigger_from_a_multistream_owner(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    with Recorder.connect(daemon.socket, protocol_version=2) as rec:
        with rec.open_multistream_episode("pyms", flight={"ring_seconds": 2}) as owner:
            with Recorder.connect(daemon.socket, protocol_version=2) as prod:
                with prod.join_stream("pyms", "arm", CHANNELS, 100.0) as s:
                    for i in range(100):
                        s.push(_t(i), 0.0, False, _step(i))
                    s.flush()
                    w = owner.trigger(pre_s=0.1, post_s=0.0, reason="owner", streams=["pyms/arm"])
                    assert not w.merged
                    # The post-window ends with the first step past it.
                    for i in range(100, 120):
                        s.push(_t(i), 0.0, False, _step(i))
                    s.flush()
                    _wait_window(daemon, w.episode)
    assert _timestamps(daemon, w.episode, "arm") == [_t(i) for i in range(99 - 10, 100)]


def test_flight_trigger_wire_and_refusal_rule() -> None:
    frame = encode_trigger(1, 2, "r", ["s"], None)
    assert frame[4] == 0x0D
    assert frame[5:] == struct.pack("<qq", 1, 2) + b"\x01\x00r\x01\x00\x01\x00s\x00"
    payload = b"\x03\x00abc\x01" + struct.pack("<qq", -1, 5)
    assert parse_server_frame(0x85, payload) == Triggered("abc", True, -1, 5)
    assert is_trigger_refusal("TRIGGER: trigger: no stream")
    assert not is_trigger_refusal("TRIGGERED") and not is_trigger_refusal("EVENT: x")


def test_flight_trigger_event_labelled_trigger_fires_a_window(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    with Recorder.connect(daemon.socket, protocol_version=2) as rec:
        with rec.episode("pyev", CHANNELS, "", 100.0, flight=True) as ep:
            for i in range(100):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            seq = ep.send_event(_t(60), "trigger", {"pre_ms": 100, "post_ms": 50, "reason": "teleop"})
            assert seq == 0
            # a refused trigger does not refuse its event
            assert ep.send_event(_t(60), "trigger", {"pre_ms": -1}) == 1
            for i in range(100, 120):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            windows = []

            def persisted() -> bool:
                windows[:] = [p.name for p in daemon.data_dir.iterdir() if p.name.startswith("flight-")]
                return bool(windows) and bool(_wait_window(daemon, windows[0]))

            deadline = time.monotonic() + 60
            while not persisted():
                assert time.monotonic() < deadline, daemon.log()
                time.sleep(0.02)
    assert len(windows) == 1
    assert _timestamps(daemon, windows[0], "pyev") == [_t(i) for i in range(60 - 10, 60 + 5 + 1)]
    assert "teleop" in (daemon.data_dir / windows[0] / f"{windows[0]}_events.jsonl").read_text()
