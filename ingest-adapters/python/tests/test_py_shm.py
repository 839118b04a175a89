"""The shared-memory transport (``transport="shm"``) against the real wshardd: recorded
timesteps read back bit-exactly (tests/shard_parse.py), the same flush / wait_durable
semantics as on the socket, a ring of two tiny slots in front of a deliberately slow
daemon (blocking, nothing lost; with a drop policy the drops are counted and recorded as
gaps), context managers, concurrent socket and shm episodes, and the client-side checks."""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Sequence

import pytest
from conftest import PACKAGE, Daemon
from test_py_record import GEN, NO_NUMPY_SCRIPT

from wshard_client import (
    Channel,
    EpisodeFailed,
    ErrorCode,
    Outcome,
    Recorder,
    RingPolicy,
    SchemaError,
    ServerError,
    Step,
    Timeout,
    TransportError,
)
from wshard_client import _ring as ring_mod
from wshard_client import _wire as wire

CHANNELS = [
    Channel("joints", "f32", (7,), codec="none"),
    Channel("cam", "u8", (8, 8, 3), codec="none"),
    Channel("flag", "bool", codec="none"),
]
STEP_BYTES = 28 + 192 + 1
RECORD = 21 + STEP_BYTES
#: The smallest slot: one record (64 + 242 rounded up to 64).
TINY_SLOT = 320


def columns(np: Any, seqs: Any) -> List[Any]:
    """Deterministic payloads of the given seqs (numpy columns)."""
    seqs = np.asarray(seqs, dtype=np.int64)
    joints = (seqs[:, None] * 0.5 + np.arange(7)).astype(np.float32)
    cam = ((seqs[:, None] * 7 + np.arange(192)) % 256).astype(np.uint8).reshape(-1, 8, 8, 3)
    flag = (seqs % 3 == 0).astype(bool)
    return [joints, cam, flag]


def push_steps(ep: Any, np: Any, n: int) -> None:
    """``n`` single pushes of the next seqs (t_ns = seq x 1000)."""
    first = ep.next_seq
    cols = columns(np, range(first, first + n))
    for k in range(n):
        ep.push((first + k) * 1000, float(first + k), False, [c[k] for c in cols])


def push_columns(ep: Any, np: Any, n: int) -> None:
    first = ep.next_seq
    seqs = np.arange(first, first + n)
    r = ep.push_batch(t_ns=seqs * 1000, payloads=columns(np, seqs), reward=seqs.astype(np.float32))
    assert r == range(first, first + n)


def check_readback(d: Daemon, episode_id: str, np: Any, seqs: Sequence[int], status: str = "complete") -> None:
    """The episode holds exactly ``seqs`` (in order), bit-exact."""
    e = d.episode(episode_id)
    assert e.status == status
    assert e.timesteps == len(seqs)
    assert e.timestamps == [s * 1000 for s in seqs]
    assert e.rewards == [float(s) for s in seqs]
    joints, cam, flag = columns(np, list(seqs))
    assert e.channel("signal/joints") == joints.tobytes()
    assert e.channel("signal/cam") == cam.tobytes()
    assert e.channel("signal/flag") == flag.tobytes()


def slow_daemon(start_daemon: Any, **extra: Dict[str, Any]) -> Daemon:
    """Every drained group fsynced, a queue of one frame: far slower than the producer."""
    return start_daemon(fsync={"policy": "always", "interval_ms": 1}, queues={"max_pending_frames": 1}, **extra)  # type: ignore[no-any-return]


