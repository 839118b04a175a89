"""The daemon's episode control through the bridge (``stop_episode``, ``abort_episode``,
``keep``; the daemon's control socket, docs/CONTROL.md) and the bridge's lifecycle when the
daemon ends its episode from outside (an operator's ``wshard stop`` / ``abort``): it does
not fail, it goes back to ``idle`` and records the next episode on ``start``. A real
wshardd, the real client, the bridge socket's commands."""

import time
from typing import Any, Callable, Dict

import bridgekit as K
import pytest

from wshard_ros import loads_mapping
from wshard_ros.bridge import BAD_REQUEST, DAEMON, Bridge, BridgeError, BridgeOptions, handle_request
from wshard_ros.bridge.daemon_control import control_request


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def control(daemon: Any) -> str:
    return str(daemon.config.parent / "wshardd-control.sock")


def record(bridge: Any, start: int, n: int) -> None:
    """``n`` joint states from ``start`` on, all durable."""
    for i in range(start, start + n):
        bridge.on_message("/joint_states", K.joints(i), i)
    wait_for(lambda: bridge.status()["streams"]["joint_states"]["durable"] == start + n, f"{start + n} durable")


def kept(daemon: Any, episode: str) -> bool:
    return bool((daemon.data_dir / ".keep" / episode).is_file())


def test_ros_bridge_stop_episode_of_its_own_episode_then_the_next(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start("own")
    record(bridge, 0, 20)
    result = bridge.stop_episode()
    assert result["episode"] == "own" and result["status"] == "complete", result
    st = bridge.status()
    assert st["state"] == "idle", st
    assert st["last_error"].startswith("episode 'own': ended by the daemon: "), st
    assert "finalized as complete" in st["last_error"] or "closed as complete" in st["last_error"], st
    index = K.index_of(daemon, "own")
    assert index["status"] == "complete"
    assert K.stream_of(daemon, "own", "joint_states").timestamps == [K.stamp(i) for i in range(20)]
    # a message now is idle, not failed
    bridge.on_message("/joint_states", K.joints(99), 99)
    assert bridge.status()["topics"]["/joint_states"]["idle"] >= 1
    # the next episode records as usual
    bridge.start("own-next")
    assert bridge.status()["last_error"] is None
    record(bridge, 0, 5)
    summary = bridge.stop()
    assert summary["outcome"] == "completed"
    assert K.index_of(daemon, "own-next")["status"] == "complete"
    bridge.close()


@pytest.mark.parametrize("verb,status", [("stop", "complete"), ("abort", "aborted")])
def test_ros_bridge_episode_ended_by_an_operator_goes_idle(daemon, verb: str, status: str) -> None:
    # `wshard stop|abort EP` from outside the bridge: every connection gets ERROR STOPPED;
    # the bridge sees it without a message (status) and is idle, not failed
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    bridge.start(f"op-{verb}")
    record(bridge, 0, 10)
    reply = control_request(control(daemon), {"verb": verb, "episode": f"op-{verb}"}, 30)
    assert reply["status"] == status, reply
    wait_for(lambda: bridge.status()["state"] == "idle", "state idle")
    st = bridge.status()
    assert "ended by the daemon" in st["last_error"] and f"{verb}" in st["last_error"], st
    assert K.index_of(daemon, f"op-{verb}")["status"] == status
    bridge.start(f"op-{verb}-2")
    record(bridge, 0, 3)
    bridge.stop()
    assert K.index_of(daemon, f"op-{verb}-2")["status"] == "complete"
    bridge.close()


def test_ros_bridge_abort_episode_and_keep_of_other_episodes(daemon) -> None:
    # another producer's episode (a second bridge) is aborted and kept through this one
    other = K.make_bridge(daemon, K.JOINTS_AND_CAMERA, client_name="other-bridge")
    other.start("theirs")
    record(other, 0, 5)
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    r = bridge.keep("theirs")
    assert (r["kept"], r["changed"]) == (True, True) and kept(daemon, "theirs")
    result = bridge.abort_episode("theirs", timeout_ms=20_000)
    assert result["status"] == "aborted", result
    wait_for(lambda: other.status()["state"] == "idle", "the other bridge idle")
    assert K.index_of(daemon, "theirs")["status"] == "aborted"
    assert bridge.status()["state"] == "idle"
    r = bridge.keep("theirs", release=True)
    assert (r["kept"], r["changed"]) == (False, True) and not kept(daemon, "theirs")
    # its own episode, by default
    bridge.start("mine")
    record(bridge, 0, 2)
    assert bridge.keep()["episode"] == "mine" and kept(daemon, "mine")
    bridge.stop()
    assert kept(daemon, "mine")
    other.close()
    bridge.close()


def test_ros_bridge_daemon_episode_control_refusals(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)
    for call in (bridge.stop_episode, bridge.abort_episode, bridge.keep):
        with pytest.raises(BridgeError) as e:
            call()
        assert e.value.code == BAD_REQUEST and "none is recording" in e.value.message
    with pytest.raises(BridgeError) as e:
        bridge.stop_episode("no-such")
    assert e.value.code == DAEMON and "UNKNOWN_EPISODE" in e.value.message, e.value
    with pytest.raises(BridgeError) as e:
        bridge.keep("no-such")
    assert e.value.code == DAEMON and "UNKNOWN_EPISODE" in e.value.message
    with pytest.raises(BridgeError) as e:
        bridge.abort_episode("x", timeout_ms=60_001)
    assert e.value.code == BAD_REQUEST
    # no control socket configured
    plain = Bridge(loads_mapping(K.JOINTS_AND_CAMERA), BridgeOptions(socket_path=str(daemon.socket)))
    with pytest.raises(BridgeError) as e:
        plain.keep("x")
    assert e.value.code == DAEMON and "--control-socket" in e.value.message


def test_ros_bridge_socket_daemon_episode_commands(daemon) -> None:
    bridge = K.make_bridge(daemon, K.JOINTS_AND_CAMERA)

    def run(**request: Any) -> Dict[str, Any]:
        return handle_request(bridge, request)

    r = run(cmd="keep", episode=7)
    assert (r["ok"], r["error"]["code"]) == (False, BAD_REQUEST), r
    r = run(cmd="stop_episode", timeout_ms="soon")
    assert (r["ok"], r["error"]["code"]) == (False, BAD_REQUEST), r
    bridge.start("sock")
    record(bridge, 0, 4)
    r = run(cmd="keep")
    assert r["ok"] and r["result"]["kept"] is True, r
    r = run(cmd="stop_episode", episode="sock", timeout_ms=5000)
    assert r["ok"] and r["result"]["status"] == "complete", r
    assert bridge.status()["state"] == "idle"
    r = run(cmd="abort_episode", episode="sock")
    assert (r["ok"], r["error"]["code"]) == (False, DAEMON) and "UNKNOWN_EPISODE" in r["error"]["message"], r
    r = run(cmd="keep", episode="sock", release=True)
    assert r["ok"] and r["result"]["kept"] is False, r
    bridge.close()
