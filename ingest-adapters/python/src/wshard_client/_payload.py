"""Turning user payloads into the little-endian bytes of one channel, checked against the
schema.

Accepted for one step of a channel:

- a numpy array (or numpy scalar) whose dtype is the channel's (byte order is fixed up if
  needed) and whose shape is the channel's shape exactly; passed on as a zero-copy
  ``uint8`` view when it is C-contiguous little-endian;
- anything with the buffer protocol (``bytes``, ``bytearray``, ``memoryview``,
  ``array.array``) holding exactly ``dtype size x prod(shape)`` bytes, taken as is;
- a Python number (scalar channels) or a (nested) list / tuple of numbers with
  ``prod(shape)`` elements, packed with :mod:`struct`.

For :meth:`EpisodeWriter.push_batch` columns the same, with a leading ``N`` dimension.
numpy is optional: without it only the last two forms exist.
"""

from __future__ import annotations

import struct
from typing import Any, List, Mapping, Optional, Sequence, Union

from ._schema import Channel, DType
from .errors import ErrorCode, SchemaError

try:  # numpy is optional
    import numpy as np
except ImportError:  # pragma: no cover - exercised by the no-numpy test in a subprocess
    np = None  # type: ignore[assignment]

__all__ = ["np", "HAVE_NUMPY", "ChannelLayout", "layouts_of", "order_payloads", "step_payload", "column_payload"]

#: Whether numpy could be imported.
HAVE_NUMPY = np is not None

_BYTES_TYPES = (bytes, bytearray, memoryview)
Payload = Any
Payloads = Union[Sequence[Payload], Mapping[str, Payload]]


class ChannelLayout:
    """A channel plus what payload checks need, computed once per episode."""

    __slots__ = ("index", "channel", "name", "dtype", "shape", "count", "nbytes", "np_dtype", "struct_fmt")

    def __init__(self, index: int, channel: Channel) -> None:
        self.index = index
        self.channel = channel
        self.name = channel.name
        self.dtype = channel.dtype
        self.shape = channel.shape
        self.count = channel.count
        self.nbytes = channel.step_bytes
        info = channel.dtype.info
        self.np_dtype = np.dtype(info.numpy) if (np is not None and info.numpy) else None
        self.struct_fmt = f"<{self.count}{info.struct}" if info.struct else None

    def error(self, what: str, code: Optional[ErrorCode] = None) -> SchemaError:
        """A :class:`SchemaError` naming this channel."""
        return SchemaError(f"channel {self.index} {self.name!r}: {what}", code, self.name)


def layouts_of(channels: Sequence[Channel]) -> List[ChannelLayout]:
    """The layouts of ``channels``, in schema order."""
    return [ChannelLayout(i, c) for i, c in enumerate(channels)]


def order_payloads(layouts: Sequence[ChannelLayout], payloads: Payloads) -> Sequence[Payload]:
    """``payloads`` in schema order: a sequence is taken as is (its length checked), a
    mapping is looked up by channel name (missing or unknown names are errors)."""
    if isinstance(payloads, Mapping):
        missing = [lay.name for lay in layouts if lay.name not in payloads]
        if missing or len(payloads) != len(layouts):
            extra = sorted(set(payloads) - {lay.name for lay in layouts})
            raise SchemaError(f"payloads by name: missing {missing}, unknown {extra}", ErrorCode.PAYLOAD_SIZE)
        return [payloads[lay.name] for lay in layouts]
    if isinstance(payloads, _BYTES_TYPES) or (np is not None and isinstance(payloads, np.ndarray)):
        raise SchemaError(
            "payloads must be a sequence (one per channel) or a dict by name; use push_packed for one buffer",
            ErrorCode.PAYLOAD_SIZE,
        )
    if len(payloads) != len(layouts):
        raise SchemaError(f"{len(payloads)} payloads for {len(layouts)} channels", ErrorCode.PAYLOAD_SIZE)
    return payloads


def _flatten(value: Any, out: List[Any]) -> None:
    if isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    else:
        out.append(value)


def _bf16_bits(x: float) -> int:
    """bfloat16 bits of ``x``: f32 rounded to nearest even, NaN kept quiet."""
    bits: int = struct.unpack("<I", struct.pack("<f", x))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _pack_values(lay: ChannelLayout, value: Any, count: int) -> bytes:
    """Pack numbers (a scalar or nested lists) as ``count`` elements of the channel dtype."""
    flat: List[Any] = []
    _flatten(value, flat)
    if len(flat) != count:
        raise lay.error(
            f"{len(flat)} values, schema needs {count} ({lay.dtype} x {list(lay.shape)})", ErrorCode.PAYLOAD_SIZE
        )
    try:
        if lay.dtype == DType.BF16:
            return struct.pack(f"<{count}H", *(_bf16_bits(float(v)) for v in flat))
        fmt = lay.struct_fmt if count == lay.count else f"<{count}{lay.dtype.info.struct}"
        assert fmt is not None
        return struct.pack(fmt, *flat)
    except (struct.error, OverflowError, TypeError, ValueError) as e:
        raise lay.error(f"values do not pack as {lay.dtype}: {e}") from None


