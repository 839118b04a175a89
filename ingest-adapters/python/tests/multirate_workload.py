"""The issue's multi-rate workload in Python: joints at 1 kHz (three ``f32[7]`` channels),
an IMU at 200 Hz (``f32[10]``), two cameras at 30 Hz (``u8[480,640,3]`` each, one stream),
events at about 1 Hz of data time from every producer.

Every value, timestamp and event is a pure function of the stream and the step, exactly as
``tests/src/multirate_workload.rs`` computes them (the two must change together): the Rust
test ``multirate_three_producers_*`` runs this module as a producer process and checks
what it recorded against the Rust functions, and ``test_multirate_reference_readers``
records with it in-process. No numpy needed.

As a script it is a producer process (the Rust ``multirate_producer`` speaks the same)::

    python3 multirate_workload.py SOCKET EPISODE KIND STEPS T0_NS [--shm] [--pause-at K]

printing, one line each, flushed at once: ``joined``; ``event SEQ STEP`` per acknowledged
event; with ``--pause-at K``, ``paused DURABLE`` once K steps are durable, then it waits
for a line on stdin; ``closed TIMESTEPS DURABLE`` after the stream's close. The package
``wshard_client`` must be importable (``PYTHONPATH=ingest-adapters/python/src``).
"""

from __future__ import annotations

import struct
import sys
from typing import Any, Dict, List, Tuple

T0_NS = 1_700_000_000_000_000_000
MS_NS = 1_000_000
CAMERA_SHAPE = (480, 640, 3)
CAMERA_FRAME_BYTES = 480 * 640 * 3
#: A camera byte repeats every this many bytes within a frame (prime: a shift is seen).
CAMERA_PATTERN = 251
CAMERA_JITTER_NS = 250_000
BATCH_STEPS = 50

KINDS = ("joints", "imu", "cameras")
HZ = {"joints": 1000.0, "imu": 200.0, "cameras": 30.0}
TIMEBASE = {"joints": "ticks", "imu": "ticks", "cameras": "timestamps_ns"}
EVENT_EVERY = {"joints": 1000, "imu": 200, "cameras": 30}
EVENT_LABEL = {"joints": "button", "imu": "contact", "cameras": "frame_tag"}

#: (name, lane, dtype, shape, codec) per channel, in schema order.
CHANNELS: Dict[str, List[Tuple[str, str, str, Tuple[int, ...], str]]] = {
    "joints": [
        ("q", "signal", "f32", (7,), "default"),
        ("dq", "signal", "f32", (7,), "lz4"),
        ("tau", "action", "f32", (7,), "none"),
    ],
    "imu": [("imu", "signal", "f32", (10,), "default")],
    "cameras": [
        ("cam_left", "signal", "u8", CAMERA_SHAPE, "none"),
        ("cam_right", "signal", "u8", CAMERA_SHAPE, "none"),
    ],
}

_CAMERA_BASE = bytes(i % CAMERA_PATTERN for i in range(CAMERA_FRAME_BYTES))


def t_ns(kind: str, t0: int, step: int) -> int:
    if kind == "joints":
        return t0 + step * MS_NS
    if kind == "imu":
        return t0 + step * 5 * MS_NS
    return t0 + step * 33_333_333 + (step % 4) * CAMERA_JITTER_NS


def _f32s(values: List[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def value(kind: str, channel: int, step: int) -> bytes:
    """The little-endian bytes of channel ``channel`` (schema order) at ``step``."""
    if kind == "joints":
        return _f32s([step * 0.25 - (channel * 8 + e) * 1.5 for e in range(7)])
    if kind == "imu":
        return _f32s([step * 0.5 + e * 0.125 - 100.0 for e in range(10)])
    offset = (3 * step + 101 * channel) % 256
    table = bytes((x + offset) % 256 for x in range(256))
    return _CAMERA_BASE.translate(table)


def payloads(kind: str, step: int) -> List[bytes]:
    return [value(kind, c, step) for c in range(len(CHANNELS[kind]))]


def has_event(kind: str, step: int) -> bool:
    every = EVENT_EVERY[kind]
    return step % every == every // 2


def event_steps(kind: str, steps: int) -> List[int]:
    return [s for s in range(steps) if has_event(kind, s)]


def event_data(kind: str, step: int) -> Tuple[str, Any]:
    """``(kind, data)`` of the event at ``step``: text, a JSON value, or bytes."""
    if kind == "joints":
        return "text", f"joints button at step {step}"
    if kind == "imu":
        return "json", {"force": [1.5, -2.25], "imu_step": step}
    return "binary", bytes([0x00, 0xFF, step & 0xFF, (step >> 8) & 0xFF]) + b"cam"


def channels(kind: str) -> List[Any]:
    from wshard_client import Channel

    return [
        Channel(name, dtype, shape, lane=lane, codec=codec, modality="rgb" if kind == "cameras" else None)
        for name, lane, dtype, shape, codec in CHANNELS[kind]
    ]


def join(rec: Any, episode: str, kind: str, shm: bool) -> Any:
    """Join ``episode`` with the stream ``kind`` on the recorder ``rec``."""
    return rec.join_stream(
        episode,
        kind,
        channels(kind),
        HZ[kind],
        timebase=TIMEBASE[kind],
        durability="ack",
        transport="shm" if shm else "socket",
    )


def record(w: Any, kind: str, t0: int, first: int, end: int, say: Any = None) -> List[Tuple[int, int]]:
    """Push steps ``first..end`` of ``kind`` on the stream writer ``w`` in batches, with
    their events; returns ``(seq, step)`` of every event sent."""
    from wshard_client import Step

    sent = []
    step = first
    while step < end:
        stop = min(step + BATCH_STEPS, end)
        w.push_batch([Step(t_ns(kind, t0, s), 0.0, False, payloads(kind, s)) for s in range(step, stop)])
        for s in range(step, stop):
            if has_event(kind, s):
                ev_kind, data = event_data(kind, s)
                seq = w.send_event(t_ns(kind, t0, s), EVENT_LABEL[kind], data, kind=ev_kind)
                sent.append((seq, s))
                if say is not None:
                    say(f"event {seq} {s}")
        step = stop
    return sent


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: List[str]) -> int:
    usage = "usage: multirate_workload.py SOCKET EPISODE KIND STEPS T0_NS [--shm] [--pause-at K]"
    if len(argv) < 5 or argv[2] not in KINDS:
        print(usage, file=sys.stderr)
        return 2
    socket_path, episode, kind = argv[0], argv[1], argv[2]
    steps, t0 = int(argv[3]), int(argv[4])
    rest = argv[5:]
    shm = "--shm" in rest
    pause_at = int(rest[rest.index("--pause-at") + 1]) if "--pause-at" in rest else None

    from wshard_client import Recorder

    name = f"e2e-python-{'shm' if shm else 'socket'}-producer"
    with Recorder.connect(socket_path, name, protocol_version=2) as rec:
        w = join(rec, episode, kind, shm)
        _say("joined")
        if pause_at is not None:
            record(w, kind, t0, 0, pause_at, _say)
            _say(f"paused {w.flush()}")
            sys.stdin.readline()
            record(w, kind, t0, pause_at, steps, _say)
        else:
            record(w, kind, t0, 0, steps, _say)
        summary = w.close()
        _say(f"closed {summary.timesteps} {summary.durable_up_to}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = [
    "CHANNELS",
    "EVENT_LABEL",
    "HZ",
    "KINDS",
    "T0_NS",
    "TIMEBASE",
    "channels",
    "event_data",
    "event_steps",
    "join",
    "payloads",
    "record",
    "t_ns",
    "value",
]
