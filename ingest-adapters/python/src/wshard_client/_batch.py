"""Building ``TIMESTEP_BATCH`` frames: one pending batch filled step by step (``push``),
and whole frames built from columns of N steps (``push_batch``; vectorized with numpy).

Frame layout: ``body_len u32 | 0x04 | count u32 | records``; each record is
``seq u64 | t_ns i64 | reward f32 | done u8 | payloads in schema order``.
"""

from __future__ import annotations

import struct
import time
from typing import Any, Iterator, Optional, Sequence, Tuple

from ._payload import np
from ._wire import BATCH_HEADER, BATCH_HEADER_BYTES, LEN_BYTES, RECORD, RECORD_HEADER_BYTES, FrameType
from .errors import SchemaError

__all__ = ["PendingBatch", "ColumnBatch", "checked_header", "steps_per_frame"]

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
        self.clear()
        return buf

    def records(self) -> memoryview:
        """The records without the frame header (a view: call :meth:`clear` or
        :meth:`unpin` before appending again)."""
        return memoryview(self.buf)[BATCH_HEADER_BYTES:]

    def unpin(self) -> None:
        """Copy the buffer, so that a view of the old one that is still alive (e.g. in a
        traceback) cannot keep it from growing."""
        self.buf = bytearray(self.buf)

    def clear(self) -> None:
        """Empty the batch (a new buffer: views of the old one stay valid)."""
        self.buf = bytearray()
        self.count = 0
        self.since = None


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


class ColumnBatch:
    """``n = len(t_ns)`` steps given as columns, checked and converted once, whose records
    can be written into any writable buffer: a new ``TIMESTEP_BATCH`` frame
    (:meth:`frames`, the socket) or a shared-memory ring slot (:meth:`write`, no
    intermediate copy).

    ``columns`` are the channels' columns as :func:`column_payload` returns them (numpy
    ``(n, nbytes)`` uint8 arrays with numpy, buffers of ``n x nbytes`` bytes without).

    Raises:
        SchemaError: ``t_ns`` / ``reward`` / ``done`` of the wrong length or kind (a
            ``t_ns`` or ``reward`` out of range without numpy: when its record is written).
    """

    def __init__(self, first_seq: int, t_ns: Any, reward: Any, done: Any, columns: Sequence[Any], step_bytes: int):
        n = len(t_ns)
        self.n = n
        self.first_seq = first_seq
        self.record_bytes = RECORD_HEADER_BYTES + step_bytes
        if np is not None:
            self._t: Any = _column(t_ns, n, "<i8", "t_ns")
            self._r: Any = _column(reward, n, "<f4", "reward")
            self._d: Any = _column(done, n, "u1", "done")
            self._columns: Sequence[Any] = columns
            self._widths = [c.shape[1] for c in columns]
            self._header_dt = np.dtype(
                {
                    "names": ["seq", "t", "r", "d"],
                    "formats": ["<u8", "<i8", "<f4", "u1"],
                    "offsets": [0, 8, 16, 20],
                    "itemsize": self.record_bytes,
                }
            )
        else:
            self._t = list(t_ns)
            self._r = [reward] * n if isinstance(reward, (int, float)) else list(reward)
            self._d = [done] * n if isinstance(done, (bool, int)) else list(done)
            if len(self._r) != n or len(self._d) != n:
                raise SchemaError(
                    f"push_batch: reward / done have {len(self._r)} / {len(self._d)} values for {n} steps", None
                )
            self._columns = [memoryview(c).cast("B") for c in columns]
            self._widths = [v.nbytes // n if n else 0 for v in self._columns]

    def write(self, target: Any, a: int, b: int) -> None:
        """Write the records of steps ``a .. b`` (``(b - a) x record_bytes`` bytes) into
        the writable buffer ``target``."""
        rec = self.record_bytes
        m = b - a
        if np is not None:
            body = np.frombuffer(target, np.uint8, m * rec)
            recs = body.view(self._header_dt)
            first = self.first_seq
            recs["seq"] = np.arange(first + a, first + b, dtype="<u8")
            recs["t"] = self._t[a:b]
            recs["r"] = self._r[a:b]
            recs["d"] = self._d[a:b]
            mat = body.reshape(m, rec)
            off = RECORD_HEADER_BYTES
            for col, w in zip(self._columns, self._widths):
                mat[:, off : off + w] = col[a:b]
                off += w
            return
        out = memoryview(target).cast("B")
        pos = 0
        first, t, r, d = self.first_seq, self._t, self._r, self._d
        for i in range(a, b):
            out[pos : pos + RECORD_HEADER_BYTES] = checked_header(first + i, t[i], r[i], d[i])
            pos += RECORD_HEADER_BYTES
            for v, w in zip(self._columns, self._widths):
                out[pos : pos + w] = v[i * w : (i + 1) * w]
                pos += w

    def frames(self, frame_bytes: int) -> Iterator[Tuple[int, Any]]:
        """Whole ``TIMESTEP_BATCH`` frames of at most ``frame_bytes`` bytes (but at least
        one step each), as ``(steps, frame)`` pairs."""
        rec = self.record_bytes
        per = steps_per_frame(rec, frame_bytes)
        for a in range(0, self.n, per):
            b = min(a + per, self.n)
            m = b - a
            size = BATCH_HEADER_BYTES + m * rec
            frame: Any = np.empty(size, np.uint8) if np is not None else bytearray(size)
            view = memoryview(frame)
            BATCH_HEADER.pack_into(view, 0, size - LEN_BYTES, FrameType.TIMESTEP_BATCH, m)
            self.write(view[BATCH_HEADER_BYTES:], a, b)
            yield m, frame
