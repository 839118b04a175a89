"""The daemon's episode control over DDS: ``stop_episode``, ``abort_episode``, ``keep`` and
``split_episode`` written on the bridge's command topic (``rt/wshard_ros_bridge/command``)
by a DDS participant, the replies read from ``rt/wshard_ros_bridge/reply``; a real wshardd,
the bridge as its own process, producers on the Python client and a DDS publisher of
joint states. Episodes of other producers and the bridge's own; the refusals typed."""

import json
import struct
from pathlib import Path
from typing import Any, Dict, Iterator, List

import bridgekit as K
import ddskit as D
import pytest
from daemon_harness import Daemon
from ddskit import Commander
from wshard_client import Channel, Recorder

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
T0 = 1_700_000_000_000_000_000
PERIOD_NS = 10_000_000


def _push(ep: Any, first: int, end: int) -> None:
    for i in range(first, end):
        ep.push(T0 + i * PERIOD_NS, 0.0, False, [struct.pack("<3f", float(i), 0.0, 0.0)])
    ep.flush()


def _status(daemon: Daemon, episode: str) -> str:
    """The status of a single-stream episode (its manifest) or a multi-stream one (its index)."""
    index = daemon.data_dir / episode / f"{episode}_index.json"
    if index.exists():
        return str(json.loads(index.read_text())["status"])
    return str(daemon.episode(episode).status)


def _steps(daemon: Daemon, episode: str) -> List[float]:
    blob = daemon.episode(episode).blocks["signal/joints"]
    return [struct.unpack_from("<3f", blob, k)[0] for k in range(0, len(blob), 12)]


def _kept(daemon: Daemon, episode: str) -> bool:
    return (daemon.data_dir / ".keep" / episode).is_file()


def _refused(reply: Dict[str, Any], code: str, *words: str) -> None:
    assert not reply["ok"] and reply["error"]["code"] == code, reply
    for w in words:
        assert w in reply["error"]["message"], reply


@pytest.fixture
def setup(daemon, tmp_path: Path) -> Iterator[Any]:
    domain = D.new_domain()
    bridge = D.BridgeProc(daemon, K.write_mapping(tmp_path, D.MAPPING), tmp_path, domain)
    cmd = Commander(domain)
    try:
        yield domain, bridge, cmd
    finally:
        cmd.close()
        assert bridge.stop() == 0, bridge.log()


def test_ros_dds_episode_control_of_producers_episodes(daemon, setup) -> None:
    _, bridge, cmd = setup
    with Recorder.connect(daemon.socket) as p1, Recorder.connect(daemon.socket) as p2:
        theirs = p1.episode("theirs", CHANNELS, "", 100.0)
        _push(theirs, 0, 20)
        r = cmd.send({"cmd": "keep", "episode": "theirs"})
        assert r["ok"] and (r["result"]["kept"], r["result"]["changed"]) == (True, True), r
        assert _kept(daemon, "theirs")
        # split: the first 20 steps a finished part, recording goes on into the next
        r = cmd.send({"cmd": "split_episode", "episode": "theirs"})
        assert r["ok"] and (r["result"]["finished"], r["result"]["recording"]) == ("theirs", "theirs.0001"), r
        _push(theirs, 20, 25)
        # stop: the daemon finalizes the producer's part complete with every step it received
        r = cmd.send({"cmd": "stop_episode", "episode": "theirs.0001", "timeout_ms": 20_000})
        assert r["ok"] and r["result"]["status"] == "complete", r
        # abort another producer's episode: aborted, data kept
        other = p2.episode("other", CHANNELS, "", 100.0)
        _push(other, 0, 5)
        r = cmd.send({"cmd": "abort_episode", "episode": "other"})
        assert r["ok"] and r["result"]["status"] == "aborted", r
    assert (_status(daemon, "theirs"), _status(daemon, "theirs.0001"), _status(daemon, "other")) == (
        "complete",
        "complete",
        "aborted",
    )
    assert _steps(daemon, "theirs") == [float(i) for i in range(20)]
    assert _steps(daemon, "theirs.0001") == [float(i) for i in range(20, 25)]
    assert _steps(daemon, "other") == [float(i) for i in range(5)]
    r = cmd.send({"cmd": "keep", "episode": "theirs", "release": True})
    assert r["ok"] and (r["result"]["kept"], r["result"]["changed"]) == (False, True), r
    assert not _kept(daemon, "theirs")
    daemon.assert_verified(*(daemon.data_dir / e for e in ("theirs", "theirs.0001", "other")))
    assert bridge.ok({"cmd": "status"})["state"] == "idle"