def test_py_shm_record_readback(start_daemon: Any, np: Any) -> None:
    d: Daemon = start_daemon(rotation={"max_timesteps": 3000})
    with Recorder.connect(d.socket, "pytest-shm") as rec:
        with rec.episode("shm-ep", CHANNELS, "TestEnv-v0", 100.0, transport="shm") as ep:
            assert ep.transport == "shm"
            info = ep.shm
            assert info is not None and info.policy == RingPolicy.BLOCK and info.slots == 64
            assert info.slot_bytes == ring_mod.default_slot_bytes(RECORD, rec.server_info.max_frame_bytes)
            assert info.slot_bytes % 64 == 0 and info.slot_bytes >= 256 * 1024
            assert ring_mod.default_slot_count(info.slot_bytes) == 64
            assert ring_mod.default_slot_count(1_843_328) == 10  # one camera step per slot
            assert ring_mod.default_slot_count(64 << 20) == ring_mod.MIN_DEFAULT_SLOTS
            push_steps(ep, np, 500)  # one by one, into the pending batch
            cols = columns(np, range(500, 1000))
            steps = [Step(s * 1000, float(s), False, [c[s - 500] for c in cols]) for s in range(500, 1000)]
            assert ep.push_batch(steps) == range(500, 1000)
            push_columns(ep, np, 9000)  # several slots, written straight into the ring
            assert ep.flush() == 10_000
            assert ep.durable_seq == ep.sent_seq == ep.published_seq == 10_000
        summary = ep.close()
    assert (summary.timesteps, summary.durable_up_to, summary.dropped_steps) == (10_000, 10_000, 0)
    check_readback(d, "shm-ep", np, range(10_000))
    assert len(d.episode("shm-ep").manifest["chunks"]) == 4
    assert "shared-memory ring attached" in d.log()
    d.assert_verified()


