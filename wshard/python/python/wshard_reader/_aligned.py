"""The aligned view's arrays, from what the Rust side computed (moved into numpy, no copy)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ._arrays import numpy_dtype
from .errors import BadArgumentError

NS_PER_MS = 1_000_000


def staleness_ns(ms: Optional[float], ns: Optional[int]) -> Optional[int]:
    """The staleness limit in ns from ``max_staleness_ms`` or ``max_staleness_ns``."""
    if ms is not None and ns is not None:
        raise BadArgumentError(
            "give max_staleness_ms or max_staleness_ns, not both", field="max_staleness_ms"
        )
    if ms is not None:
        if not ms >= 0:  # also NaN
            raise BadArgumentError(
                f"max_staleness_ms must be >= 0, is {ms!r}", field="max_staleness_ms"
            )
        return int(round(float(ms) * NS_PER_MS))
    if ns is not None:
        if int(ns) < 0:
            raise BadArgumentError(
                f"max_staleness_ns must be >= 0, is {ns!r}", field="max_staleness_ns"
            )
        return int(ns)
    return None


def aligned_arrays(table: Dict[str, Any]) -> Dict[str, np.ndarray]:
    """The flat dict of arrays :meth:`Episode.aligned` returns."""
    t_ns: np.ndarray = table["t_ns"]
    rows = len(t_ns)
    out: Dict[str, np.ndarray] = {"t_ns": t_ns}
    for c in table["columns"]:
        name = c["name"]
        if c["values"] is not None:
            shape = (rows,) + tuple(int(d) for d in c["shape"])
            v = c["values"].view(numpy_dtype(c["dtype"]))
            if not v.flags.aligned:
                v = v.copy()
            out[name] = v.reshape(shape)
        out[name + ".valid"] = c["valid"]
        out[name + ".t_ns"] = c["t_ns"]
        out[name + ".row"] = c["row"]
        if c["next_t_ns"] is not None:
            out[name + ".next_t_ns"] = c["next_t_ns"]
            out[name + ".next_row"] = c["next_row"]
    return out