def test_ros_dds_episode_control_of_the_bridges_own_episode(daemon, setup) -> None:
    domain, bridge, cmd = setup
    assert cmd.send({"cmd": "start", "episode_id": "mine"})["ok"]
    D.run_all([D.Publisher(domain, "/joint_states", "joint_state", 1000, 300)], [300])
    D.wait_for("300 durable", lambda: bridge.ok({"cmd": "status"})["streams"]["joint_states"]["durable"] == 300)
    r = cmd.send({"cmd": "keep"})  # no episode: the one the bridge records
    assert r["ok"] and r["result"]["episode"] == "mine" and r["result"]["kept"], r
    r = cmd.send({"cmd": "stop_episode"})
    assert r["ok"] and (r["result"]["episode"], r["result"]["status"]) == ("mine", "complete"), r
    st = cmd.send({"cmd": "status"})["result"]
    assert st["state"] == "idle" and "ended by the daemon" in st["last_error"], st
    D.check_joints(daemon, "mine", 0, 300)
    assert _kept(daemon, "mine")
    # the next episode records as usual, then is aborted from outside over DDS
    assert cmd.send({"cmd": "start", "episode_id": "mine-2"})["ok"]
    D.run_all([D.Publisher(domain, "/joint_states", "joint_state", 1000, 50, "--start", "300")], [50])
    D.wait_for("50 durable", lambda: bridge.ok({"cmd": "status"})["streams"]["joint_states"]["durable"] == 50)
    r = cmd.send({"cmd": "abort_episode", "episode": "mine-2"})
    assert r["ok"] and r["result"]["status"] == "aborted", r
    D.wait_for("the bridge idle", lambda: bridge.ok({"cmd": "status"})["state"] == "idle")
    assert _status(daemon, "mine-2") == "aborted"
    assert len(K.stream_of(daemon, "mine-2", "joint_states").timestamps) == 50


def test_ros_dds_episode_control_refusals_are_typed(daemon, setup) -> None:
    _, bridge, cmd = setup
    # nothing recording and no episode named: the bridge's own refusal
    for verb in ("stop_episode", "abort_episode", "keep"):
        _refused(cmd.send({"cmd": verb}), "BAD_REQUEST", "none is recording")
    # an unknown episode: the daemon's code and the episode named
    for verb in ("stop_episode", "abort_episode", "keep", "split_episode"):
        _refused(cmd.send({"cmd": verb, "episode": "no-such"}), "DAEMON", "UNKNOWN_EPISODE", "no-such")
    # malformed fields, named
    _refused(cmd.send({"cmd": "keep", "episode": 7}), "BAD_REQUEST", "episode")
    _refused(cmd.send({"cmd": "stop_episode", "episode": "x", "timeout_ms": "soon"}), "BAD_REQUEST", "timeout_ms")
    _refused(cmd.send({"cmd": "keep", "episode": "x", "release": "yes"}), "BAD_REQUEST", "release")
    # a trigger with no flight stream
    _refused(cmd.send({"cmd": "flight_trigger", "pre_s": 1, "post_s": 1}), "DAEMON", "NO_FLIGHT_STREAM")
    assert bridge.ok({"cmd": "status"})["state"] == "idle"
    assert [p.name for p in daemon.data_dir.iterdir() if not p.name.startswith(".")] == []  # nothing made
