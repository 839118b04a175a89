"""Small multi-rate episodes for the export tests, recorded through the real wshardd.

Each episode has two streams and events:

- ``joints``: 100 Hz ``ticks``; ``q`` signal f32[7], ``gripper`` signal f32[1],
  ``action`` action-lane f32[7]; ``JOINT_STEPS`` steps.
- ``camera``: ``timestamps_ns`` at about 10 Hz with jitter, starting 5 ms after the joints;
  ``rgb`` u8[48, 64, 3] (modality rgb) and ``depth`` u16[48, 64] (millimetres);
  ``CAMERA_STEPS`` frames.
- events: an ``instruction`` text at t0 (``INSTRUCTION[episode]``) and a JSON ``phase``
  event in the middle.

Every value is a pure function of (episode index, stream, channel, step), so a test can
compute what it expects without reading the files back.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, List, Tuple

EPISODES = ("demo-0", "demo-1")
INSTRUCTION = {"demo-0": "pick up the red cube", "demo-1": "open the drawer"}
ENV_ID = "tabletop"
T0_NS = 1_700_000_000_000_000_000
JOINT_HZ = 100.0
JOINT_STEPS = 300
CAMERA_STEPS = 30
CAMERA_PERIOD_NS = 100_000_000
CAMERA_OFFSET_NS = 5_000_000
CAMERA_JITTER_NS = 700_000
HEIGHT, WIDTH = 48, 64


def joint_t_ns(step: int) -> int:
    return T0_NS + step * 10_000_000


def camera_t_ns(step: int) -> int:
    return T0_NS + CAMERA_OFFSET_NS + step * CAMERA_PERIOD_NS + (step % 3) * CAMERA_JITTER_NS


def q(ep: int, step: int) -> List[float]:
    return [ep * 10.0 + step * 0.01 + j * 0.5 for j in range(7)]


def gripper(ep: int, step: int) -> List[float]:
    return [1.0 if (step // 50) % 2 else 0.0]


def action(ep: int, step: int) -> List[float]:
    # Still (all equal) for the first 20 steps of each episode: a still-sample filter has
    # something to drop.
    s = max(step, 20)
    return [ep - s * 0.02 + j * 0.25 for j in range(7)]


def rgb(ep: int, step: int) -> bytes:
    """u8[48, 64, 3]: a gradient that moves with the step, per episode."""
    out = bytearray(HEIGHT * WIDTH * 3)
    for y in range(HEIGHT):
        for x in range(WIDTH):
            o = (y * WIDTH + x) * 3
            out[o] = (x * 4 + step * 3) % 256
            out[o + 1] = (y * 5 + ep * 40) % 256
            out[o + 2] = (x + y + step) % 256
    return bytes(out)


def depth(ep: int, step: int) -> bytes:
    """u16[48, 64] millimetres: 500 mm plus a ramp."""
    return struct.pack(
        f"<{HEIGHT * WIDTH}H", *[500 + ep * 100 + x * 10 + y + step for y in range(HEIGHT) for x in range(WIDTH)]
    )


def _f32s(values: List[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def record(socket: Path, episode: str) -> None:
    """Record ``episode`` (one of ``EPISODES``) through the daemon at ``socket``."""
    from wshard_client import Channel, Recorder, Step

    ep = EPISODES.index(episode)
    with Recorder.connect(socket, "interop-owner", protocol_version=2) as owner:
        handle = owner.open_multistream_episode(episode, ENV_ID, {"operator": "interop-tests"})
        handle.send_event(T0_NS, "instruction", INSTRUCTION[episode])
        with Recorder.connect(socket, "interop-joints", protocol_version=2) as rec:
            w = rec.join_stream(
                episode,
                "joints",
                [
                    Channel("q", "f32", (7,)),
                    Channel("gripper", "f32", (1,)),
                    Channel("action", "f32", (7,), lane="action"),
                ],
                JOINT_HZ,
                timebase="ticks",
                durability="ack",
            )
            for start in range(0, JOINT_STEPS, 50):
                w.push_batch(
                    [
                        Step(
                            joint_t_ns(s),
                            0.0,
                            False,
                            [_f32s(q(ep, s)), _f32s(gripper(ep, s)), _f32s(action(ep, s))],
                        )
                        for s in range(start, min(start + 50, JOINT_STEPS))
                    ]
                )
            w.send_event(joint_t_ns(JOINT_STEPS // 2), "phase", {"phase": "grasp", "episode": ep}, kind="json")
            summary = w.close()
            assert summary.durable_up_to == JOINT_STEPS
        with Recorder.connect(socket, "interop-camera", protocol_version=2) as rec:
            w = rec.join_stream(
                episode,
                "camera",
                [
                    Channel("rgb", "u8", (HEIGHT, WIDTH, 3), modality="rgb"),
                    Channel("depth", "u16", (HEIGHT, WIDTH), modality="depth"),
                ],
                10.0,
                timebase="timestamps_ns",
                durability="ack",
            )
            w.push_batch([Step(camera_t_ns(s), 0.0, False, [rgb(ep, s), depth(ep, s)]) for s in range(CAMERA_STEPS)])
            summary = w.close()
            assert summary.durable_up_to == CAMERA_STEPS
        assert handle.close() == 0


def expected_streams(episode: str) -> Dict[str, Tuple[List[int], Dict[str, List[bytes]]]]:
    """``{stream: (timestamps, {channel: [step bytes]})}`` of what ``record`` sends."""
    ep = EPISODES.index(episode)
    return {
        "joints": (
            [joint_t_ns(s) for s in range(JOINT_STEPS)],
            {
                "q": [_f32s(q(ep, s)) for s in range(JOINT_STEPS)],
                "gripper": [_f32s(gripper(ep, s)) for s in range(JOINT_STEPS)],
                "action": [_f32s(action(ep, s)) for s in range(JOINT_STEPS)],
            },
        ),
        "camera": (
            [camera_t_ns(s) for s in range(CAMERA_STEPS)],
            {
                "rgb": [rgb(ep, s) for s in range(CAMERA_STEPS)],
                "depth": [depth(ep, s) for s in range(CAMERA_STEPS)],
            },
        ),
    }
