"""Client-side batching (batch_steps / batch_bytes / batch_delay, frames kept under the
server's max_frame_bytes) and a throughput smoke test, against the real wshardd. Frames
are observed with a counting transport: a real :class:`UnixSocketTransport` that notes
what it sends."""

from __future__ import annotations

import struct
import time
from typing import Any, List, Tuple

from conftest import Daemon

from wshard_client import Channel, ClientOptions, Recorder, Step, UnixSocketTransport

CHANNELS = [Channel("joints", "f32", (7,), codec="none")]
RECORD = 21 + 28


class CountingTransport(UnixSocketTransport):
    """Notes ``(frame_type, frame_bytes, count)`` of every frame sent."""

    def __init__(self, sock: Any, timeout: Any) -> None:
        super().__init__(sock, timeout)
        self.frames: List[Tuple[int, int, int]] = []

    def send(self, data: Any) -> None:
        mv = memoryview(data).cast("B")
        count = struct.unpack_from("<I", mv, 5)[0] if mv[4] == 0x04 else 0
        self.frames.append((mv[4], mv.nbytes, count))
        super().send(data)

    def batches(self) -> List[int]:
        return [c for t, _, c in self.frames if t == 0x04]


def _connect(d: Daemon, **opts: Any) -> Tuple[Recorder, CountingTransport]:
    options = ClientOptions(**{"timeout": 30.0, **opts})
    t = CountingTransport.connect(d.socket, options.timeout)
    return Recorder(t, "pytest-batching", options), t  # type: ignore[return-value]


def _step(i: int) -> List[bytes]:
    return [struct.pack("<7f", *[float(i)] * 7)]


def test_py_batching_by_steps_bytes_and_delay(daemon: Daemon) -> None:
    rec, t = _connect(daemon, batch_steps=10, batch_delay=None)
    with rec:
        with rec.episode("by-steps", CHANNELS, "", 100.0) as ep:
            for i in range(95):
                ep.push(i, 0.0, False, _step(i))
            assert t.batches() == [10] * 9 and ep.sent_seq == 90
            ep.flush()
            assert t.batches() == [10] * 9 + [5]
            assert t.frames[-1][0] == 0x06  # FLUSH
    rec, t = _connect(daemon, batch_bytes=9 + 4 * RECORD, batch_delay=None)
    with rec:
        with rec.episode("by-bytes", CHANNELS, "", 100.0) as ep:
            for i in range(12):
                ep.push(i, 0.0, False, _step(i))
            assert t.batches() == [4, 4, 4]
    rec, t = _connect(daemon, batch_delay=0.05)
    with rec:
        with rec.episode("by-delay", CHANNELS, "", 100.0) as ep:
            ep.push(0, 0.0, False, _step(0))
            ep.push(1, 0.0, False, _step(1))
            assert t.batches() == []
            time.sleep(0.06)
            ep.push(2, 0.0, False, _step(2))  # the oldest step waited long enough
            assert t.batches() == [3]
    for name, n in (("by-steps", 95), ("by-bytes", 12), ("by-delay", 3)):
        assert daemon.episode(name).timesteps == n


def test_py_batching_frames_fit_max_frame_bytes(start_daemon: Any) -> None:
    d = start_daemon(limits={"max_frame_bytes": 4096})
    big = [Channel("blob", "u8", (200,), codec="none")]
    rec, t = _connect(d)
    with rec:
        assert rec.server_info.max_frame_bytes == 4096
        with rec.episode("small-frames", big, "", 100.0) as ep:
            for i in range(300):
                ep.push(i, 0.0, False, [bytes([i % 256]) * 200])
            ep.push_batch([Step(i, 0.0, False, [bytes([i % 256]) * 200]) for i in range(300, 600)])
            ep.push_batch(
                t_ns=list(range(600, 900)), payloads=[b"".join(bytes([i % 256]) * 200 for i in range(600, 900))]
            )
            assert ep.flush() == 900
    assert max(size for _, size, _ in t.frames) <= 4096 + 4
    assert sum(t.batches()) == 900
    e = d.episode("small-frames")
    assert e.channel("signal/blob") == b"".join(bytes([i % 256]) * 200 for i in range(900))
    d.assert_verified()


def test_py_batching_throughput_numpy(daemon: Daemon, np: Any) -> None:
    """100k joints steps (3 x f32[7]) with push_batch of numpy columns: well under 10 s."""
    n = 100_000
    chans = [
        Channel("joints", "f32", (7,)),
        Channel("joint_vel", "f32", (7,)),
        Channel("cmd", "f32", (7,), lane="action"),
    ]
    cols = [np.random.default_rng(k).standard_normal((n, 7)).astype(np.float32) for k in range(3)]
    t_ns = np.arange(n, dtype=np.int64) * 1_000_000
    start = time.perf_counter()
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("throughput-np", chans, "", 1000.0) as ep:
            for a in range(0, n, 10_000):
                ep.push_batch(t_ns=t_ns[a : a + 10_000], payloads=[c[a : a + 10_000] for c in cols])
            assert ep.flush() == n
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"{n} steps took {elapsed:.2f} s"
    assert daemon.episode("throughput-np").timesteps == n


def test_py_batching_throughput_pure_python(daemon: Daemon) -> None:
    """The same without numpy: push_batch of Step lists with bytes payloads."""
    n = 100_000
    chans = [
        Channel("joints", "f32", (7,)),
        Channel("joint_vel", "f32", (7,)),
        Channel("cmd", "f32", (7,), lane="action"),
    ]
    payload = [struct.pack("<7f", *range(7))] * 3
    start = time.perf_counter()
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("throughput-py", chans, "", 1000.0) as ep:
            for a in range(0, n, 10_000):
                ep.push_batch([Step(i * 1_000_000, 0.0, False, payload) for i in range(a, a + 10_000)])
            assert ep.flush() == n
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"{n} steps took {elapsed:.2f} s"
