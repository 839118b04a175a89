"""Errors map to typed exceptions: client-side checks (:class:`SchemaError`, nothing sent),
server ``ERROR`` frames (:class:`ServerError` with the right :class:`ErrorCode`), a failed
episode (:class:`EpisodeFailed`), connection problems (:class:`TransportError`)."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest
from conftest import Daemon

from wshard_client import (
    Channel,
    EpisodeFailed,
    ErrorCode,
    NotPushed,
    Recorder,
    SchemaError,
    ServerError,
    TransportError,
    WshardError,
)
from wshard_client import _wire as wire

CHANNELS = [Channel("joints", "f32", (7,), codec="none"), Channel("gripper", "f32", lane="action", codec="none")]
GOOD = [bytes(28), struct.pack("<f", 1.0)]


def test_py_errors_payload_size_refused_client_side(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("sizes", CHANNELS, "", 10.0) as ep:
            with pytest.raises(SchemaError) as ei:
                ep.push(0, 0.0, False, [bytes(28), bytes(3)])
            assert ei.value.code == ErrorCode.PAYLOAD_SIZE
            assert ei.value.channel == "gripper"
            assert "payload is 3 bytes, schema step is 4 bytes" in str(ei.value)
            with pytest.raises(SchemaError):
                ep.push(0, 0.0, False, [bytes(28)])  # one payload for two channels
            with pytest.raises(SchemaError):
                ep.push(0, 0.0, False, {"joints": bytes(28)})  # missing name
            with pytest.raises(SchemaError):
                ep.push(0, 0.0, False, {"joints": bytes(28), "gripper": bytes(4), "x": b""})
            with pytest.raises(SchemaError):
                ep.push(0, 0.0, False, [[1.0] * 6, [0.0]])  # 6 values for f32[7]
            with pytest.raises(SchemaError):
                ep.push_packed(0, 0.0, False, bytes(31))
            with pytest.raises(SchemaError):
                ep.push_batch([(0, 0.0, False, GOOD), (1, 0.0, False, [bytes(28), bytes(5)])])
            assert ep.next_seq == 0  # nothing was queued
            assert ep.push(0, 0.0, False, GOOD) == 0  # the episode is still fine
        assert ep.close().timesteps == 1
    assert daemon.episode("sizes").timesteps == 1


def test_py_errors_numpy_dtype_and_shape_refused(daemon: Daemon, np: Any) -> None:
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("np-checks", CHANNELS, "", 10.0) as ep:
            g = np.float32(1.0)
            for bad in (
                np.zeros(7, np.float64),
                np.zeros(7, np.int32),
                np.zeros((1, 7), np.float32),
                np.zeros(8, np.float32),
            ):
                with pytest.raises(SchemaError):
                    ep.push(0, 0.0, False, [bad, g])
            with pytest.raises(SchemaError):
                ep.push_batch(t_ns=np.arange(3), payloads=[np.zeros((3, 7), np.float32), np.zeros(4, np.float32)])
            with pytest.raises(SchemaError):
                ep.push_batch(t_ns=np.arange(3.0), payloads=[np.zeros((3, 7), np.float32), np.zeros(3, np.float32)])
            # big-endian and non-contiguous arrays are converted, not refused
            ep.push(0, 0.0, False, [np.arange(7, dtype=">f4"), g])
            ep.push(1, 0.0, False, [np.arange(14, dtype=np.float32)[::2], g])
            ep.push_packed(2, 0.0, False, np.ones((2, 4), np.float32))  # any shape, 32 bytes
        assert ep.close().timesteps == 3
    e = daemon.episode("np-checks")
    want = [np.arange(7), np.arange(0, 14, 2), np.ones(7)]
    assert e.channel("signal/joints") == b"".join(a.astype("<f4").tobytes() for a in want)


def test_py_errors_duplicate_episode_id(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        rec.episode("dup", CHANNELS, "", 10.0).close()
        with pytest.raises(ServerError) as ei:
            rec.episode("dup", CHANNELS, "", 10.0)
        assert ei.value.code == ErrorCode.EPISODE_EXISTS
        assert "dup" in ei.value.message
        rec.episode("not-dup", CHANNELS, "", 10.0).close()  # the connection carries on


def test_py_errors_bad_schema_from_server(start_daemon: Any) -> None:
    d = start_daemon(limits={"max_channels": 2})
    three = CHANNELS + [Channel("extra", "u8")]
    with Recorder.connect(d.socket) as rec:
        with pytest.raises(ServerError) as ei:
            rec.episode("too-many", three, "", 10.0)  # the client allows 65535 channels
        assert ei.value.code == ErrorCode.BAD_SCHEMA
        rec.episode("two", CHANNELS, "", 10.0).close()


def test_py_errors_bad_schema_refused_client_side(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        with pytest.raises(SchemaError) as ei:
            rec.episode(".hidden", CHANNELS, "", 10.0)
        assert ei.value.code == ErrorCode.BAD_EPISODE_ID
        for bad in (
            dict(channels=[], tick_hz=10.0),
            dict(channels=CHANNELS, tick_hz=0.0),
            dict(channels=[Channel("a/../b", "f32")], tick_hz=1.0),
            dict(channels=[Channel("a", "f32"), Channel("a", "u8", lane="action")], tick_hz=1.0),
            dict(channels=[Channel("a", "f32", (0,))], tick_hz=1.0),
            dict(channels=[Channel("a", "f32", (1,) * 9)], tick_hz=1.0),
            dict(channels=[Channel("a", "f32", codec="zstd-23")], tick_hz=1.0),
            dict(channels=[Channel("a", "u8", (rec.server_info.max_frame_bytes,))], tick_hz=1.0),
            dict(channels=CHANNELS, tick_hz=1.0, metadata="[1, 2]"),
        ):
            with pytest.raises(SchemaError) as ei:
                rec.episode("ok-id", **bad)  # type: ignore[arg-type]
            assert ei.value.code == ErrorCode.BAD_SCHEMA, bad
        with pytest.raises(SchemaError):
            Channel("a", "complex64")
        rec.episode("ok-id", CHANNELS, "", 10.0).close()  # nothing bad reached the server


def test_py_errors_bad_seq_fails_episode(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("bad-seq", CHANNELS, "", 10.0)
        payload = b"".join(GOOD)
        rec.send_raw(wire.encode_timestep_batch([wire.record_header(5, 0, 0.0, False) + payload]))
        with pytest.raises(ServerError) as ei:
            ep.push(0, 0.0, False, GOOD)
            ep.flush()  # DURABLE{1} comes after the ERROR, so the next call reports it
            ep.push(1, 0.0, False, GOOD)
        assert ei.value.code == ErrorCode.SEQUENCE
        assert "expected seq 0" in ei.value.message
        assert ep.failed
        with pytest.raises(EpisodeFailed):
            ep.push(1, 0.0, False, GOOD)
        with pytest.raises(EpisodeFailed):
            ep.flush()
        summary = ep.close()  # a failed episode does not send what is pending
        assert summary.timesteps == ep.sent_seq <= 1  # seq 0 was sent unless the ERROR came first
    assert daemon.episode("bad-seq").timesteps == summary.timesteps


def test_py_errors_server_payload_size_and_already_open(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("raw-size", CHANNELS, "", 10.0)
        rec.send_raw(wire.encode_timestep_batch([wire.record_header(0, 0, 0.0, False) + bytes(31)]))
        with pytest.raises(ServerError) as ei:
            ep.close()  # the ERROR came before ACCEPTED{CLOSE}: close reports it
        assert ei.value.code == ErrorCode.PAYLOAD_SIZE
        assert "32" in ei.value.message and "31" in ei.value.message

        ep = rec.episode("raw-open", CHANNELS, "", 10.0)
        with pytest.raises(WshardError):
            rec.episode("second", CHANNELS, "", 10.0)  # refused client-side
        rec.send_raw(wire.encode_open(ep.spec))  # the server's answer
        with pytest.raises(ServerError) as ei:
            ep.close()
        assert ei.value.code == ErrorCode.ALREADY_OPEN
        rec.episode("after", CHANNELS, "", 10.0).close()


def test_py_errors_not_pushed(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        with rec.episode("not-pushed", CHANNELS, "", 10.0) as ep:
            with pytest.raises(NotPushed):
                ep.wait_durable(0)
            ep.push(0, 0.0, False, GOOD)
            with pytest.raises(NotPushed) as ei:
                ep.wait_durable(1)
            assert (ei.value.seq, ei.value.next_seq) == (1, 1)


def test_py_errors_transport(daemon: Daemon, tmp_path: Any) -> None:
    with pytest.raises(TransportError):
        Recorder.connect(tmp_path / "no-such.sock")
    with pytest.raises(TransportError):
        Recorder.connect("/tmp/" + "x" * 120)
    with pytest.raises(ConnectionError):  # TransportError is a ConnectionError too
        Recorder.connect(tmp_path / "no-such.sock")
    rec = Recorder.connect(daemon.socket)
    rec.close()
    rec.close()  # idempotent
    with pytest.raises(TransportError):
        rec.episode("closed", CHANNELS, "", 10.0)


def test_py_errors_overloaded(start_daemon: Any) -> None:
    d = start_daemon(limits={"max_connections": 1})
    for _ in range(100):  # the fixture's readiness probe may still hold the one slot
        try:
            first = Recorder.connect(d.socket, "first")
            break
        except ServerError as e:
            assert e.code == ErrorCode.OVERLOADED
            time.sleep(0.02)
    with first:
        with pytest.raises((ServerError, TransportError)) as ei:
            Recorder.connect(d.socket, "second", timeout=10.0)
        assert isinstance(ei.value, ServerError), f"expected ERROR{{OVERLOADED}}, got {ei.value!r}"
        assert ei.value.code == ErrorCode.OVERLOADED


def test_py_errors_daemon_shutdown(daemon: Daemon) -> None:
    """SIGTERM while an episode is open: the server finalizes it `interrupted` and says
    SHUTTING_DOWN; the client raises it, then reports the connection as gone."""
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("shutdown", CHANNELS, "", 10.0)
        for i in range(10):
            ep.push(i, 0.0, False, GOOD)
        assert ep.flush() == 10
        assert daemon.stop() == 0
        with pytest.raises(ServerError) as ei:
            for i in range(10, 10_000):  # the ERROR arrives asynchronously
                ep.push(i, 0.0, False, GOOD)
                time.sleep(0.001)
        assert ei.value.code == ErrorCode.SHUTTING_DOWN
        with pytest.raises((EpisodeFailed, TransportError)):
            ep.flush()
    e = daemon.episode("shutdown")
    assert e.status == "interrupted"
    assert e.timesteps >= 10


def test_py_errors_timestamps_must_not_decrease(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("ts-back", CHANNELS, "", 10.0, timebase="timestamps_ns")
        ep.push(100, 0.0, False, GOOD)
        ep.push(100, 0.0, False, GOOD)  # equal is allowed
        ep.push(99, 0.0, False, GOOD)
        with pytest.raises(ServerError) as ei:
            ep.flush()
        assert ei.value.code == ErrorCode.TIMESTAMP_ORDER
        assert ei.value.code.value == 22  # TIMESTAMP_ORDER; 23 is TIMEOUT
        assert "t_ns 99 is below t_ns 100 of seq 1" in ei.value.message
        ep.close()
    # The batch holding the decreasing step was refused whole.
    assert daemon.episode("ts-back").timesteps == 0


def test_py_errors_bool_values_must_be_0_or_1(daemon: Daemon) -> None:
    channels = [Channel("grip", "bool", (2,), codec="none")]
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("bools", channels, "", 10.0)
        ep.push(0, 0.0, False, [b"\x00\x01"])
        ep.flush()
        ep.push(1, 0.0, False, [b"\x01\x02"])
        with pytest.raises(ServerError) as ei:
            ep.flush()
        assert ei.value.code == ErrorCode.MALFORMED_FRAME
        assert "seq 1 channel grip element 1 has value 2" in ei.value.message
        ep.close()
    assert daemon.episode("bools").timesteps == 1


def test_py_errors_long_episode_ids_follow_the_server_limit(start_daemon: Any) -> None:
    d = start_daemon(limits={"max_episode_id_bytes": 200})
    with Recorder.connect(d.socket) as rec:
        with rec.episode("e" * 150, CHANNELS, "", 10.0) as ep:
            ep.push(0, 0.0, False, GOOD)
        with pytest.raises(SchemaError) as se:
            rec.episode("e" * 201, CHANNELS, "", 10.0)  # no server takes more than 200
        assert se.value.code == ErrorCode.BAD_EPISODE_ID
    assert d.episode("e" * 150).timesteps == 1


def test_py_errors_flush_and_close_answered_with_nothing_to_sync(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("nothing", CHANNELS, "", 10.0)
        assert ep.flush(timeout=10) == 0
        summary = ep.close()
        assert (summary.timesteps, summary.durable_up_to) == (0, 0)
        ep = rec.episode("all-durable", CHANNELS, "", 10.0)
        ep.push(0, 0.0, False, GOOD)
        assert ep.flush(timeout=10) == 1
        assert ep.flush(timeout=10) == 1
        summary = ep.close()
        assert (summary.timesteps, summary.durable_up_to) == (1, 1)


def test_py_errors_connection_error_is_a_probe(daemon: Daemon) -> None:
    """``connection_error()`` reports a pending server ERROR without taking it (the next call
    still raises it), then the end of the connection; ``None`` while all is well."""
    with Recorder.connect(daemon.socket) as rec:
        ep = rec.episode("probe", CHANNELS, "", 10.0)
        ep.push(0, 0.0, False, GOOD)
        assert ep.flush() == 1
        assert rec.connection_error() is None
        rec.send_raw(wire.encode_timestep_batch([wire.record_header(5, 0, 0.0, False) + b"".join(GOOD)]))
        deadline = time.monotonic() + 20
        while rec.connection_error() is None:
            assert time.monotonic() < deadline, "no ERROR seen"
            time.sleep(0.005)
        seen = rec.connection_error()
        assert isinstance(seen, ServerError) and seen.code == ErrorCode.SEQUENCE
        with pytest.raises(ServerError) as ei:  # still there for the caller
            ep.push(1, 0.0, False, GOOD)
            ep.flush()
        assert ei.value.code == ErrorCode.SEQUENCE
        ep.close()
        assert daemon.stop() == 0  # says SHUTTING_DOWN, then ends the connection
        deadline = time.monotonic() + 20
        while rec.connection_error() is None:
            assert time.monotonic() < deadline, "shutdown not seen"
            time.sleep(0.005)
        seen = rec.connection_error()
        assert isinstance(seen, ServerError) and seen.code == ErrorCode.SHUTTING_DOWN
        with pytest.raises(ServerError):  # the caller takes it
            rec.episode("after", CHANNELS, "", 10.0)
        while not isinstance(rec.connection_error(), TransportError):
            assert time.monotonic() < deadline, f"connection end not seen: {rec.connection_error()!r}"
            time.sleep(0.005)
