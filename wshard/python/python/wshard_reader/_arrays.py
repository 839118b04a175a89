"""numpy arrays from the layout the Rust side validated.

A block stored raw is viewed in place: ``numpy.frombuffer`` over a read-only ``mmap`` of the
chunk file, so the array's ``base`` is the map and keeps it alive (no copy). A block stored
compressed arrives decoded as a uint8 array, which is viewed with the channel's dtype (no
further copy). A stream of several chunks is joined with one ``numpy.concatenate``; a raw
block whose offset is not a multiple of its element size is copied once so that the array is
aligned.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .errors import WshardIOError

# WShard dtype code -> numpy dtype (little-endian). bf16 has no numpy type: its raw bit
# patterns come as uint16 (see bf16_to_float32).
DTYPES: Dict[str, np.dtype] = {
    "f64": np.dtype("<f8"),
    "f32": np.dtype("<f4"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "i64": np.dtype("<i8"),
    "i32": np.dtype("<i4"),
    "i16": np.dtype("<i2"),
    "i8": np.dtype("i1"),
    "u64": np.dtype("<u8"),
    "u32": np.dtype("<u4"),
    "u16": np.dtype("<u2"),
    "u8": np.dtype("u1"),
    "bool": np.dtype("?"),
}
TIMESTAMP_DTYPE = np.dtype("<i8")
IN_PLACE = "inplace"


def numpy_dtype(code: str) -> np.dtype:
    """The numpy dtype of a WShard dtype code."""
    return DTYPES[code]


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bf16 bit patterns (uint16, as the reader returns bf16 channels) to float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class _ChunkFile:
    """Maps a chunk file once, on first use, after checking it is the file Rust validated."""

    def __init__(self, chunk: Dict[str, Any]) -> None:
        self._chunk = chunk
        self._map: Optional[mmap.mmap] = None

    def map(self) -> mmap.mmap:
        if self._map is None:
            c = self._chunk
            fd = os.open(c["path"], os.O_RDONLY)
            try:
                st = os.fstat(fd)
                seen = (st.st_dev, st.st_ino, st.st_size)
                want = (c["dev"], c["ino"], c["size"])
                if c["ino"] == 0:  # no inode numbers on this platform: compare sizes
                    seen, want = seen[2:], want[2:]
                if seen != want:
                    raise WshardIOError(
                        f"{c['path']}: the file changed after it was validated "
                        f"(device, inode, size {want} then {seen}); open the episode again",
                        path=c["path"],
                    )
                self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        return self._map


def _block_array(
    block: Any, f: _ChunkFile, dtype: np.dtype, shape: Tuple[int, ...], steps: int
) -> np.ndarray:
    count = steps
    for d in shape:
        count *= d
    if count == 0:
        return np.empty((steps,) + shape, dtype=dtype)
    if isinstance(block, tuple):
        tag, offset, length = block
        assert tag == IN_PLACE and length == count * dtype.itemsize
        arr = np.frombuffer(f.map(), dtype=dtype, count=count, offset=offset)
        if offset % dtype.alignment != 0:
            arr = arr.copy()
    else:
        arr = block.view(dtype)
        if not arr.flags.aligned:
            arr = arr.copy()
    return arr.reshape((steps,) + shape)


def _join(parts: List[np.ndarray], dtype: np.dtype, shape: Tuple[int, ...]) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.empty((0,) + shape, dtype=dtype)
    return np.concatenate(parts)


def assemble(
    layout: Dict[str, Any],
) -> Tuple[Dict[str, np.ndarray], np.ndarray]:
    """Per-channel arrays ``[T, *shape]`` and the ``[T]`` int64 timestamps of one stream."""
    specs: Sequence[Dict[str, Any]] = layout["channels"]
    kinds = [(numpy_dtype(s["dtype"]), tuple(int(d) for d in s["shape"])) for s in specs]
    parts: List[List[np.ndarray]] = [[] for _ in specs]
    ts_parts: List[np.ndarray] = []
    start = 0
    for chunk in layout["chunks"]:
        f = _ChunkFile(chunk)
        steps = int(chunk["steps"])
        for i, block in enumerate(chunk["channels"]):
            dtype, shape = kinds[i]
            parts[i].append(_block_array(block, f, dtype, shape, steps))
        if chunk["timestamps"] is not None:
            ts_parts.append(_block_array(chunk["timestamps"], f, TIMESTAMP_DTYPE, (), steps))
        else:
            # A ticks stream without time/timestamps_ns: step k at k * dt_ns.
            ts_parts.append(
                np.arange(start, start + steps, dtype=np.int64) * np.int64(layout["dt_ns"])
            )
        start += steps
    channels = {
        s["name"]: _join(p, k[0], k[1]) for s, p, k in zip(specs, parts, kinds)
    }
    return channels, _join(ts_parts, TIMESTAMP_DTYPE, ())
