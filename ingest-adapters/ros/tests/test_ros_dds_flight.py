"""The daemon's flight recorder the ROS 2 way, over DDS (the bridge process, publisher
processes and a commander on loopback, a real wshardd, a real producer recording in flight
mode): a message on a mapped ``[flight_triggers]`` topic, of a type the bridge knows
(``std_msgs/String``: its text in the reason) or of one it does not (read with the type
its writer describes), and ``flight_trigger`` on the DDS command topic each make a window
episode holding exactly the steps of its window; ``split_episode`` over DDS cuts a
producer's episode; the refusals come back typed."""

import json
import struct
from pathlib import Path
from typing import Any, Dict, List

import bridgekit as K
import ddskit as D
import pytest
from daemon_harness import Daemon
from ddskit import Commander
from wshard_client import Channel, Recorder

from wshard_ros import loads_mapping
from wshard_ros.ros2dds import DdsSetupError
from wshard_ros.ros2dds.flight_topics import (
    MAX_REASON_TEXT_BYTES,
    STRING_TYPE,
    reason_of,
    resolve_type,
    trigger_request,
)
from wshard_ros.ros2dds.idl import String_

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
NS_PER_MS = 1_000_000
T0 = 1_700_000_000_000_000_000
FAULT_TYPE = "wshard_test_msgs::msg::dds_::Fault_"
MAPPING = (
    '[topics."/joint_states"]\ntype = "sensor_msgs/JointState"\ntick_hz = 1000\n'
    "[flight_triggers]\n"
    '"/fault" = { pre_s = 0.1, post_s = 0.05 }\n'
    '"/estop" = { pre_s = 0.05, post_s = 0.02 }\n'
)


def _t(i: int) -> int:
    return T0 + i * 10 * NS_PER_MS


def _step(i: int) -> List[bytes]:
    return [struct.pack("<3f", float(i), 0.0, 0.0)]


def _push(ep: Any, first: int, end: int) -> None:
    for i in range(first, end):
        ep.push(_t(i), 0.0, False, _step(i))
    ep.flush()


def _complete(daemon: Daemon, w: str) -> bool:
    index = daemon.data_dir / w / f"{w}_index.json"
    return index.exists() and json.loads(index.read_text()).get("status") == "complete"


def _timestamps(daemon: Daemon, w: str, stream: str) -> List[int]:
    blob = K.stream_of(daemon, w, stream).blocks["time/timestamps_ns"]
    return list(struct.unpack(f"<{len(blob) // 8}q", blob))


def _triggers(bridge: D.BridgeProc) -> Dict[str, Any]:
    got: Dict[str, Any] = bridge.ok({"cmd": "status"})["dds"]["flight_triggers"]
    return got


def _next_reply(bridge: D.BridgeProc, received: int) -> Dict[str, Any]:
    """The reply to the ``received``-th mapped trigger message."""
    D.wait_for(f"trigger message {received}", lambda: _triggers(bridge)["received"] >= received)
    st = _triggers(bridge)
    assert st["received"] == received, st
    reply: Dict[str, Any] = st["last_reply"]
    return reply


@pytest.fixture
def flight(start_daemon, tmp_path: Path) -> Any:
    daemon = start_daemon(rotation={"max_timesteps": 8})
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, MAPPING), tmp_path, domain)
    cmd = Commander(domain)
    try:
        yield daemon, domain, bridge, cmd
    finally:
        cmd.close()
        assert bridge.stop() == 0, bridge.log()


