"""flush / wait_durable / durable_seq semantics against the real wshardd: DURABLE means
fsynced (journal in ``ack`` durability, a finalized chunk plus manifest in ``chunk``)."""

from __future__ import annotations

import struct
from typing import Any, List

import pytest
from conftest import Daemon

from wshard_client import Channel, Durability, Recorder, Timeout

CHANNELS = [Channel("joints", "f32", (7,), codec="none")]


def _step(i: int) -> List[bytes]:
    return [struct.pack("<7f", *[float(i)] * 7)]


def test_py_flush_covers_everything_pushed(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, batch_delay=None, batch_steps=1 << 20, batch_bytes=1 << 30) as rec:
        with rec.episode("flush", CHANNELS, "", 100.0) as ep:
            for i in range(1000):
                ep.push(i, 0.0, False, _step(i))
            assert ep.sent_seq == 0  # everything still pending on the client
            assert ep.durable_seq == 0
            assert ep.flush() == 1000
            assert ep.durable_seq == 1000 and ep.sent_seq == 1000
            assert ep.flush() == 1000  # nothing new: answered at once
            ep.push(1000, 0.0, True, _step(1000))
            assert ep.flush() == 1001
    assert ep.close().durable_up_to == 1001
    assert daemon.episode("flush").timesteps == 1001


def test_py_wait_durable_without_flush_ack(daemon: Daemon) -> None:
    """ack durability, fsync every 10 ms: wait_durable only sends the pending batch."""
    with Recorder.connect(daemon.socket, batch_delay=None) as rec:
        with rec.episode("wait-ack", CHANNELS, "", 100.0) as ep:
            last = 0
            for i in range(50):
                ep.push(i, 0.0, False, _step(i))
                if i % 10 == 9:
                    up_to = ep.wait_durable(i, timeout=10.0)
                    assert up_to > i and up_to >= last
                    assert ep.durable_seq >= up_to
                    last = up_to
            assert ep.wait_durable(3) >= 50  # already durable: returns at once


def test_py_wait_durable_fsync_never_needs_flush(start_daemon: Any) -> None:
    d = start_daemon(fsync={"policy": "never"})
    with Recorder.connect(d.socket) as rec:
        with rec.episode("never", CHANNELS, "", 100.0) as ep:
            for i in range(20):
                ep.push(i, 0.0, False, _step(i))
            with pytest.raises(Timeout):
                ep.wait_durable(19, timeout=0.3)
            assert ep.durable_seq == 0
            assert ep.flush() == 20  # FLUSH forces the fsync
            assert ep.wait_durable(19, timeout=1.0) == 20


def test_py_wait_durable_chunk_durability(start_daemon: Any) -> None:
    """chunk durability: DURABLE follows finalized chunks (here every 100 steps), and CLOSE
    finalizes the last one. (FLUSH is not used: wshardd 0.1 answers it in chunk
    durability only once the open chunk rotates, up to rotation.max_seconds later.)"""
    d = start_daemon(rotation={"max_timesteps": 100})
    with Recorder.connect(d.socket) as rec:
        with rec.episode("chunky", CHANNELS, "", 100.0, durability=Durability.CHUNK) as ep:
            for i in range(150):
                ep.push(i, 0.0, False, _step(i))
            assert ep.wait_durable(99, timeout=10.0) == 100  # the first chunk
            with pytest.raises(Timeout):
                ep.wait_durable(149, timeout=0.3)  # the second chunk is not finalized
            assert ep.durable_seq == 100
        summary = ep.close()
    assert summary.timesteps == summary.durable_up_to == 150
    e = d.episode("chunky")
    assert e.manifest["durability"] == "chunk"
    assert e.timesteps == 150 and len(e.manifest["chunks"]) == 2
    d.assert_verified()


def test_py_durable_seq_is_monotonic(daemon: Daemon, np: Any) -> None:
    with Recorder.connect(daemon.socket, batch_steps=64) as rec:
        with rec.episode("mono", CHANNELS, "", 1000.0) as ep:
            seen = [ep.durable_seq]
            for k in range(20):
                ep.push_batch(t_ns=np.arange(k * 500, (k + 1) * 500), payloads=[np.zeros((500, 7), np.float32)])
                seen.append(ep.durable_seq)
            seen.append(ep.flush())
            assert seen == sorted(seen)
            assert seen[-1] == 10_000
        summary = ep.close()
    assert summary.timesteps == summary.durable_up_to == 10_000
