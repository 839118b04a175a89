"""Building ``TIMESTEP_BATCH`` frames: one pending batch filled step by step (``push``),
and whole frames built from columns of N steps (``push_batch``; vectorized with numpy).

Frame layout: ``body_len u32 | 0x04 | count u32 | records``; each record is
``seq u64 | t_ns i64 | reward f32 | done u8 | payloads in schema order``.
"""

from __future__ import annotations

import struct
import time
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from ._payload import np
from ._wire import BATCH_HEADER, BATCH_HEADER_BYTES, LEN_BYTES, RECORD, RECORD_HEADER_BYTES, FrameType
from .errors import SchemaError

__all__ = ["PendingBatch", "checked_header", "column_frames", "steps_per_frame"]

_U32_MAX = 0xFFFFFFFF
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def checked_header(seq: int, t_ns: int, reward: float, done: bool) -> bytes:
    """The 21-byte record header.

    Raises:
        SchemaError: ``t_ns`` outside i64, ``reward`` not a float that fits f32.
    """
    try:
        return RECORD.pack(seq, t_ns, reward, 1 if done else 0)
    except (struct.error, OverflowError, TypeError) as e:
        raise SchemaError(f"seq {seq}: t_ns {t_ns!r} / reward {reward!r} do not fit i64 / f32: {e}", None) from None


class PendingBatch:
    """The batch being filled by ``push``: a ``bytearray`` holding the reserved 9-byte
    header and the records appended so far (header from :func:`checked_header`)."""

    __slots__ = ("buf", "count", "since")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.count = 0
        #: ``time.monotonic()`` of the oldest step in the batch, ``None`` when empty.
        self.since: Optional[float] = None

    def __len__(self) -> int:
        return len(self.buf)

    def append(self, header: bytes, payloads: Sequence[Any]) -> None:
        """Append one record: its 21-byte header, then the payloads in schema order."""
        if self.count == 0:
            self.buf = bytearray(BATCH_HEADER_BYTES)
            self.since = time.monotonic()
        buf = self.buf
        mark = len(buf)
        try:
            buf += header
            for p in payloads:
                buf += p
        except BaseException:  # e.g. KeyboardInterrupt: never leave half a record
            del buf[mark:]
            raise
        self.count += 1

    def take(self) -> bytearray:
        """Patch the header and hand the frame over; the batch is empty afterwards."""
        buf = self.buf
        BATCH_HEADER.pack_into(buf, 0, len(buf) - LEN_BYTES, FrameType.TIMESTEP_BATCH, self.count)
        self.buf = bytearray()
        self.count = 0
        self.since = None
        return buf


def steps_per_frame(record_bytes: int, frame_bytes: int) -> int:
    """How many records of ``record_bytes`` fit a frame of ``frame_bytes`` bytes (header
    included); at least 1."""
    return max(1, min((frame_bytes - BATCH_HEADER_BYTES) // record_bytes, _U32_MAX))


def _column(value: Any, n: int, dtype: str, what: str) -> Any:
    """A numpy column of ``n`` values (a scalar is broadcast)."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = np.broadcast_to(arr, (n,))
    if arr.shape != (n,):
        raise SchemaError(f"push_batch: {what} has shape {arr.shape}, expected ({n},)", None)
    if what == "t_ns" and arr.dtype.kind not in "iu":
        raise SchemaError(f"push_batch: t_ns must be integers, got dtype {arr.dtype}", None)
    if what == "done":
        return arr.astype(bool).view(np.uint8)
    if what == "t_ns" and arr.dtype.kind == "u" and n and arr.max() > _I64_MAX:
        raise SchemaError("push_batch: t_ns does not fit i64", None)
    return arr.astype(dtype, copy=False)


def column_frames(
    first_seq: int,
    t_ns: Any,
    reward: Any,
    done: Any,
    columns: Sequence[Any],
    step_bytes: int,
    frame_bytes: int,
) -> Iterator[Tuple[int, Any]]:
    """Frames for ``n = len(t_ns)`` steps from column data, as ``(steps, frame)`` pairs.

    ``columns`` are the channels' columns as :func:`column_payload` returns them (numpy
    ``(n, nbytes)`` uint8 arrays with numpy, buffers of ``n x nbytes`` bytes without).
    Every frame holds at most ``frame_bytes`` bytes (but at least one step).
    """
    n = len(t_ns)
    rec = RECORD_HEADER_BYTES + step_bytes
    per = steps_per_frame(rec, frame_bytes)
    if np is not None:
        yield from _numpy_frames(first_seq, n, t_ns, reward, done, columns, step_bytes, per)
    else:
        yield from _python_frames(first_seq, n, t_ns, reward, done, columns, step_bytes, per)


def _numpy_frames(
    first_seq: int, n: int, t_ns: Any, reward: Any, done: Any, columns: Sequence[Any], step_bytes: int, per: int
) -> Iterator[Tuple[int, Any]]:
    rec = RECORD_HEADER_BYTES + step_bytes
    t_col = _column(t_ns, n, "<i8", "t_ns")
    r_col = _column(reward, n, "<f4", "reward")
    d_col = _column(done, n, "u1", "done")
    header_dt = np.dtype(
        {
            "names": ["seq", "t", "r", "d"],
            "formats": ["<u8", "<i8", "<f4", "u1"],
            "offsets": [0, 8, 16, 20],
            "itemsize": rec,
        }
    )
    widths = [c.shape[1] for c in columns]
    for a in range(0, n, per):
        b = min(a + per, n)
        m = b - a
        frame = np.empty(BATCH_HEADER_BYTES + m * rec, np.uint8)
        BATCH_HEADER.pack_into(frame.data, 0, len(frame) - LEN_BYTES, FrameType.TIMESTEP_BATCH, m)
        body = frame[BATCH_HEADER_BYTES:]
        recs = body.view(header_dt)
        recs["seq"] = np.arange(first_seq + a, first_seq + b, dtype="<u8")
        recs["t"] = t_col[a:b]
        recs["r"] = r_col[a:b]
        recs["d"] = d_col[a:b]
        mat = body.reshape(m, rec)
        off = RECORD_HEADER_BYTES
        for col, w in zip(columns, widths):
            mat[:, off : off + w] = col[a:b]
            off += w
        yield m, frame


def _python_frames(
    first_seq: int, n: int, t_ns: Any, reward: Any, done: Any, columns: Sequence[Any], step_bytes: int, per: int
) -> Iterator[Tuple[int, Any]]:
    t_list = list(t_ns)
    r_list: List[Any] = [reward] * n if isinstance(reward, (int, float)) else list(reward)
    d_list: List[Any] = [done] * n if isinstance(done, (bool, int)) else list(done)
    if len(r_list) != n or len(d_list) != n:
        raise SchemaError(f"push_batch: reward / done have {len(r_list)} / {len(d_list)} values for {n} steps", None)
    views = [memoryview(c).cast("B") for c in columns]
    widths = [v.nbytes // n for v in views]
    for a in range(0, n, per):
        b = min(a + per, n)
        frame = bytearray(BATCH_HEADER_BYTES)
        for i in range(a, b):
            frame += checked_header(first_seq + i, t_list[i], r_list[i], d_list[i])
            for v, w in zip(views, widths):
                frame += v[i * w : (i + 1) * w]
        BATCH_HEADER.pack_into(frame, 0, len(frame) - LEN_BYTES, FrameType.TIMESTEP_BATCH, b - a)
        yield b - a, frame
