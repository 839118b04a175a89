#!/usr/bin/env python3
"""A teleop loop at a fixed rate, recorded by wshardd.

Run a daemon, then::

    python ingest-adapters/python/examples/teleop_loop.py --socket wshardd.sock

Records 100 Hz for 5 s (by default): joint_pos f32[7] and action f32[7] (sinusoids), plus a
camera u8[48,64,3] with numpy (u8[12,16,3] without), printing durable progress once a
second. Ctrl-C closes the episode as ``aborted`` (data kept); a normal end closes it as
``completed`` after a flush. Copy the loop into your own code: only ``read_robot`` and
``read_camera`` are fake.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, List, Tuple

try:
    from wshard_client import Channel, Recorder, WshardError
except ImportError:  # running from a checkout without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from wshard_client import Channel, Recorder, WshardError

try:
    import numpy as np
except ImportError:
    np = None  # type: ignore[assignment]

CAMERA_SHAPE = (48, 64, 3) if np is not None else (12, 16, 3)


def read_robot(t: float) -> Tuple[List[float], List[float]]:
    """Fake joint positions and commanded action at time ``t`` (seconds)."""
    joints = [math.sin(t * (1.0 + 0.1 * j)) for j in range(7)]
    action = [0.5 * math.cos(t * (1.0 + 0.1 * j)) for j in range(7)]
    return joints, action


def read_camera(tick: int) -> Any:
    """A fake camera frame: a moving gradient (numpy array, or bytes without numpy)."""
    h, w, c = CAMERA_SHAPE
    if np is not None:
        frame = np.empty(CAMERA_SHAPE, np.uint8)
        frame[...] = ((np.arange(w, dtype=np.uint16)[None, :, None] + tick) % 256).astype(np.uint8)
        return frame
    row = bytes(((x + tick) % 256) for x in range(w) for _ in range(c))
    return row * h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", default="wshardd.sock", help="wshardd socket path (default: %(default)s)")
    ap.add_argument("--episode", default=f"teleop-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}", help="episode id")
    ap.add_argument("--hz", type=float, default=100.0, help="loop rate (default: %(default)s)")
    ap.add_argument("--seconds", type=float, default=5.0, help="how long to record (default: %(default)s)")
    ap.add_argument("--durability", default="ack", choices=["ack", "chunk", "server_default"])
    args = ap.parse_args()

    channels = [
        Channel("joint_pos", "f32", (7,), modality="proprioception"),
        Channel("action", "f32", (7,), lane="action"),
        Channel("camera/rgb", "u8", CAMERA_SHAPE, codec="lz4", modality="rgb"),
    ]
    period = 1.0 / args.hz
    steps = int(round(args.seconds * args.hz))
    try:
        with Recorder.connect(args.socket, "teleop-loop-example/0.1") as rec:
            print(
                f"connected to {rec.server_info.server_name}; recording {args.episode!r}: "
                f"{steps} steps at {args.hz:g} Hz, camera {CAMERA_SHAPE}, numpy={'yes' if np is not None else 'no'}"
            )
            metadata = {"operator": os.environ.get("USER", "unknown"), "example": "teleop_loop.py"}
            with rec.episode(
                args.episode, channels, "Example-teleop-v0", args.hz, durability=args.durability, metadata=metadata
            ) as ep:
                start = time.monotonic()
                next_report = start + 1.0
                for tick in range(steps):
                    deadline = start + tick * period
                    delay = deadline - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    joints, action = read_robot(tick * period)
                    ep.push(time.time_ns(), 0.0, tick == steps - 1, [joints, action, read_camera(tick)])
                    now = time.monotonic()
                    if now >= next_report:
                        print(f"  t={now - start:5.1f}s pushed={ep.next_seq:6d} durable={ep.durable_seq:6d}")
                        next_report += 1.0
                durable = ep.flush()  # every step fsynced (ack durability: journaled)
                print(f"  flushed: durable up to seq {durable}")
            summary = ep.close()  # already closed by the with block; returns its summary
            print(
                f"closed {args.episode!r}: {summary.timesteps} timesteps, "
                f"{summary.durable_up_to} durable, outcome {summary.outcome.name.lower()}"
            )
    except KeyboardInterrupt:
        print("interrupted: the episode was closed as aborted (data kept)")
        return 130
    except WshardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
