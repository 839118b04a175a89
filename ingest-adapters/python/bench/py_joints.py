#!/usr/bin/env python3
"""Throughput of the Python client for the joints workload: 3 x f32[7] (joints and
joint_vel on the signal lane, cmd on the action lane) + t_ns per timestep, pushed with
``push_batch`` of numpy columns against a running wshardd. Target: >= 100k timesteps/s.

    python ingest-adapters/python/bench/py_joints.py --socket wshardd.sock --steps 1000000
    python ingest-adapters/python/bench/py_joints.py --socket wshardd.sock --transport shm

``--transport`` picks how the timesteps travel: ``socket`` (TIMESTEP_BATCH frames),
``shm`` (the shared-memory ring; with numpy the records are written straight into its
slots) or ``both`` (the default: one episode each, socket first).

The clock runs from the first push_batch to the DURABLE covering the last step (flush),
so the figure is end-to-end: encode, socket, server validation, journal fsync. Data is
generated before the clock starts. Prints one human line and one JSON line.
Without numpy it falls back to push_batch of Step lists with bytes payloads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import struct
import sys
import time
from typing import Any, Dict, List

try:
    from wshard_client import Channel, Recorder, Step
except ImportError:  # running from a checkout without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from wshard_client import Channel, Recorder, Step

try:
    import numpy as np
except ImportError:
    np = None  # type: ignore[assignment]

CHANNELS = [
    Channel("joints", "f32", (7,)),
    Channel("joint_vel", "f32", (7,)),
    Channel("cmd", "f32", (7,), lane="action"),
]
HZ = 1000.0


def run(
    socket_path: str,
    episode: str,
    steps: int,
    batch: int,
    durability: str,
    transport: str = "socket",
    slots: int = 0,
    slot_bytes: int = 0,
) -> Dict[str, Any]:
    """Record one episode; return the measurements."""
    if np is not None:
        t = np.arange(steps, dtype=np.float64) / HZ
        phase = np.arange(7, dtype=np.float64) * 0.3
        joints = np.sin(t[:, None] + phase).astype(np.float32)
        joint_vel = np.cos(t[:, None] + phase).astype(np.float32)
        cmd = (joints + 0.01 * joint_vel).astype(np.float32)
        t_ns = np.arange(steps, dtype=np.int64) * int(1e9 / HZ)
    else:
        payload = [struct.pack("<7f", *[0.1 * j for j in range(7)])] * 3
        step_lists: List[List[Step]] = [
            [Step(i * 1_000_000, 0.0, False, payload) for i in range(a, min(a + batch, steps))]
            for a in range(0, steps, batch)
        ]
    with Recorder.connect(socket_path, "py-joints-bench/0.1", timeout=120.0) as rec:
        shm: Dict[str, Any] = {"slots": slots, "slot_bytes": slot_bytes} if transport == "shm" else {}
        ep = rec.episode(episode, CHANNELS, "Bench-joints-v0", HZ, durability=durability, transport=transport, **shm)
        with ep:
            ring = ep.shm
            start = time.perf_counter()
            if np is not None:
                for a in range(0, steps, batch):
                    b = min(a + batch, steps)
                    ep.push_batch(t_ns=t_ns[a:b], payloads=[joints[a:b], joint_vel[a:b], cmd[a:b]])
            else:
                for chunk in step_lists:
                    ep.push_batch(chunk)
            pushed = time.perf_counter()
            durable = ep.flush()
            done = time.perf_counter()
        summary = ep.close()
    assert durable == steps and summary.timesteps == steps, (durable, summary)
    total = done - start
    return {
        "bench": "py_joints",
        "transport": transport,
        "slots": ring.slots if ring else None,
        "slot_bytes": ring.slot_bytes if ring else None,
        "atomics": ring.atomics if ring else None,
        "steps": steps,
        "batch": batch,
        "durability": durability,
        "numpy": np is not None,
        "seconds": round(total, 4),
        "timesteps_per_s": round(steps / total, 1),
        "push_timesteps_per_s": round(steps / (pushed - start), 1),
        "step_bytes": 84,
        "mb_per_s": round(steps * (84 + 8) / total / 1e6, 2),
        "python": platform.python_version(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", default="wshardd.sock", help="wshardd socket path (default: %(default)s)")
    ap.add_argument("--episode", default=f"py-joints-{os.getpid()}-{int(time.time())}", help="episode id")
    ap.add_argument("--steps", type=int, default=1_000_000, help="timesteps (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=10_000, help="steps per push_batch call (default: %(default)s)")
    ap.add_argument("--durability", default="ack", choices=["ack", "chunk", "server_default"])
    ap.add_argument("--transport", default="both", choices=["socket", "shm", "both"], help="default: %(default)s")
    ap.add_argument("--slots", type=int, default=0, help="shm ring slots (default 0 = the client's, 64)")
    ap.add_argument("--slot-bytes", type=int, default=0, help="shm slot size (default 0 = the client's, ~256 KiB)")
    ap.add_argument("--min-rate", type=float, default=0.0, help="exit 1 when below this many timesteps/s")
    args = ap.parse_args()
    transports = ["socket", "shm"] if args.transport == "both" else [args.transport]
    worst = float("inf")
    for transport in transports:
        episode = f"{args.episode}-{transport}" if len(transports) > 1 else args.episode
        r = run(args.socket, episode, args.steps, args.batch, args.durability, transport, args.slots, args.slot_bytes)
        ring = f", ring {r['slots']} x {r['slot_bytes']} B, {r['atomics']}" if transport == "shm" else ""
        print(
            f"py_joints [{transport}]: {r['steps']} timesteps in {r['seconds']:.3f} s = "
            f"{r['timesteps_per_s']:,.0f} timesteps/s durable ({r['push_timesteps_per_s']:,.0f}/s pushed; "
            f"numpy={r['numpy']}, batch {r['batch']}, durability {r['durability']}{ring})"
        )
        print(json.dumps(r, sort_keys=True))
        worst = min(worst, r["timesteps_per_s"])
    return 1 if worst < args.min_rate else 0


if __name__ == "__main__":
    sys.exit(main())