def test_flight_ros_dds_mapped_topics_and_command_trigger_windows(flight) -> None:
    daemon, domain, bridge, cmd = flight
    st = _triggers(bridge)
    assert (st["received"], st["refused"], st["subscribed"]) == (0, 0, {"/fault": [], "/estop": []}), st

    # no stream records in flight mode: both ways refused, the daemon's code named
    r = cmd.send({"cmd": "flight_trigger", "pre_s": 1.0, "post_s": 1.0})
    assert (r["ok"], r["error"]["code"]) == (False, "DAEMON") and "NO_FLIGHT_STREAM" in r["error"]["message"], r
    D.publish_triggers(domain, "/fault", "string", "too early")
    reply = _next_reply(bridge, 1)
    assert not reply["ok"] and "NO_FLIGHT_STREAM" in reply["error"]["message"], reply
    assert _triggers(bridge)["refused"] == 1
    assert _triggers(bridge)["subscribed"]["/fault"] == ["std_msgs::msg::dds_::String_"]

    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("arm", CHANNELS, "", 100.0, flight={"ring_seconds": 5}) as ep:
            _push(ep, 0, 100)
            # 1. the command topic: window [t(99) - 200 ms, t(99) + 100 ms]
            trigger = {"cmd": "flight_trigger", "pre_s": 0.2, "post_s": 0.1, "reason": "operator", "streams": ["arm"]}
            r = cmd.send(trigger)
            assert r["ok"] and r["result"]["merged"] is False, r
            w1 = r["result"]["episode"]
            assert r["result"]["window_start_ns"] == _t(99) - 200 * NS_PER_MS
            # bad input over DDS: typed, nothing made
            r = cmd.send({"cmd": "flight_trigger", "pre_s": "soon"})
            assert (r["ok"], r["error"]["code"]) == (False, "BAD_REQUEST") and "pre_s" in r["error"]["message"], r
            r = cmd.send({"cmd": "flight_trigger", "pre_s": -1.0, "post_s": 0.0})
            assert (r["ok"], r["error"]["code"]) == (False, "DAEMON") and "BAD_REQUEST" in r["error"]["message"], r
            r = cmd.send({"cmd": "flight_trigger", "streams": ["ghost"]})
            assert (r["ok"], r["error"]["code"]) == (False, "DAEMON") and "ghost" in r["error"]["message"], r
            _push(ep, 100, 130)
            D.wait_for(f"window {w1}", lambda: _complete(daemon, w1), timeout=60.0)

            # 2. a std_msgs/String on /fault: window [t(129) - 100 ms, t(129) + 50 ms], reason with the text
            D.publish_triggers(domain, "/fault", "string", "gripper jam")
            reply = _next_reply(bridge, 2)
            assert reply["ok"] and reply["result"]["window_start_ns"] == _t(129) - 100 * NS_PER_MS, reply
            w2 = reply["result"]["episode"]
            _push(ep, 130, 160)
            D.wait_for(f"window {w2}", lambda: _complete(daemon, w2), timeout=60.0)

            # 3. a type the bridge has no IDL of on /estop: read with the writer's own type
            D.publish_triggers(domain, "/estop", "fault", "ignored text")
            reply = _next_reply(bridge, 3)
            assert reply["ok"], reply
            w3 = reply["result"]["episode"]
            _push(ep, 160, 190)
            D.wait_for(f"window {w3}", lambda: _complete(daemon, w3), timeout=60.0)

            # 4. split of the producer's episode over DDS: a finished part, recording goes on
            r = cmd.send({"cmd": "split_episode", "episode": "arm"})
            assert r["ok"] and (r["result"]["finished"], r["result"]["recording"]) == ("arm", "arm.0001"), r
            _push(ep, 190, 200)
    st = _triggers(bridge)
    assert (st["received"], st["refused"], st["unresolved"]) == (3, 1, {}), st
    assert st["subscribed"]["/estop"] == [FAULT_TYPE], st
    assert len({w1, w2, w3}) == 3
    assert _timestamps(daemon, w1, "arm") == [_t(i) for i in range(99 - 20, 99 + 10 + 1)]
    assert _timestamps(daemon, w2, "arm") == [_t(i) for i in range(129 - 10, 129 + 5 + 1)]
    assert _timestamps(daemon, w3, "arm") == [_t(i) for i in range(159 - 5, 159 + 2 + 1)]
    assert "operator" in D.read_events(daemon, w1)[0]["data"]
    reasons = [json.dumps(e) for w in (w2, w3) for e in D.read_events(daemon, w)]
    assert any("/fault: gripper jam" in r for r in reasons), reasons
    assert any('"/estop"' in r for r in reasons) and not any("ignored text" in r for r in reasons), reasons
    assert (daemon.data_dir / "arm.0001").is_dir()
    daemon.assert_verified(*(daemon.data_dir / w for w in (w1, w2, w3, "arm", "arm.0001")))


def test_flight_ros_dds_bad_trigger_mapping_refused_at_start(daemon, tmp_path: Path) -> None:
    for bad, key in (
        ('"/fault" = { pre_s = -1 }', "pre_s"),
        ('"/fault" = { post_s = 4000 }', "post_s"),
        ('"/fault" = { window = 3 }', "window"),
    ):
        mapping = K.write_mapping(tmp_path, MAPPING.split("[flight_triggers]")[0] + f"[flight_triggers]\n{bad}\n")
        cmd = [D.sys.executable, "-m", "wshard_ros.ros2dds", "--mapping", str(mapping), "--socket", str(daemon.socket)]
        cmd += ["--domain-id", str(D.new_domain()), "--loopback"]
        r = D.subprocess.run(cmd, env=D.env(), capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert "'/fault'" in r.stderr and f"key '{key}'" in r.stderr, (bad, r.stderr)


def test_flight_ros_dds_trigger_reasons_and_unreadable_types() -> None:
    spec = loads_mapping('[flight_triggers]\n"/fault" = { pre_s = 5, post_s = 2.5 }\n').flight_triggers[0]
    assert trigger_request(spec, STRING_TYPE, String_(data="gripper jam")) == {
        "cmd": "flight_trigger",
        "pre_s": 5.0,
        "post_s": 2.5,
        "reason": "/fault: gripper jam",
    }
    assert reason_of("/fault", STRING_TYPE, String_(data="")) == "/fault"
    assert reason_of("/fault", FAULT_TYPE, String_(data="not a String_ type")) == "/fault"
    # the text is cut at MAX_REASON_TEXT_BYTES bytes, never inside a character
    long = "é" * MAX_REASON_TEXT_BYTES
    cut = reason_of("/fault", STRING_TYPE, String_(data=long))
    assert cut == "/fault: " + "é" * (MAX_REASON_TEXT_BYTES // 2)
    # a type known here needs no lookup; an unknown one without type information is refused, named
    assert resolve_type(None, STRING_TYPE, None) is String_  # type: ignore[arg-type]
    with pytest.raises(DdsSetupError) as e:
        resolve_type(None, FAULT_TYPE, None)  # type: ignore[arg-type]
    assert FAULT_TYPE in str(e.value) and "no type information" in str(e.value)