def test_py_shm_record_without_numpy(daemon: Daemon) -> None:
    """The pure-Python paths (pending batches, Step lists, column buffers) into the ring."""
    script = NO_NUMPY_SCRIPT.replace('"TestEnv-v0", 1000.0)', '"TestEnv-v0", 1000.0, transport="shm", slots=4)')
    assert 'transport="shm"' in script
    script = script.replace('print("ok")', 'assert ep.closed and ep.shm.slots == 4\nprint("ok")')
    env = dict(os.environ, PYTHONPATH=str(PACKAGE / "src"))
    r = subprocess.run(
        [sys.executable, "-c", script, str(daemon.socket)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
    scope: Dict[str, Any] = {}
    exec(GEN, scope)
    steps = [scope["gen"](i) for i in range(300)]
    e = daemon.episode("plain-ep")
    assert e.status == "complete" and e.timesteps == 300
    assert e.channel("signal/joint_pos") == b"".join(struct.pack("<7f", *s[3][0]) for s in steps)
    assert e.channel("signal/cam") == b"".join(bytes(s[3][2]) for s in steps)
    assert e.channel("signal/tick") == b"".join(struct.pack("<i", s[3][4]) for s in steps)
    assert e.timestamps == [s[0] for s in steps]
    daemon.assert_verified()


def test_py_shm_flush_and_wait_durable(start_daemon: Any, np: Any) -> None:
    d: Daemon = start_daemon(fsync={"policy": "never"})
    with Recorder.connect(d.socket, batch_delay=None, batch_steps=1 << 20, batch_bytes=1 << 30) as rec:
        with rec.episode("shm-flush", CHANNELS, "", 100.0, transport="shm") as ep:
            push_steps(ep, np, 1000)  # 1000 records fit one default slot
            assert ep.sent_seq == 0 and ep.durable_seq == 0  # still pending on the client
            with pytest.raises(Timeout):
                ep.wait_durable(999, timeout=0.3)  # sent now, but fsync policy never
            assert ep.sent_seq == 1000 and ep.durable_seq == 0
            assert ep.flush() == 1000  # FLUSH forces the fsync
            assert ep.wait_durable(999, timeout=1.0) == 1000
            assert ep.flush() == 1000  # nothing new: answered at once
            push_steps(ep, np, 1)
            assert ep.flush() == 1001
    assert ep.close().durable_up_to == 1001
    d2: Daemon = start_daemon(rotation={"max_timesteps": 100})
    with Recorder.connect(d2.socket) as rec:  # chunk durability: DURABLE follows chunks
        with rec.episode("shm-chunky", CHANNELS, "", 100.0, durability="chunk", transport="shm") as ep:
            push_steps(ep, np, 150)
            assert ep.wait_durable(99, timeout=10.0) == 100
            with pytest.raises(Timeout):
                ep.wait_durable(149, timeout=0.3)
    assert (ep.close().timesteps, ep.close().durable_up_to) == (150, 150)
    check_readback(d, "shm-flush", np, range(1001))
    check_readback(d2, "shm-chunky", np, range(150))


def test_py_shm_small_ring_blocks_nothing_lost(start_daemon: Any, np: Any) -> None:
    d = slow_daemon(start_daemon, rotation={"max_timesteps": 1000})
    with Recorder.connect(d.socket, "pytest-shm-block", batch_steps=1) as rec:
        with rec.episode("shm-block", CHANNELS, "", 1000.0, transport="shm", slot_bytes=TINY_SLOT, slots=2) as ep:
            assert ep.shm is not None and (ep.shm.slot_bytes, ep.shm.slots) == (TINY_SLOT, 2)
            push_steps(ep, np, 1500)  # one step per slot (batch_steps=1)
            push_columns(ep, np, 1500)  # one step per slot too: a slot holds one record
            assert ep.flush() == 3000
            waits = ep._ring.waits  # type: ignore[union-attr]
    assert ep.close().timesteps == 3000 and ep.dropped_steps == 0
    assert waits > 0, "the producer never had to wait for the slow daemon"
    check_readback(d, "shm-block", np, range(3000))
    d.assert_verified()


def stop(d: Daemon) -> None:
    """SIGSTOP the daemon and wait until every thread of it is stopped."""
    os.kill(d.proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    tasks = f"/proc/{d.proc.pid}/task"
    while time.monotonic() < deadline:
        states = []
        for t in os.listdir(tasks):
            with open(f"{tasks}/{t}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if all(s == "T" for s in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"wshardd not stopped: {states}")


def test_py_shm_timeout_keeps_the_batch_pending(daemon: Daemon, np: Any) -> None:
    """A stopped daemon: pushing into the full ring times out, nothing is lost; once it
    runs again the pending batch goes out with the next flush."""
    with Recorder.connect(daemon.socket, batch_steps=1, timeout=0.5) as rec:
        with rec.episode("shm-stalled", CHANNELS, "", 100.0, transport="shm", slot_bytes=TINY_SLOT, slots=2) as ep:
            stop(daemon)
            try:
                push_steps(ep, np, 2)  # fills both slots
                with pytest.raises(Timeout, match="free slot"):
                    push_steps(ep, np, 1)
                assert (ep.next_seq, ep.sent_seq, ep.failed) == (3, 2, False)
                with pytest.raises(Timeout):
                    push_columns(ep, np, 5)
                assert ep.next_seq == 3  # the refused slot's steps were not pushed
            finally:
                os.kill(daemon.proc.pid, signal.SIGCONT)
            assert ep.flush(timeout=30.0) == 3
            push_columns(ep, np, 5)
    assert ep.close().timesteps == 8
    check_readback(daemon, "shm-stalled", np, range(8))


def test_py_shm_context_aborted_on_exception(daemon: Daemon, np: Any) -> None:
    class Boom(Exception):
        pass

    with Recorder.connect(daemon.socket) as rec:
        with pytest.raises(Boom):
            with rec.episode("shm-boom", CHANNELS, "", 30.0, transport="shm", slots=2) as ep:
                push_steps(ep, np, 25)
                push_columns(ep, np, 100)
                raise Boom("teleop crashed")
        assert ep.closed and ep._ring is not None and ep._ring.closed
        summary = ep.close()
        assert (summary.outcome, summary.timesteps) == (Outcome.ABORTED, 125)
        with rec.episode("shm-after", CHANNELS, "", 30.0) as ep2:  # the connection carries on
            assert ep2.transport == "socket" and ep2.shm is None
            push_steps(ep2, np, 3)
        ep3 = rec.episode("shm-left-open", CHANNELS, "", 30.0, transport="shm")
        push_steps(ep3, np, 4)
    assert ep3.closed  # the recorder aborted it
    check_readback(daemon, "shm-boom", np, range(125), status="aborted")
    check_readback(daemon, "shm-after", np, range(3))
    check_readback(daemon, "shm-left-open", np, range(4), status="aborted")
    daemon.assert_verified()


def test_py_shm_concurrent_socket_and_shm(daemon: Daemon, np: Any) -> None:
    n = 40_000
    errors: List[BaseException] = []

    def record(episode_id: str, transport: str) -> None:
        try:
            with Recorder.connect(daemon.socket, f"pytest-{transport}", batch_steps=64) as rec:
                with rec.episode(episode_id, CHANNELS, "", 1000.0, transport=transport) as ep:
                    for _ in range(10):
                        push_steps(ep, np, 500)
                        push_columns(ep, np, n // 10 - 500)
                    assert ep.flush() == n
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=record, args=(f"conc-{t}-{i}", t)) for i in range(2) for t in ("socket", "shm")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for i in range(2):
        for t in ("socket", "shm"):
            check_readback(daemon, f"conc-{t}-{i}", np, range(n))
    daemon.assert_verified()


def test_py_shm_refused_client_side(start_daemon: Any) -> None:
    d: Daemon = start_daemon(limits={"max_frame_bytes": 4096})
    with Recorder.connect(d.socket) as rec:
        cases = [
            ({"slot_bytes": 1000}, "not a multiple of 64"),
            ({"slot_bytes": 256}, "smaller than 64 + one timestep record (242 bytes) = 306"),
            ({"slot_bytes": 8192}, "exceeds max_frame_bytes 4096"),
            ({"slots": 1}, "slot_count 1 is outside 2..=65536"),
            ({"slots": 70_000}, "outside 2..=65536"),
        ]
        for opts, msg in cases:
            with pytest.raises(SchemaError, match=re.escape(msg)) as ei:
                rec.episode("geom", CHANNELS, "", 10.0, transport="shm", **opts)
            assert ei.value.code == ErrorCode.BAD_SHM
        with pytest.raises(ValueError, match="options of transport='shm'"):
            rec.episode("geom", CHANNELS, "", 10.0, slots=4)
        with pytest.raises(ValueError, match="unknown transport"):
            rec.episode("geom", CHANNELS, "", 10.0, transport="pigeon")
        with pytest.raises(ValueError, match="unknown ring policy"):
            rec.episode("geom", CHANNELS, "", 10.0, transport="shm", policy="drop_random")
        assert rec.episode_open is None
        with rec.episode("geom", CHANNELS, "", 10.0, transport="shm") as ep:  # nothing was sent before
            assert ep.shm is not None and ep.shm.slot_bytes == 4096  # default capped by max_frame_bytes
            ep.push(0, 0.0, False, [bytes(28), bytes(192), b"\x01"])
    assert d.episode("geom").timesteps == 1


def test_py_shm_server_error_fails_the_episode(daemon: Daemon, np: Any) -> None:
    """After SHM_ATTACH a TIMESTEP_BATCH on the socket is MALFORMED_FRAME: the next push
    raises it, later calls EpisodeFailed, close still works."""
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("shm-err", CHANNELS, "", 10.0, transport="shm")
        push_steps(ep, np, 3)
        ep.flush()
        rec.send_raw(wire.encode_timestep_batch([wire.record_header(3, 0, 0.0, False) + bytes(STEP_BYTES)]))
        time.sleep(0.3)
        with pytest.raises(ServerError) as ei:
            push_steps(ep, np, 1)
        assert ei.value.code == ErrorCode.MALFORMED_FRAME
        with pytest.raises(EpisodeFailed):
            push_steps(ep, np, 1)
        assert ep.close().timesteps == 3
    check_readback(daemon, "shm-err", np, range(3))


def test_py_shm_plain_atomics(daemon: Daemon, np: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libatomic: plain struct stores for block and drop_newest; drop_oldest,
    which needs a compare-and-swap, is refused before anything is sent."""
    monkeypatch.setattr(ring_mod, "libatomic", lambda: None)
    with Recorder.connect(daemon.socket, batch_steps=7) as rec:
        with pytest.raises(TransportError, match="drop_oldest needs an atomic compare-and-swap"):
            rec.episode("plain-atomics", CHANNELS, "", 10.0, transport="shm", policy="drop_oldest")
        with rec.episode("plain-atomics", CHANNELS, "", 10.0, transport="shm", slots=2, slot_bytes=1024) as ep:
            assert ep.shm is not None and ep.shm.atomics == "plain"
            push_steps(ep, np, 500)
            push_columns(ep, np, 500)
            assert ep.flush() == 1000
    check_readback(daemon, "plain-atomics", np, range(1000))


@pytest.mark.parametrize("policy", ["drop_newest", "drop_oldest"])
def test_py_shm_drop_policies(start_daemon: Any, np: Any, policy: str) -> None:
    """A producer far faster than the slow daemon with a drop policy: the drops are
    counted, every other step is recorded bit-exact, the chunks list the gaps."""
    d = slow_daemon(start_daemon, rotation={"max_timesteps": 100})
    episode_id = f"drop-{policy}"
    with Recorder.connect(d.socket, batch_steps=1) as rec:
        with rec.episode(episode_id, CHANNELS, "", 1000.0, transport="shm", slot_bytes=TINY_SLOT, slots=2,
                         policy=policy) as ep:  # fmt: skip
            assert ep.shm is not None and ep.shm.policy == RingPolicy.parse(policy)
            for _ in range(3000):
                push_steps(ep, np, 100)
                if ep.dropped_steps > 0 and ep.next_seq - ep.dropped_steps >= 400:
                    break
                time.sleep(0.002)
            assert ep.dropped_steps > 0, "the slow daemon never made the producer drop"
            assert ep.dropped_batches == ep.dropped_steps  # one step per slot
            assert ep.flush() == ep.published_seq  # DURABLE covers what was sent
            push_steps(ep, np, 1)  # an empty ring takes it
            assert ep.published_seq == ep.next_seq
            assert ep.flush() == ep.next_seq
            pushed, dropped = ep.next_seq, ep.dropped_steps
    summary = ep.close()
    # ACCEPTED{CLOSE} counts the recorded steps, DURABLE{last seq + 1} covers the drops too.
    assert (summary.timesteps, summary.durable_up_to, summary.dropped_steps) == (pushed - dropped, pushed, dropped)
    e = d.episode(episode_id)
    seqs = [t // 1000 for t in e.timestamps]
    assert len(seqs) == pushed - dropped and seqs == sorted(set(seqs)) and seqs[-1] == pushed - 1
    check_readback(d, episode_id, np, seqs)
    gaps = e.blocks["time/dropped_seq_ranges"]
    ranges = list(struct.iter_unpack("<QQ", gaps))
    assert sum(b - a for a, b in ranges) == dropped
    assert set(range(pushed)) - set(seqs) == {s for a, b in ranges for s in range(a, b)}
    assert e.manifest.get("ring_policy") == policy
    assert e.manifest.get("dropped_steps") == dropped
    assert e.manifest.get("producer_dropped_steps") == dropped
    d.assert_verified()


def test_py_shm_plain_head_is_never_seen_torn() -> None:
    """A consumer polling ``head`` while a plain-stores producer publishes must never see
    it go backwards (``struct.pack_into`` zero-fills before it writes, so it shows ``0`` in
    between: the daemon then refuses the ring with "head moved backwards")."""
    import mmap

    mm = mmap.mmap(-1, ring_mod.RING_HEADER_BYTES)
    words = ring_mod.make_words(mm, "plain")
    reader = memoryview(mm)[: ring_mod.RING_HEADER_BYTES].cast("Q")
    stores = 2_000_000
    pid = os.fork()
    if pid == 0:  # the producer: head 1, 2, ... crossing every byte boundary up to 2^21
        try:
            for head in range(1, stores + 1):
                words.store_u64(ring_mod.OFFSET_HEAD, head)
        finally:
            os._exit(0)
    last, backwards, reads = 0, [], 0
    try:
        while last < stores:
            head = int(reader[ring_mod.OFFSET_HEAD // 8])
            reads += 1
            if head < last:
                backwards.append((last, head))
            last = max(last, head)
    finally:
        os.waitpid(pid, 0)
        reader.release()
        words.close()
        mm.close()
    assert not backwards, f"{len(backwards)} of {reads} reads went backwards, e.g. {backwards[:3]}"