def _bytes_view(lay: ChannelLayout, value: Any, nbytes: int) -> Union[memoryview, bytes]:
    mv = memoryview(value)
    if mv.nbytes != nbytes:
        raise lay.error(f"payload is {mv.nbytes} bytes, schema step is {nbytes} bytes", ErrorCode.PAYLOAD_SIZE)
    if not mv.c_contiguous:
        return mv.tobytes()
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def _numpy_le(lay: ChannelLayout, arr: Any) -> Any:
    """``arr`` checked against the channel dtype, converted to little-endian
    C-contiguous if needed (the only copies made)."""
    dt = arr.dtype
    want = lay.np_dtype
    if want is None:  # bf16: ml_dtypes.bfloat16 or raw uint16 bits
        if dt.name != "bfloat16" and not (dt.kind == "u" and dt.itemsize == 2):
            raise lay.error(
                f"numpy dtype {dt} does not match schema dtype bf16 (use ml_dtypes.bfloat16 or uint16 bits)"
            )
        if dt.byteorder == ">":
            arr = arr.byteswap().view(dt.newbyteorder("<"))
    elif dt != want:
        if dt.kind == want.kind and dt.itemsize == want.itemsize:
            arr = arr.astype(want)  # byte order only
        else:
            raise lay.error(f"numpy dtype {dt} does not match schema dtype {lay.dtype} ({want})")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def _numbers(lay: ChannelLayout, value: Any) -> Any:
    """Nested lists of Python numbers as an array of the channel's dtype; refuses what
    would not convert exactly in kind (floats for an integer channel, out-of-range
    integers, non-numbers)."""
    want = lay.np_dtype
    assert want is not None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise lay.error(f"column does not convert to an array: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise lay.error(f"column values are {arr.dtype}, not numbers")
    if arr.dtype.kind == "f" and want.kind in "biu":
        raise lay.error(f"float values for a {lay.dtype} channel")
    if want.kind in "iu" and arr.size:
        info = np.iinfo(want)
        if arr.min() < info.min or arr.max() > info.max:
            raise lay.error(f"values outside {lay.dtype} range")
    return arr.astype(want)


def step_payload(lay: ChannelLayout, value: Any) -> Union[memoryview, bytes, Any]:
    """One step's payload for channel ``lay`` as a buffer of exactly ``lay.nbytes`` bytes.

    Raises:
        SchemaError: wrong size (code ``PAYLOAD_SIZE``), dtype or shape.
    """
    if type(value) is bytes or type(value) is bytearray:
        if len(value) != lay.nbytes:
            raise lay.error(f"payload is {len(value)} bytes, schema step is {lay.nbytes} bytes", ErrorCode.PAYLOAD_SIZE)
        return value
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        arr = _numpy_le(lay, np.asarray(value))
        if arr.shape != lay.shape:
            raise lay.error(f"numpy shape {arr.shape} does not match schema shape {lay.shape}")
        return memoryview(arr.reshape(-1).view(np.uint8))
    if isinstance(value, (int, float, list, tuple)):
        return _pack_values(lay, value, lay.count)
    try:
        return _bytes_view(lay, value, lay.nbytes)
    except TypeError:
        raise lay.error(f"unsupported payload type {type(value).__name__}") from None


def column_payload(lay: ChannelLayout, value: Any, n: int) -> Any:
    """``n`` steps of channel ``lay`` at once.

    With numpy: a ``uint8`` array of shape ``(n, lay.nbytes)`` (a view of the caller's
    array where possible). Without: a buffer of ``n * lay.nbytes`` bytes.

    Accepts an array of shape ``(n, *shape)``, a buffer of ``n x step`` bytes, or a
    sequence of ``n`` per-step payloads.

    Raises:
        SchemaError: wrong size, dtype or shape.
    """
    total = n * lay.nbytes
    if np is None:
        if isinstance(value, (list, tuple)) and len(value) == n and n and not isinstance(value[0], (int, float)):
            return b"".join(bytes(step_payload(lay, v)) for v in value)
        if isinstance(value, (list, tuple)):
            return _pack_values(lay, value, n * lay.count)
        return _bytes_view(lay, value, total)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = _numpy_le(lay, np.asarray(value))
        want = (n,) + lay.shape
        if arr.shape != want:
            raise lay.error(f"numpy column shape {arr.shape} does not match (N, *shape) = {want}")
        return arr.reshape(n, -1).view(np.uint8).reshape(n, lay.nbytes)
    if isinstance(value, (list, tuple)):
        if len(value) == n and n and not isinstance(value[0], (int, float, list, tuple)):
            # n per-step payloads (buffers, numpy rows or scalars): each one checked
            parts = [step_payload(lay, v) for v in value]
            return np.frombuffer(b"".join(parts), np.uint8).reshape(n, lay.nbytes)
        if lay.np_dtype is None:
            return np.frombuffer(_pack_values(lay, value, n * lay.count), np.uint8).reshape(n, lay.nbytes)
        return column_payload(lay, _numbers(lay, value), n)
    try:
        buf = _bytes_view(lay, value, total)
    except TypeError:
        raise lay.error(f"unsupported column type {type(value).__name__}") from None
    return np.frombuffer(buf, np.uint8).reshape(n, lay.nbytes)
