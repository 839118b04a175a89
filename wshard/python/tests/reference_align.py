"""A brute-force aligned view in plain Python + numpy, written from the documented rules
(docs/FORMAT-NOTES.md, "Reading multi-stream episodes"), to check wshard_reader against:

- clock: a stream's timestamps, or rows at ``start + round(k * 1e9 / hz)`` (half away from
  zero) while ``<= end``; start / end default to the first / last timestamp of any stream;
- at a timestamp several samples share, the last of them is the sample;
- hold: the last sample at or before t; nearest: the closer of that one and the first after
  t (the earlier at equal distance); linear: ``a + (b - a) * w`` in float64 with
  ``w = (t - ta) / (tb - ta)``, an exact sample as it is, written float32 for
  f32/f16/bf16 and float64 otherwise; needs a sample on each side;
- valid: a sample exists and its distance (linear: the larger of both) <= max staleness;
- a row without a sample has zero values and t_ns = int64 min, row -1;
- drop_invalid: rows where any column is invalid are removed.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np

NO_T = np.iinfo(np.int64).min


def round_half_away(x: float) -> int:
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def rate_clock(hz: float, start: int, end: int) -> List[int]:
    out = []
    k = 0
    while True:
        t = start + round_half_away(float(k) * 1e9 / hz)
        if t > end:
            return out
        out.append(t)
        k += 1


def _last_at_or_before(src: List[int], t: int) -> Optional[int]:
    best = None
    for i, s in enumerate(src):
        if s <= t:
            best = i
    return best


def _first_after(src: List[int], t: int) -> Optional[int]:
    for i, s in enumerate(src):
        if s > t:
            j = i
            while j + 1 < len(src) and src[j + 1] == s:
                j += 1  # the last sample at that timestamp
            return j
    return None


def linear_dtype(dtype: np.dtype, code: str) -> np.dtype:
    if code in ("f32", "f16", "bf16"):
        return np.dtype("<f4")
    return np.dtype("<f8")


def as_f64(values: np.ndarray, code: str) -> np.ndarray:
    if code == "bf16":
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def align_column(
    src_t: List[int],
    values: np.ndarray,
    code: str,
    clock: List[int],
    policy: str,
    max_staleness_ns: Optional[int],
) -> Dict[str, np.ndarray]:
    """One column: values, valid, t_ns, row (and next_t_ns, next_row for linear)."""
    n = len(clock)
    step_shape = values.shape[1:]
    out_dtype = linear_dtype(values.dtype, code) if policy == "linear" else values.dtype
    vals = np.zeros((n,) + step_shape, dtype=out_dtype)
    valid = np.zeros(n, dtype=bool)
    t_ns = np.full(n, NO_T, dtype=np.int64)
    row = np.full(n, -1, dtype=np.int64)
    next_t = np.full(n, NO_T, dtype=np.int64)
    next_row = np.full(n, -1, dtype=np.int64)
    for k, t in enumerate(clock):
        b = _last_at_or_before(src_t, t)
        a = _first_after(src_t, t)
        dist: Optional[int] = None
        if policy == "hold":
            pick = b
            if pick is not None:
                dist = t - src_t[pick]
                vals[k] = values[pick]
        elif policy == "nearest":
            if b is not None and a is not None:
                pick = b if (t - src_t[b]) <= (src_t[a] - t) else a
            else:
                pick = b if b is not None else a
            if pick is not None:
                dist = abs(t - src_t[pick])
                vals[k] = values[pick]
        else:
            pick = None
            if b is not None and src_t[b] == t:
                pick, nxt, dist = b, b, 0
                vals[k] = as_f64(values[b], code).astype(out_dtype)
            elif b is not None and a is not None:
                pick, nxt = b, a
                w = float(t - src_t[b]) / float(src_t[a] - src_t[b])
                x, y = as_f64(values[b], code), as_f64(values[a], code)
                vals[k] = (x + (y - x) * w).astype(out_dtype)
                dist = max(t - src_t[b], src_t[a] - t)
            if pick is not None:
                next_row[k] = nxt
                next_t[k] = src_t[nxt]
        if pick is not None:
            row[k] = pick
            t_ns[k] = src_t[pick]
            valid[k] = max_staleness_ns is None or dist <= max_staleness_ns
    col = {"values": vals, "valid": valid, "t_ns": t_ns, "row": row}
    if policy == "linear":
        col["next_t_ns"] = next_t
        col["next_row"] = next_row
    return col


def align(
    streams: Dict[str, Tuple[np.ndarray, Dict[str, Tuple[np.ndarray, str]]]],
    clock: List[int],
    policies: Dict[str, str],
    max_staleness_ns: Optional[int] = None,
    drop_invalid: bool = False,
) -> Dict[str, np.ndarray]:
    """``streams``: name -> (timestamps, {channel: (values, dtype code)}). ``policies``:
    "STREAM/CHANNEL" -> policy (default hold). Returns the flat dict Episode.aligned
    returns."""
    out: Dict[str, np.ndarray] = {"t_ns": np.asarray(clock, dtype=np.int64)}
    for s, (ts, chans) in streams.items():
        src = [int(x) for x in ts]
        for c, (values, code) in chans.items():
            name = f"{s}/{c}"
            col = align_column(src, values, code, clock, policies.get(name, "hold"), max_staleness_ns)
            out[name] = col.pop("values")
            for k, v in col.items():
                out[f"{name}.{k}"] = v
    if drop_invalid:
        keep = np.ones(len(clock), dtype=bool)
        for k, v in out.items():
            if k.endswith(".valid"):
                keep &= v
        out = {k: v[keep] for k, v in out.items()}
    return out
