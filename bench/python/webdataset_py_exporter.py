#!/usr/bin/env python3
"""A straightforward Python WebDataset exporter: the baseline of ``webdataset_export.py``.

The same output as ``wshard export webdataset`` with its defaults (docs/EXPORT.md,
"WebDataset"), written the way a Python user would: the project's reader ``wshard_reader``
(its aligned view for the low-dimensional channels), numpy for windows and statistics,
Pillow (libjpeg-turbo) for JPEG quality 95 and 16-bit PNG, ``webdataset.ShardWriter`` for
the shards. One process, one thread. Only the defaults the benchmark uses are supported:
the first colour channel anchors, every other picture channel of its stream rides along,
the low-dimensional clock is the fastest low-dimensional stream, hold.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import webdataset as wds
from PIL import Image

import wshard_reader

PAST, FUTURE, STRIDE = 1, 19, 3
MAX_LEFT, MAX_RIGHT = 3, 15
OFFSETS = (-1, 0)
PER_SHARD = 100
PERCENTILES = (1, 2, 5, 95, 98, 99)


def picture_kind(arr: np.ndarray) -> str:
    """colour / mono / depth / lowdim, as export/src/channel_kind.rs decides (u16 depth only)."""
    shape = arr.shape[1:]
    if len(shape) in (2, 3) and shape[0] >= 8 and shape[1] >= 8:
        c = shape[2] if len(shape) == 3 else 1
        if arr.dtype == np.uint8 and c == 3:
            return "color"
        if arr.dtype == np.uint8 and c == 1:
            return "mono"
        if arr.dtype == np.uint16 and c == 1:
            return "depth"
    return "lowdim"


def encode(kind: str, frame: np.ndarray) -> tuple:
    buf = io.BytesIO()
    if kind == "depth":
        Image.fromarray(frame.reshape(frame.shape[0], frame.shape[1]).astype(np.uint16)).save(
            buf, format="PNG", compress_level=1
        )
        return "depth.png", buf.getvalue()
    Image.fromarray(frame.reshape(frame.shape[0], frame.shape[1], -1).squeeze()).save(buf, format="JPEG", quality=95)
    return "jpg", buf.getvalue()


def export_episode(path: Path, sink: Any, windows: Dict[str, List[np.ndarray]]) -> int:
    ep = wshard_reader.open_episode(path)
    streams = {name: ep.stream(name) for name in ep.streams}
    lowdim, pictures, rates = [], [], {}
    for name, s in streams.items():
        ts = np.asarray(s.timestamps_ns)
        for ch in s.keys():
            kind = picture_kind(np.asarray(s[ch][:1]))
            if kind == "lowdim":
                lowdim.append(f"{name}/{ch}")
                rates[name] = (len(ts) - 1) / max(int(ts[-1] - ts[0]), 1)
            else:
                pictures.append((name, ch, kind))
    anchor = next(p for p in pictures if p[2] == "color")
    clock = max(rates, key=lambda k: rates[k])
    view = ep.aligned(clock, channels=lowdim, drop_invalid=True)
    t_ns = np.asarray(view["t_ns"])
    cam = streams[anchor[0]]
    cam_t = np.asarray(cam.timestamps_ns)
    frames = {ch: np.asarray(cam[ch]) for (s, ch, _) in pictures if s == anchor[0]}
    instructions = [e.data for e in ep.events() if e.label == "instruction" and isinstance(e.data, str)]
    values = {k: np.asarray(view[k]).reshape(len(t_ns), -1) for k in lowdim}
    past_mask = np.array([j < PAST for j in range(PAST + 1 + FUTURE)])
    future_mask = np.array([j > PAST for j in range(PAST + 1 + FUTURE)])
    n = 0
    for f, t in enumerate(cam_t):
        row = int(np.searchsorted(t_ns, t, side="right")) - 1
        if row < 0:
            continue
        offs = row + np.arange(-PAST, FUTURE + 1) * STRIDE
        left, right = int((offs < 0).sum()), int((offs >= len(t_ns)).sum())
        if left > MAX_LEFT or right > MAX_RIGHT:
            continue
        rows = np.clip(offs, 0, len(t_ns) - 1)
        arrays = {k: v[rows] for k, v in values.items()}
        npz = io.BytesIO()
        np.savez(npz, **arrays, past_mask=past_mask, future_mask=future_mask)
        key = f"{path.name}-{f:06d}"
        sample = {
            "__key__": key,
            "lowdim.npz": npz.getvalue(),
            "metadata.json": json.dumps(
                {"episode_id": path.name, "anchor_frame": f, "anchor_t_ns": int(t), "lowdim_rows": rows.tolist(),
                 "padding_left": left, "padding_right": right}
            ).encode(),
            "language_instructions.json": json.dumps({"original": instructions}).encode(),
        }
        for s, ch, kind in pictures:
            if s != anchor[0]:
                continue
            for o in OFFSETS:
                g = min(max(f + o, 0), len(cam_t) - 1)
                ext, data = encode(kind, frames[ch][g])
                sample[f"{s}__{ch}_t{o}.{ext}"] = data
        sink.write(sample)
        for k, a in arrays.items():
            windows.setdefault(k, []).append(a.astype(np.float64))
        n += 1
    return n


def stats_of(windows: Dict[str, List[np.ndarray]]) -> Dict[str, Any]:
    out = {}
    for k, ws in sorted(windows.items()):
        a = np.stack(ws)
        flat = a.reshape(-1, a.shape[2])
        s = {"count": a.shape[0], "mean": flat.mean(0).tolist(), "std": flat.std(0).tolist(),
             "min": flat.min(0).tolist(), "max": flat.max(0).tolist(),
             "mean_per_timestep": a.mean(0).tolist(), "std_per_timestep": a.std(0).tolist(),
             "min_per_timestep": a.min(0).tolist(), "max_per_timestep": a.max(0).tolist()}
        for q in PERCENTILES:
            s[f"percentile_{q}"] = np.percentile(flat, q, axis=0).tolist()
            s[f"percentile_{q}_per_timestep"] = np.percentile(a, q, axis=0).tolist()
        out[k] = s
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("episodes", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=False)
    windows: Dict[str, List[np.ndarray]] = {}
    total = 0
    with wds.ShardWriter(str(out / "shard_%06d.tar"), maxcount=PER_SHARD, verbose=0) as sink:
        for e in sorted(args.episodes):
            total += export_episode(Path(e), sink, windows)
    shards = sorted(out.glob("shard_*.tar"))
    with open(out / "manifest.jsonl", "w") as m:
        for i, s in enumerate(shards):
            m.write(json.dumps({"num_sequences": min(PER_SHARD, total - i * PER_SHARD), "shard": s.stem}) + "\n")
    (out / "stats.json").write_text(json.dumps(stats_of(windows)))
    (out / "processing_metadata.json").write_text(json.dumps({"samples": total, "shards": len(shards)}))
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
