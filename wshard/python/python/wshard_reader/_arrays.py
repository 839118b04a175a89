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
from typing import Any, Dict, List, Optional, Tuple

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


def _chunk_arrays(
    layout: Dict[str, Any], chunk: Dict[str, Any], start: int
) -> Tuple[List[np.ndarray], np.ndarray]:
    """One chunk's channel arrays (same order as ``layout["channels"]``) and timestamps;
    ``start`` is the chunk's first step in the stream."""
    f = _ChunkFile(chunk)
    steps = int(chunk["steps"])
    arrays = []
    for spec, block in zip(layout["channels"], chunk["channels"]):
        shape = tuple(int(d) for d in spec["shape"])
        arrays.append(_block_array(block, f, numpy_dtype(spec["dtype"]), shape, steps))
    if chunk["timestamps"] is not None:
        ts = _block_array(chunk["timestamps"], f, TIMESTAMP_DTYPE, (), steps)
    else:
        # A ticks stream without time/timestamps_ns: step k at k * dt_ns.
        ts = np.arange(start, start + steps, dtype=np.int64) * np.int64(layout["dt_ns"])
    return arrays, ts


def assemble_chunks(
    layout: Dict[str, Any],
) -> List[Tuple[Dict[str, np.ndarray], np.ndarray]]:
    """Per chunk: channel arrays ``[T_chunk, *shape]`` and timestamps, each in place when
    stored raw and aligned."""
    out = []
    start = 0
    names = [s["name"] for s in layout["channels"]]
    for chunk in layout["chunks"]:
        arrays, ts = _chunk_arrays(layout, chunk, start)
        out.append((dict(zip(names, arrays)), ts))
        start += int(chunk["steps"])
    return out


def assemble(
    layout: Dict[str, Any],
) -> Tuple[Dict[str, np.ndarray], np.ndarray]:
    """Per-channel arrays ``[T, *shape]`` and the ``[T]`` int64 timestamps of one stream
    (several chunks joined with one copy)."""
    chunks = assemble_chunks(layout)
    channels = {}
    for spec in layout["channels"]:
        shape = tuple(int(d) for d in spec["shape"])
        parts = [c[0][spec["name"]] for c in chunks]
        channels[spec["name"]] = _join(parts, numpy_dtype(spec["dtype"]), shape)
    return channels, _join([c[1] for c in chunks], TIMESTAMP_DTYPE, ())
