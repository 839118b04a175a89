#!/usr/bin/env python3
"""``wshard export webdataset`` against a straightforward Python exporter
(``webdataset_py_exporter.py``: wshard_reader + numpy + Pillow + webdataset.ShardWriter) on
one multi-rate episode recorded by the real wshardd. Prints a table: samples/s, wall and CPU
seconds (the exporter process and its threads), CPU seconds per GB of episode files, and the
ratio to the Python exporter. See bench/README.md, "webdataset-export".

The episode (defaults; ``--smoke`` makes it tiny): 10 minutes; stream ``joints`` at 200 Hz
(ticks) with ``q`` f32[7], ``gripper`` f32[1] and ``action`` f32[7] (action lane); stream
``camera`` at 10 Hz (timestamps) with ``rgb`` u8[240, 320, 3] and ``depth`` u16[240, 320]
(millimetres); an ``instruction`` event. Frames are smooth moving gradients with mild noise
(so JPEG and PNG work as on camera pictures, not on white noise).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "ingest-adapters" / "python" / "tests"))  # daemon_harness
sys.path.insert(0, str(REPO / "ingest-adapters" / "python" / "src"))  # wshard_client

T0_NS = 1_700_000_000_000_000_000
BATCH = 200


def frames(height: int, width: int, step: int, noise: np.ndarray) -> Tuple[bytes, bytes]:
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1) + step * 3) % 256
    g = (y * 255 // max(height - 1, 1) + step) % 256
    b = ((x + y + step * 2) // 2) % 256
    rgb = np.stack([r, g, b], axis=-1).astype(np.int16) + noise[step % len(noise)]
    rgb = np.clip(rgb, 0, 255).astype(np.uint8)
    depth = (800 + 3 * x + 2 * y + (step % 100)).astype("<u2")
    return rgb.tobytes(), depth.tobytes()


def record(socket: Path, episode: str, seconds: float, joint_hz: float, cam_hz: float, height: int, width: int) -> None:
    from wshard_client import Channel, Recorder, Step

    rng = np.random.default_rng(7)
    noise = rng.integers(-6, 7, size=(8, height, width, 3), dtype=np.int16)
    joint_steps = int(seconds * joint_hz)
    cam_steps = int(seconds * cam_hz)
    f32 = lambda v: np.asarray(v, dtype="<f4").tobytes()  # noqa: E731
    with Recorder.connect(socket, "bench-owner", protocol_version=2) as owner:
        handle = owner.open_multistream_episode(episode, "bench", {"operator": "bench"})
        handle.send_event(T0_NS, "instruction", "pick up the red cube")
        with Recorder.connect(socket, "bench-joints", protocol_version=2) as rec:
            w = rec.join_stream(episode, "joints", [Channel("q", "f32", (7,)), Channel("gripper", "f32", (1,)),
                                                     Channel("action", "f32", (7,), lane="action")],
                                joint_hz, timebase="ticks", durability="ack")
            period = int(1e9 / joint_hz)
            for start in range(0, joint_steps, BATCH):
                steps = []
                for s in range(start, min(start + BATCH, joint_steps)):
                    t = s / joint_hz
                    q = [np.sin(t * 0.5 + j) for j in range(7)]
                    steps.append(Step(T0_NS + s * period, 0.0, False,
                                      [f32(q), f32([float((s // 400) % 2)]), f32([v + 0.01 for v in q])]))
                w.push_batch(steps)
            w.close()
        with Recorder.connect(socket, "bench-camera", protocol_version=2) as rec:
            w = rec.join_stream(episode, "camera", [Channel("rgb", "u8", (height, width, 3), modality="rgb"),
                                                     Channel("depth", "u16", (height, width), modality="depth")],
                                cam_hz, timebase="timestamps_ns", durability="ack")
            period = int(1e9 / cam_hz)
            for start in range(0, cam_steps, 20):
                steps = []
                for s in range(start, min(start + 20, cam_steps)):
                    rgb, depth = frames(height, width, s, noise)
                    steps.append(Step(T0_NS + 3_000_000 + s * period, 0.0, False, [rgb, depth]))
                w.push_batch(steps)
            w.close()
        assert handle.close() == 0


def timed(argv: List[str]) -> Tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def samples_of(out: Path) -> Dict[int, Dict[str, np.ndarray]]:
    import webdataset as wds

    got = {}
    for s in wds.WebDataset(sorted(str(p) for p in out.glob("shard_*.tar")), shardshuffle=False):
        meta = json.loads(s["metadata.json"])
        z = np.load(io.BytesIO(s["lowdim.npz"]))
        got[meta["anchor_frame"]] = {k: z[k] for k in z.files}
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--joint-hz", type=float, default=200.0)
    ap.add_argument("--camera-hz", type=float, default=10.0)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--smoke", action="store_true", help="3 s of data, 48x64 frames: checks the benchmark runs")
    ap.add_argument("--wshard", default=str(REPO / "target" / "release" / "wshard"))
    ap.add_argument("--wshardd", default=str(REPO / "target" / "release" / "wshardd"))
    ap.add_argument("--scratch", default=None, help="directory for the episode and outputs (default: a temp dir)")
    args = ap.parse_args()
    if args.smoke:
        args.seconds, args.height, args.width = 3.0, 48, 64
    from daemon_harness import Daemon

    scratch = Path(tempfile.mkdtemp(prefix="wds-bench-", dir=args.scratch))
    try:
        (scratch / "daemon").mkdir()
        d = Daemon(Path(args.wshardd), Path(args.wshard), scratch / "daemon", {})
        try:
            record(d.socket, "bench-ep", args.seconds, args.joint_hz, args.camera_hz, args.height, args.width)
        finally:
            code = d.stop()
        assert code == 0, f"wshardd exited {code}"
        episode = Path(d.data_dir) / "bench-ep"
        in_bytes = sum(p.stat().st_size for p in episode.rglob("*") if p.is_file())
        cores = os.cpu_count() or 1
        cases = [
            (f"rust, --workers {cores}", [args.wshard, "export", "webdataset", str(episode), "-o", "OUT", "--quiet",
                                          "--workers", str(cores)]),
            ("rust, --workers 1", [args.wshard, "export", "webdataset", str(episode), "-o", "OUT", "--quiet",
                                   "--workers", "1"]),
            ("python (reader + numpy + Pillow + ShardWriter)",
             [sys.executable, str(HERE / "webdataset_py_exporter.py"), str(episode), "-o", "OUT"]),
        ]
        rows = []
        reference = None
        for name, argv in cases:
            out = scratch / f"out-{len(rows)}"
            wall, cpu = timed([str(out) if a == "OUT" else a for a in argv])
            got = samples_of(out)
            if reference is None:
                reference = got
            else:  # the same samples, the same arrays
                assert got.keys() == reference.keys(), name
                for f in sorted(got)[:5] + sorted(got)[-5:]:
                    for k, v in reference[f].items():
                        assert np.array_equal(got[f][k], v), (name, f, k)
            out_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            rows.append((name, len(got), wall, cpu, out_bytes))
            shutil.rmtree(out)
        py = rows[-1]
        print(f"episode: {args.seconds:g} s, joints {args.joint_hz:g} Hz, camera {args.camera_hz:g} Hz "
              f"rgb+depth {args.height}x{args.width}; {in_bytes / 1e6:.1f} MB of episode files; {cores} cores")
        print(f"| case | samples | wall s | samples/s | CPU s | CPU s per GB | output MB | vs python |")
        print("|---|---|---|---|---|---|---|---|")
        for name, n, wall, cpu, ob in rows:
            print(f"| {name} | {n} | {wall:.2f} | {n / wall:.1f} | {cpu:.2f} | {cpu / (in_bytes / 1e9):.1f} | "
                  f"{ob / 1e6:.1f} | {(n / wall) / (py[1] / py[2]):.2f}x |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
