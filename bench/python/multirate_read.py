#!/usr/bin/env python3
"""The Python read cases of ``wshard-bench multirate`` (run by it; prints one line per case).

- ``py-aligned``: ``wshard_reader.open_episode(dir).aligned(clock=CLOCK)``: the aligned
  view at the camera clock, every channel (policy hold), as numpy arrays.
- ``py-reference``: the reference WShard Python package (``--reference``: its ``py/``
  folder) loading the same chunk files: for every stream, ``ChunkedEpisodeReader`` over its
  manifest, every chunk loaded (SHA-256 checked, as the reference does), each channel's
  chunks concatenated with numpy: the raw streams, not aligned.

Output: ``case seconds,seconds,... bytes`` per case, alternating the cases per repetition.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time


def py_aligned(episode: str, clock: str) -> int:
    import wshard_reader

    ep = wshard_reader.open_episode(episode)
    table = ep.aligned(clock=clock)
    return sum(int(v.nbytes) for v in table.values() if hasattr(v, "nbytes"))


def py_reference(episode: str) -> int:
    import numpy as np
    from wshard.chunked import ChunkedEpisodeReader

    total = 0
    for manifest in sorted(glob.glob(os.path.join(episode, "streams", "*", "*_manifest.wshard"))):
        reader = ChunkedEpisodeReader(manifest)
        parts = {}
        for chunk in reader.iter_chunks():
            for name, ch in chunk.observations.items():
                parts.setdefault(("obs", name), []).append(ch.data)
            for name, ch in chunk.actions.items():
                parts.setdefault(("act", name), []).append(ch.data)
        for arrays in parts.values():
            total += int(np.concatenate(arrays).nbytes)
    return total


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episode", required=True)
    ap.add_argument("--reference", required=True, help="the reference package's py/ folder")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", default="cameras")
    args = ap.parse_args()
    sys.path.insert(0, args.reference)
    cases = {"py-aligned": lambda: py_aligned(args.episode, args.clock), "py-reference": lambda: py_reference(args.episode)}
    times = {k: [] for k in cases}
    nbytes = {}
    for k, f in cases.items():  # one untimed pass each: the same page cache for both
        nbytes[k] = f()
    for rep in range(args.reps):
        order = list(cases) if rep % 2 == 0 else list(reversed(cases))
        for k in order:
            t = time.perf_counter()
            nbytes[k] = cases[k]()
            times[k].append(time.perf_counter() - t)
    for k in cases:
        print(f"{k} {','.join(f'{s:.6f}' for s in times[k])} {nbytes[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
