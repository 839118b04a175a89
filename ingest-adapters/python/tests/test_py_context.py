"""Context managers: an episode closes ``completed`` on a normal exit and ``aborted`` on an
exception (the manifest's ``status`` says so); the recorder aborts an episode left open."""

from __future__ import annotations

import struct

import pytest
from conftest import Daemon

from wshard_client import Channel, Outcome, Recorder, WshardError

CHANNELS = [Channel("joints", "f32", (7,), codec="none"), Channel("gripper", "f32", lane="action", codec="none")]


def _push(ep: object, n: int) -> None:
    for i in range(n):
        ep.push(i * 1000, 0.0, False, [struct.pack("<7f", *[float(i)] * 7), [0.5]])  # type: ignore[attr-defined]


class Boom(Exception):
    pass


def test_py_context_completed_on_normal_exit(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "pytest-ctx") as rec:
        with rec.episode("ctx-ok", CHANNELS, "Env", 30.0) as ep:
            _push(ep, 10)
        assert ep.closed
        assert rec.episode_open is None
    e = daemon.episode("ctx-ok")
    assert e.status == "complete"
    assert e.timesteps == 10
    daemon.assert_verified()


def test_py_context_aborted_on_exception(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        with pytest.raises(Boom):
            with rec.episode("ctx-boom", CHANNELS, "Env", 30.0) as ep:
                _push(ep, 25)
                raise Boom("teleop crashed")
        assert ep.closed
        summary = ep.close()  # returns the summary of the close done on the way out
        assert summary.outcome == Outcome.ABORTED
        assert summary.timesteps == 25
        # the connection is still good for the next episode
        with rec.episode("ctx-after", CHANNELS, "Env", 30.0) as ep2:
            _push(ep2, 3)
    e = daemon.episode("ctx-boom")
    assert e.status == "aborted"
    assert e.timesteps == 25  # data kept
    assert daemon.episode("ctx-after").status == "complete"
    daemon.assert_verified()


def test_py_context_recorder_aborts_open_episode(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("ctx-left-open", CHANNELS, "Env", 30.0)
        _push(ep, 5)
    assert ep.closed
    e = daemon.episode("ctx-left-open")
    assert e.status == "aborted"
    assert e.timesteps == 5
    with pytest.raises(WshardError):
        ep.push(0, 0.0, False, [bytes(28), bytes(4)])


def test_py_context_explicit_close_outcomes(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("explicit-aborted", CHANNELS, "Env", 30.0)
        _push(ep, 2)
        assert ep.close("aborted").outcome == Outcome.ABORTED
        ep = rec.episode("explicit-empty", CHANNELS, "Env", 30.0)
        s = ep.close()
        assert (s.timesteps, s.durable_up_to, s.outcome) == (0, 0, Outcome.COMPLETED)
    assert daemon.episode("explicit-aborted").status == "aborted"
    assert daemon.episode("explicit-empty").timesteps == 0
