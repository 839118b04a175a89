#!/usr/bin/env python3
"""Import of a D4RL-style HDF5 file: ``wshard import d4rl`` against h5py reading the same
file end to end (every dataset into a numpy array). Prints one table.

The file is made the way D4RL's generation scripts write theirs
(``scripts/generation/*.py``: ``npify(data)``, then for every key
``h5py.File.create_dataset(k, data=data[k], compression='gzip')``: h5py's automatic
chunking, gzip level 4), with the keys and dtypes of D4RL's MuJoCo datasets (hopper-like,
episodes of 1000 steps ended by ``timeouts``, an occasional terminal): ``observations`` and
``next_observations`` f32[17], ``actions`` f32[6], ``rewards`` f32, ``terminals`` and
``timeouts`` bool, ``infos/qpos`` and ``infos/qvel`` f32[9], ``infos/action_log_probs`` f32.
The values are a random walk (smooth like robot states; gzip finds about as little to
squeeze as in D4RL's files).

``wshard import d4rl`` (the default codec, zstd-3, and ``--codec lz4``) does more than
h5py's read: it also writes every episode (compressed chunks, SHA-256, fsync, rename) into a fresh data directory per repetition (kept until the
end: on ext4, creating files where many were just deleted costs a lot more). Both run warm (the file is in the page cache: it was just
written, and one untimed h5py read goes first). Cases alternate per repetition; the median
is reported. ``--smoke``: a tiny file (a few MB), one repetition: checks that the script
runs, not a measurement.

Usage: python3 bench/python/import_d4rl.py --wshard target/release/wshard [--size-gb 1]
       [--reps 3] [--workdir DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import h5py
import numpy as np

EPISODE = 1000
KEYS: Dict[str, Tuple[Tuple[int, ...], str]] = {
    "observations": ((17,), "f4"),
    "next_observations": ((17,), "f4"),
    "actions": ((6,), "f4"),
    "rewards": ((), "f4"),
    "terminals": ((), "bool"),
    "timeouts": ((), "bool"),
    "infos/qpos": ((9,), "f4"),
    "infos/qvel": ((9,), "f4"),
    "infos/action_log_probs": ((), "f4"),
}
SLAB = 200_000  # rows generated and written at once


def row_bytes() -> int:
    return sum(int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize for s, d in KEYS.values())


def make_file(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        sets = {k: f.create_dataset(k, shape=(rows, *s), dtype=d, chunks=True, compression="gzip")
                for k, (s, d) in KEYS.items()}
        state = {k: np.zeros(s, np.float32) for k, (s, _) in KEYS.items()}
        for start in range(0, rows, SLAB):
            n = min(SLAB, rows - start)
            idx = np.arange(start, start + n)
            for k, (s, d) in KEYS.items():
                if d == "bool":
                    if k == "timeouts":
                        v = (idx % EPISODE) == EPISODE - 1
                    else:
                        v = (idx % 7919) == 7918
                else:
                    step = rng.standard_normal((n, *s)).astype(np.float32) * np.float32(0.01)
                    v = state[k] + np.cumsum(step, axis=0, dtype=np.float32)
                    state[k] = v[-1]
                sets[k][start:start + n] = v
        f.create_dataset("metadata/algorithm", data="SAC")


def h5py_read(path: Path) -> int:
    total = 0
    with h5py.File(path, "r") as f:
        def visit(_name: str, obj: object) -> None:
            nonlocal total
            if isinstance(obj, h5py.Dataset):
                total += int(np.asarray(obj[()]).nbytes)
        f.visititems(visit)
    return total


def timed_h5py(path: Path) -> Tuple[float, float]:
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    h5py_read(path)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def timed_import(wshard: str, path: Path, out: Path, codec: str) -> Tuple[float, float]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([wshard, "import", "d4rl", str(path), "--data-dir", str(out), "--quiet",
                    "--codec", codec], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wshard", required=True, help="the wshard binary (a release build)")
    ap.add_argument("--size-gb", type=float, default=1.0, help="uncompressed payload of the file")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workdir", help="where the file and the output go (default: a temp dir)")
    ap.add_argument("--smoke", action="store_true", help="a tiny file, one repetition")
    args = ap.parse_args()
    size = 4e6 if args.smoke else args.size_gb * 1e9
    reps = 1 if args.smoke else args.reps
    rows = max(EPISODE, int(size // row_bytes()))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-import-d4rl-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "hopper-style.hdf5"
    t0 = time.perf_counter()
    make_file(src, rows)
    gb = rows * row_bytes() / 1e9
    print(f"file: {rows} rows, {gb:.3f} GB payload, {src.stat().st_size / 1e9:.3f} GB on disk "
          f"(gzip), made in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    h5py_read(src)  # untimed: the same page cache for both cases
    imports = {"wshard import d4rl": "zstd", "  --codec lz4": "lz4"}
    res: Dict[str, List[Tuple[float, float]]] = {"h5py read": [], **{k: [] for k in imports}}
    for i in range(reps):
        order = list(res)[:: 1 if i % 2 == 0 else -1]
        for case in order:
            if case == "h5py read":
                res[case].append(timed_h5py(src))
            else:
                # A fresh directory each time, the earlier ones kept until the end: ext4
                # pays for creating files where many were just deleted.
                out = work / f"data-{i}-{imports[case]}"
                res[case].append(timed_import(args.wshard, src, out, imports[case]))
    out_bytes = sum(p.stat().st_size for p in (work / "data-0-zstd").rglob("*") if p.is_file())
    base = statistics.median(w for w, _ in res["h5py read"])
    print(f"{'case':<22} {'wall s':>8} {'CPU s':>8} {'CPU s/GB':>9} {'GB/s':>7} {'vs h5py':>8}")
    for case, runs in res.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{case:<22} {wall:8.2f} {cpu:8.2f} {cpu / gb:9.2f} {gb / wall:7.2f} {base / wall:7.2f}x")
    print(f"(payload {gb:.3f} GB; import output {out_bytes / 1e9:.3f} GB; median of {reps}; "
          f"'vs h5py' = h5py's wall / the case's wall, target >= 1x)")
    if not args.workdir:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
