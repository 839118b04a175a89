"""The parts of the schema ``OPEN`` carries: dtypes, lanes, codecs, durability, timebase
and channels (:class:`Channel`), with the protocol's limits on them.

The checks of a whole schema (the server's rules) are in :mod:`wshard_client._validate`,
and :class:`~wshard_client.EpisodeSpec`, everything ``OPEN`` carries, in
:mod:`wshard_client._episode_spec`, above both."""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import SchemaError

__all__ = [
    "DType",
    "DTypeInfo",
    "DTYPES",
    "Lane",
    "Codec",
    "Durability",
    "Timebase",
    "Channel",
    "MAX_NDIM",
    "MAX_EPISODE_ID_BYTES",
]

#: Most dimensions of a channel's per-timestep shape.
MAX_NDIM = 8
#: Longest episode id any server accepts (its ``limits.max_episode_id_bytes``, default 128,
#: is at most this; the server refuses a longer id than its own limit with
#: ``BAD_EPISODE_ID``).
MAX_EPISODE_ID_BYTES = 200


class DType(enum.IntEnum):
    """Element type of a channel; the value is the wire ``dtype`` code."""

    F64 = 0
    F32 = 1
    F16 = 2
    BF16 = 3
    I64 = 4
    I32 = 5
    I16 = 6
    I8 = 7
    U64 = 8
    U32 = 9
    U16 = 10
    U8 = 11
    BOOL = 12

    @property
    def info(self) -> "DTypeInfo":
        """Size, name and numpy / struct mapping of this dtype."""
        return DTYPES[self]

    @property
    def size(self) -> int:
        """Bytes per element."""
        return DTYPES[self].size

    @classmethod
    def parse(cls, value: Union["DType", str, int, Any]) -> "DType":
        """A dtype from a :class:`DType`, a wire code, a short or long name (``"f32"``,
        ``"float32"``, case-insensitive) or a numpy dtype / type (``np.float32``)."""
        if isinstance(value, DType):
            return value
        if isinstance(value, type) and value in _PY_TYPES:  # Python's own types, as numpy maps them
            return _PY_TYPES[value]
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                raise SchemaError(f"dtype code {value} is not 0..=12") from None
        name = value if isinstance(value, str) else _numpy_name(value)
        found = _BY_NAME.get(name.lower()) if name is not None else None
        if found is None:
            raise SchemaError(f"unknown dtype {value!r} (use one of {', '.join(_SHORT)})")
        return found

    def __str__(self) -> str:
        return DTYPES[self].name

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class DTypeInfo(NamedTuple):
    """One row of the dtype table."""

    code: int
    #: The short name written in ``meta/channels`` (``f32``).
    name: str
    #: Bytes per element.
    size: int
    #: numpy dtype string (little-endian) or ``None`` (bf16: numpy has none; raw ``<u2``
    #: bits or an ``ml_dtypes.bfloat16`` array are accepted).
    numpy: Optional[str]
    #: :mod:`struct` format character for packing Python numbers (bf16: packed by hand).
    struct: Optional[str]


#: The 13 dtypes of protocol v1, by code (sizes as the Rust ``DType::size``).
DTYPES: Dict[DType, DTypeInfo] = {
    DType.F64: DTypeInfo(0, "f64", 8, "<f8", "d"),
    DType.F32: DTypeInfo(1, "f32", 4, "<f4", "f"),
    DType.F16: DTypeInfo(2, "f16", 2, "<f2", "e"),
    DType.BF16: DTypeInfo(3, "bf16", 2, None, None),
    DType.I64: DTypeInfo(4, "i64", 8, "<i8", "q"),
    DType.I32: DTypeInfo(5, "i32", 4, "<i4", "i"),
    DType.I16: DTypeInfo(6, "i16", 2, "<i2", "h"),
    DType.I8: DTypeInfo(7, "i8", 1, "|i1", "b"),
    DType.U64: DTypeInfo(8, "u64", 8, "<u8", "Q"),
    DType.U32: DTypeInfo(9, "u32", 4, "<u4", "I"),
    DType.U16: DTypeInfo(10, "u16", 2, "<u2", "H"),
    DType.U8: DTypeInfo(11, "u8", 1, "|u1", "B"),
    DType.BOOL: DTypeInfo(12, "bool", 1, "|b1", "?"),
}

_SHORT = [i.name for i in DTYPES.values()]
_LONG = {
    "float64": DType.F64, "double": DType.F64, "float32": DType.F32, "float": DType.F32,
    "float16": DType.F16, "half": DType.F16, "bfloat16": DType.BF16, "int64": DType.I64,
    "int32": DType.I32, "int": DType.I32, "int16": DType.I16, "int8": DType.I8,
    "uint64": DType.U64, "uint32": DType.U32, "uint16": DType.U16, "uint8": DType.U8,
    "byte": DType.U8, "boolean": DType.BOOL, "bool_": DType.BOOL,
}  # fmt: skip
_PY_TYPES: Dict[Any, DType] = {float: DType.F64, int: DType.I64, bool: DType.BOOL}
_BY_NAME: Dict[str, DType] = {**{i.name: d for d, i in DTYPES.items()}, **_LONG}


def _numpy_name(value: Any) -> Optional[str]:
    """The name of a numpy dtype or scalar type (``float32``), without importing numpy."""
    name = getattr(value, "name", None)  # np.dtype
    if isinstance(name, str):
        return name
    name = getattr(value, "__name__", None)  # np.float32, ml_dtypes.bfloat16
    return name if isinstance(name, str) else None


