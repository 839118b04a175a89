"""The daemon's flight recorder and split the ROS way, on a live bridge (rosmaster, rospy
publishers, the real wshardd): the ``~flight_trigger`` service and a message on a mapped
``[flight_triggers]`` topic each produce a window episode holding exactly the steps of
their window; ``~split_episode`` cuts a producer's episode into a finished part."""

import json
import struct
import tempfile
from pathlib import Path
from typing import Callable, List

from daemon_harness import Daemon
from rosharness import BridgeProc, RosMaster, wait_for

from wshard_client import Channel, Recorder

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
NS_PER_MS = 1_000_000
T0 = 1_700_000_000_000_000_000
MAPPING = (
    '[topics."/joint_states"]\ntype = "sensor_msgs/JointState"\ntick_hz = 200\n'
    '[flight_triggers]\n"/fault" = { pre_s = 0.1, post_s = 0.05 }\n'
)


def _t(i: int) -> int:
    return T0 + i * 10 * NS_PER_MS


def _step(i: int) -> List[bytes]:
    return [struct.pack("<3f", float(i), 0.0, 0.0)]


def _flight_daemon(start_daemon: Callable[..., Daemon]) -> Daemon:
    ctl_dir = Path(tempfile.mkdtemp(prefix="wsc-", dir="/tmp"))
    d = start_daemon(control={"path": str(ctl_dir / "ctl.sock")}, rotation={"max_timesteps": 8})
    d.control = ctl_dir / "ctl.sock"  # type: ignore[attr-defined]
    return d


def _complete(data: Path, w: str) -> bool:
    index = data / w / f"{w}_index.json"
    return index.exists() and json.loads(index.read_text()).get("status") == "complete"


def _timestamps(data: Path, w: str, stream: str) -> List[int]:
    from shard_parse import read_episode

    blob = read_episode(data / w / "streams", stream).blocks["time/timestamps_ns"]
    return list(struct.unpack(f"<{len(blob) // 8}q", blob))


def test_flight_ros_live_trigger_service_mapped_topic_and_split(  # type: ignore[no-untyped-def]
    ros: RosMaster, start_daemon, bridge_factory, publishers
) -> None:
    daemon = _flight_daemon(start_daemon)
    bridge: BridgeProc = bridge_factory(MAPPING, daemon)
    data = daemon.data_dir

    # refused while no stream records in flight mode: the daemon's code in the message
    r = bridge.call("flight_trigger", pre_s=1.0, post_s=1.0, reason="x", streams=[])
    assert (r.ok, r.code, r.episode) == (False, "DAEMON", "") and "NO_FLIGHT_STREAM" in r.message, r

    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("arm", CHANNELS, "", 100.0, flight={"ring_seconds": 5}) as ep:
            for i in range(100):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            # 1. the service
            r = bridge.call("flight_trigger", pre_s=0.2, post_s=0.1, reason="operator", streams=["arm"])
            assert r.ok and not r.merged and r.episode.startswith("flight-"), r
            w1 = r.episode
            r = bridge.call("flight_trigger", pre_s=-1.0, post_s=0.0, reason="bad", streams=[])
            assert (r.ok, r.code) == (False, "DAEMON") and "BAD_REQUEST" in r.message, r
            for i in range(100, 130):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            wait_for(f"window {w1}", lambda: _complete(data, w1), timeout=60.0)
            # 2. a message on the mapped topic /fault (std_msgs/String): reason = topic + text
            pub = publishers("text", "/fault", text=["gripper jam"], rate=10)
            assert pub.wait_published() == 1
            # the window is named at once (its directory appears once persisted)
            reply = wait_for(
                "the /fault trigger", lambda: bridge.status()["ros"]["flight_triggers"]["last_reply"], timeout=30.0
            )
            assert reply["ok"], reply
            w2 = reply["result"]["episode"]
            assert w2 != w1
            for i in range(130, 160):
                ep.push(_t(i), 0.0, False, _step(i))
            ep.flush()
            wait_for(f"window {w2}", lambda: _complete(data, w2), timeout=60.0)
            st = bridge.status()["ros"]["flight_triggers"]
            assert (st["received"], st["refused"]) == (1, 0), st
            # 3. split of the producer's episode: a finished part, recording goes on
            r = bridge.call("split_episode", episode_id="arm")
            assert (r.ok, r.finished, r.recording) == (True, "arm", "arm.0001"), r
            for i in range(160, 170):
                ep.push(_t(i), 0.0, False, _step(i))
    assert _timestamps(data, w1, "arm") == [_t(i) for i in range(99 - 20, 99 + 10 + 1)]
    events = (data / w1 / f"{w1}_events.jsonl").read_text()
    assert "operator" in events
    # the /fault window: [t - 100 ms, t + 50 ms] around the latest step when it came (129)
    assert _timestamps(data, w2, "arm") == [_t(i) for i in range(129 - 10, 129 + 5 + 1)]
    assert "/fault: gripper jam" in (data / w2 / f"{w2}_events.jsonl").read_text()
    assert (data / "arm.0001").is_dir()
    daemon.assert_verified(data / w1, data / w2, data / "arm", data / "arm.0001")
    # the bridge's own multi-stream episode, just started: split when no stream holds a
    # timestep yet is refused, named (EMPTY_PART); a multi-stream episode is otherwise split
    # whole (tests/tests/split_multi.rs)
    assert bridge.call("start", episode_id="own", env_id="", metadata_json="").ok
    r = bridge.call("split_episode", episode_id="")
    assert r.ok or ((r.code == "DAEMON") and "EMPTY_PART" in r.message), r
    assert r.ok or not (data / "own.0001").exists(), r
    assert bridge.call("stop").ok
