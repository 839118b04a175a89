"""The daemon's flight trigger and split through the bridge (``flight_trigger``,
``split_episode``; its control socket, docs/CONTROL.md), the mapping's
``[flight_triggers]`` topics and the reason their messages give. A real wshardd, a real
producer (the Python client) recording in flight mode, the bridge socket's commands."""

import json
import struct
import time
from typing import Any, Callable, Dict, List

import bridgekit as K
import pytest

from wshard_client import Channel, Recorder
from wshard_ros import MappingError, loads_mapping
from wshard_ros.bridge import BAD_REQUEST, DAEMON, BridgeError, handle_request
from wshard_ros.ros1.flight_topics import reason_of, trigger_request

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
NS_PER_MS = 1_000_000
T0 = 1_700_000_000_000_000_000


def _t(i: int) -> int:
    return T0 + i * 10 * NS_PER_MS


def _step(i: int) -> List[bytes]:
    return [struct.pack("<3f", float(i), 0.0, 0.0)]


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def window_complete(daemon: Any, w: str) -> bool:
    index = daemon.data_dir / w / f"{w}_index.json"
    return index.exists() and json.loads(index.read_text()).get("status") == "complete"


def test_flight_bridge_trigger_and_split_of_a_producers_episode(start_daemon) -> None:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)

    def run(**request: Any) -> Dict[str, Any]:
        return handle_request(bridge, request)

    # no flight stream yet: the daemon's refusal, named
    r = run(cmd="flight_trigger", pre_s=1.0, post_s=1.0)
    assert (r["ok"], r["error"]["code"]) == (False, DAEMON) and "NO_FLIGHT_STREAM" in r["error"]["message"], r
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("fl", CHANNELS, "", 100.0, flight=True) as ep:
            for i in range(100):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            r = run(cmd="flight_trigger", pre_s=0.2, post_s=0.1, reason="operator", streams=["fl"])
            assert r["ok"] and r["result"]["merged"] is False, r
            w = r["result"]["episode"]
            assert r["result"]["window_start_ns"] == _t(99) - 200 * NS_PER_MS
            # bad input: typed, nothing made, the producer records on
            r = run(cmd="flight_trigger", pre_s="soon")
            assert (r["ok"], r["error"]["code"]) == (False, BAD_REQUEST) and "pre_s" in r["error"]["message"], r
            r = run(cmd="flight_trigger", pre_s=-1.0, post_s=0.0)
            assert (r["ok"], r["error"]["code"]) == (False, DAEMON) and "BAD_REQUEST" in r["error"]["message"], r
            r = run(cmd="flight_trigger", streams=["ghost"])
            assert (r["ok"], r["error"]["code"]) == (False, DAEMON) and "ghost" in r["error"]["message"], r
            with pytest.raises(BridgeError) as e:
                bridge.flight_trigger(pre_s=7200.0)
            assert e.value.code == BAD_REQUEST
            for i in range(100, 130):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            wait_for(lambda: window_complete(daemon, w), f"window {w}")
            # split of the producer's single-stream episode: a finished part
            r = run(cmd="split_episode", episode="fl")
            assert r["ok"] and r["result"]["finished"] == "fl" and r["result"]["recording"] == "fl.0001", r
            for i in range(130, 140):
                ep.push(_t(i), 0.0, False, _step(i))
    win = K.stream_of(daemon, w, "fl")
    ts = struct.unpack(f"<{len(win.blocks['time/timestamps_ns']) // 8}q", win.blocks["time/timestamps_ns"])
    assert list(ts) == [_t(i) for i in range(99 - 20, 99 + 10 + 1)]
    assert (daemon.data_dir / "fl.0001").is_dir()
    daemon.assert_verified(daemon.data_dir / w, daemon.data_dir / "fl", daemon.data_dir / "fl.0001")
    # split of the bridge's own multi-stream episode, just started: no stream holds a
    # timestep yet, so the daemon refuses the cut, named (EMPTY_PART), and nothing changes
    bridge.start("own")
    r = run(cmd="split_episode")
    assert (r["ok"], r["error"]["code"]) == (False, DAEMON) and "EMPTY_PART" in r["error"]["message"], r
    assert not (daemon.data_dir / "own.0001").exists()
    bridge.stop()
    r = run(cmd="split_episode", episode=3)
    assert (r["ok"], r["error"]["code"]) == (False, BAD_REQUEST), r
    bridge.close()


def test_flight_mapping_trigger_topics_and_their_reasons() -> None:
    m = loads_mapping(
        K.JOINTS_AND_CAMERA + '\n[flight_triggers]\n"/fault" = { pre_s = 5, post_s = 2.5 }\n"/estop" = {}\n'
    )
    assert [(t.topic, t.pre_s, t.post_s) for t in m.flight_triggers] == [("/fault", 5.0, 2.5), ("/estop", 30.0, 10.0)]
    for bad, key in (
        ('"/fault" = { pre_s = -1 }', "pre_s"),
        ('"/fault" = { post_s = 4000 }', "post_s"),
        ('"/fault" = { pre_s = "x" }', "pre_s"),
        ('"/fault" = { window = 3 }', "window"),
        ('"fault" = {}', None),
        ('"/joint_states" = {}', None),
    ):
        with pytest.raises(MappingError) as e:
            loads_mapping(K.JOINTS_AND_CAMERA + f"\n[flight_triggers]\n{bad}\n")
        if key is not None:
            assert key in str(e.value), e.value
    only = loads_mapping('[flight_triggers]\n"/fault" = {}\n')
    assert only.topics == () and len(only.flight_triggers) == 1
    text = b"gripper jam"
    assert reason_of("/fault", "std_msgs/String", struct.pack("<I", len(text)) + text) == "/fault: gripper jam"
    assert reason_of("/fault", "std_msgs/Empty", b"") == "/fault"
    assert reason_of("/fault", "std_msgs/String", b"\x01") == "/fault"
    req = trigger_request(m.flight_triggers[0], "diagnostic_msgs/DiagnosticArray", b"\x00" * 12)
    assert req == {"cmd": "flight_trigger", "pre_s": 5.0, "post_s": 2.5, "reason": "/fault"}
