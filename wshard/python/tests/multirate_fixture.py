"""A small multi-rate episode: joints ~1 kHz (3 chunks), an IMU at 200 Hz that starts late
and ends early, a 30 Hz camera with two frames at one timestamp, events and annotations."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import Chan, Multi, Stream, event_line, make_multi

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def multirate(seed: int = 7) -> Multi:
    rng = np.random.default_rng(seed)
    n_j = 400  # 0.4 s at ~1 kHz with jitter
    j_t = T0 + np.arange(n_j, dtype=np.int64) * MS + rng.integers(-200_000, 200_000, n_j)
    j_t.sort()
    joints = Stream(
        channels={
            "q": Chan(rng.standard_normal((n_j, 7)).astype(np.float32)),
            "mode": Chan(rng.integers(-300, 300, (n_j, 2)).astype(np.int16)),
            "grip": Chan(rng.integers(0, 2, n_j).astype(bool)),
            "cmd": Chan(rng.standard_normal((n_j, 7)).astype(np.float32), lane="action", codec="zstd"),
        },
        t_ns=j_t,
        chunk_steps=150,
        producer="teleop-loop/0.3",
    )
    n_i = 60  # 200 Hz from +35 ms: starts late, ends at 0.33 s, before the others
    imu = Stream(
        channels={
            "acc": Chan(rng.standard_normal((n_i, 3))),
            "temp": Chan(rng.standard_normal(n_i).astype(np.float16)),
        },
        t_ns=T0 + 35 * MS + np.arange(n_i, dtype=np.int64) * 5 * MS,
        producer="imu-driver",
    )
    n_c = 12
    c_t = T0 + 10 * MS + np.arange(n_c, dtype=np.int64) * 33_333_333
    c_t[5] = c_t[4]  # two frames at one timestamp: the later one is the sample
    camera = Stream(
        channels={"rgb": Chan(rng.integers(0, 256, (n_c, 4, 6, 3), dtype=np.uint8))},
        t_ns=c_t,
        producer="camera-driver",
    )
    events = [
        event_line(0, T0 + 5 * MS, "instruction", "text", "pick up the red cube", "teleop"),
        event_line(1, T0 + 120 * MS, "button", "json", {"id": 3, "pressed": True}, "joints"),
        event_line(2, T0 + 120 * MS, "blob", "binary", b"\x00\x01\xfe\xff", "camera"),
    ]
    annotations = [
        {
            "author": "uid 1000",
            "created_unix_ns": 1_800_000_000_000_000_000,
            "data": "grasp ok",
            "kind": "text",
            "label": "success",
            "seq": 0,
            "t_ns": T0 + 120 * MS,
        }
    ]
    return Multi(
        streams={"joints": joints, "imu": imu, "camera": camera},
        events=events,
        annotations=annotations,
        torn_tail=b'{"data": "half a line',
    )


def make(root: Path, ep_id: str = "ep-multi", seed: int = 7):
    m = multirate(seed)
    return make_multi(root, ep_id, m), m