class Lane(enum.IntEnum):
    """Where a channel lives in the file: ``signal/{name}`` or ``action/{name}``."""

    SIGNAL = 0
    ACTION = 1

    @classmethod
    def parse(cls, value: Union["Lane", str, int]) -> "Lane":
        """A lane from a :class:`Lane`, a wire code or ``"signal"`` / ``"action"``."""
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise SchemaError(f"unknown lane {value!r} (signal or action)") from None
        try:
            return cls(value)
        except ValueError:
            raise SchemaError(f"unknown lane {value!r} (signal or action)") from None


class Codec(enum.IntEnum):
    """Storage codec of a channel (wire ``codec``); zstd takes a ``codec_level``."""

    DEFAULT = 0
    NONE = 1
    LZ4 = 2
    ZSTD = 3

    @classmethod
    def parse(cls, value: Union["Codec", str, int]) -> Tuple["Codec", Optional[int]]:
        """``(codec, level)`` from a :class:`Codec`, a wire code or a name: ``"default"``,
        ``"none"``, ``"lz4"``, ``"zstd"`` or ``"zstd-N"`` (level N). ``level`` is ``None``
        when the value names none."""
        if isinstance(value, str):
            text = value.strip().lower()
            m = re.fullmatch(r"zstd-(-?\d+)", text)
            if m:
                return cls.ZSTD, int(m.group(1))
            try:
                return cls[text.upper()], None
            except KeyError:
                raise SchemaError(f"unknown codec {value!r} (default, none, lz4, zstd or zstd-N)") from None
        try:
            return cls(value), None
        except ValueError:
            raise SchemaError(f"unknown codec code {value!r} (0..=3)") from None


class Durability(enum.IntEnum):
    """``OPEN.durability``: what a ``DURABLE`` acknowledgement means."""

    #: Journaled: every DURABLE-acknowledged timestep survives a crash.
    ACK = 0
    #: No journal: only finalized chunks survive (DURABLE follows chunk finalization).
    CHUNK = 1
    #: Whatever the server's ``durability.default`` says.
    SERVER_DEFAULT = 2

    @classmethod
    def parse(cls, value: Union["Durability", str, int]) -> "Durability":
        """From a :class:`Durability`, a wire code or ``"ack"`` / ``"chunk"`` /
        ``"server_default"``."""
        if isinstance(value, str):
            key = value.strip().upper().replace("-", "_")
            if key in ("DEFAULT", "SERVER"):
                key = "SERVER_DEFAULT"
            try:
                return cls[key]
            except KeyError:
                raise SchemaError(f"unknown durability {value!r} (ack, chunk, server_default)") from None
        try:
            return cls(value)
        except ValueError:
            raise SchemaError(f"unknown durability code {value!r} (0..=2)") from None


class Timebase(enum.IntEnum):
    """``OPEN.timebase_kind``."""

    #: Fixed rate ``tick_hz`` (> 0).
    TICKS = 0
    #: Per-step timestamps; ``tick_hz`` is the nominal rate (0 = unknown).
    TIMESTAMPS_NS = 1

    @classmethod
    def parse(cls, value: Union["Timebase", str, int]) -> "Timebase":
        """From a :class:`Timebase`, a wire code or ``"ticks"`` / ``"timestamps_ns"``."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise SchemaError(f"unknown timebase {value!r} (ticks or timestamps_ns)") from None
        try:
            return cls(value)
        except ValueError:
            raise SchemaError(f"unknown timebase code {value!r} (0 or 1)") from None


@dataclass(frozen=True, init=False)
class Channel:
    """One channel of the schema. ``shape`` is the per-timestep shape (``()`` = scalar).

    Args:
        name: channel id; may contain ``/`` (``group/modality``); unique per episode.
        dtype: a :class:`DType`, a name (``"f32"``, ``"float32"``) or a numpy dtype.
        shape: per-timestep shape without T; an int is a 1-d shape.
        lane: ``"signal"`` (default) or ``"action"``.
        codec: ``"default"`` (the server's), ``"none"``, ``"lz4"``, ``"zstd"`` or
            ``"zstd-N"``.
        codec_level: zstd level 1..=22 (0 = default 3); ignored for other codecs.
        modality: e.g. ``"rgb"``, ``"depth"``, ``"proprioception"``; ``None`` = none.
    """

    name: str
    dtype: DType
    shape: Tuple[int, ...]
    lane: Lane
    codec: Codec
    codec_level: int
    modality: Optional[str]

    def __init__(
        self,
        name: str,
        dtype: Union[DType, str, int, Any],
        shape: Union[Sequence[int], int] = (),
        lane: Union[Lane, str, int] = Lane.SIGNAL,
        codec: Union[Codec, str, int] = Codec.DEFAULT,
        codec_level: Optional[int] = None,
        modality: Optional[str] = None,
    ) -> None:
        kind, named_level = Codec.parse(codec)
        level = codec_level if codec_level is not None else (named_level or 0)
        dims = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "dtype", DType.parse(dtype))
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "lane", Lane.parse(lane))
        object.__setattr__(self, "codec", kind)
        object.__setattr__(self, "codec_level", int(level) if kind == Codec.ZSTD else 0)
        object.__setattr__(self, "modality", modality or None)

    @property
    def count(self) -> int:
        """Elements per timestep: ``prod(shape)``."""
        return math.prod(self.shape)

    @property
    def step_bytes(self) -> int:
        """Payload bytes per timestep: ``dtype size x prod(shape)``."""
        return self.dtype.size * self.count

    @property
    def block_name(self) -> str:
        """The block this channel becomes in a WShard file: ``signal/x`` or ``action/x``."""
        return f"{self.lane.name.lower()}/{self.name}"
