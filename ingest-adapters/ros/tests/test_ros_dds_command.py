"""Episode control over the DDS command topic (``rt/wshard_ros_bridge/command``,
std_msgs/String JSON), replies on ``rt/wshard_ros_bridge/reply``: start, stop, refusals."""

import json
from pathlib import Path
from typing import Any, Iterator

import bridgekit as K
import ddskit as D
import pytest
from ddskit import Commander


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


def test_ros_dds_command_start_stop_over_dds(daemon, setup) -> None:
    domain, bridge, cmd = setup
    reply = cmd.send({"cmd": "start", "episode_id": "c1", "env_id": "cell", "metadata": {"op": "dds"}})
    assert reply["ok"] and reply["result"]["state"] == "recording", reply
    assert reply["result"]["episode"] == "c1"
    D.run_all([D.Publisher(domain, "/joint_states", "joint_state", 1000, 300)], [300])
    bridge.wait_received({"/joint_states": 300})
    note = cmd.send({"cmd": "annotate", "label": "grasp", "text": "over DDS", "at_ns": 1_700_000_000_123_000_000})
    assert note["ok"], note
    reply = cmd.send({"cmd": "stop"})
    assert reply["ok"] and reply["result"]["outcome"] == "completed", reply
    assert reply["result"]["streams"]["joint_states"]["timesteps"] == 300
    index = K.index_of(daemon, "c1")
    assert index["status"] == "complete" and index["env_id"] == "cell" and index["metadata"] == {"op": "dds"}
    D.check_joints(daemon, "c1", 0, 300)
    [ann] = K.annotations_of(daemon, "c1")
    assert (ann["label"], ann["data"], ann["t_ns"]) == ("grasp", "over DDS", 1_700_000_000_123_000_000)
    # a second episode, started and aborted over DDS
    assert cmd.send({"cmd": "start", "episode_id": "c2"})["ok"]
    assert cmd.send({"cmd": "status"})["result"]["episode"] == "c2"
    assert cmd.send({"cmd": "abort"})["result"]["outcome"] == "aborted"
    assert K.index_of(daemon, "c2")["status"] == "aborted"


def test_ros_dds_command_refusals_are_replied(setup) -> None:
    _, bridge, cmd = setup
    stop = cmd.send({"cmd": "stop"})
    assert not stop["ok"] and stop["error"]["code"] == "NOT_RECORDING", stop
    unknown = cmd.send({"cmd": "launch"})
    assert not unknown["ok"] and unknown["error"]["code"] == "BAD_REQUEST"
    assert "launch" in unknown["error"]["message"]
    missing = cmd.send({"cmd": "start"})
    assert not missing["ok"] and "episode_id" in missing["error"]["message"]
    cmd.send_raw("start please")  # not JSON: a reply without an id, the bridge goes on
    D.wait_for("the reply to a non-JSON command", lambda: _has_bad_json(cmd))
    assert bridge.ok({"cmd": "status"})["state"] == "idle"


def _has_bad_json(cmd: Commander) -> bool:
    for s in cmd.reader.take(N=16):
        reply = json.loads(s.data)
        cmd.replies[reply.get("id")] = reply
    bad = cmd.replies.get(None)
    return bad is not None and bad["error"]["code"] == "BAD_REQUEST" and "not JSON" in bad["error"]["message"]
