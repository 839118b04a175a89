"""The shared-memory ring of docs/PROTOCOL.md ("Shared-memory transport"), sans-io: the
backpressure policies, the geometry rules of ``SHM_ATTACH`` (the Rust
``wshard_ingest_proto::ring``), the client's default geometry, and the accesses to the
ring's control words. The layout (offsets and sizes, drawn in its docstring) is
:mod:`wshard_client._ring_layout`, generated from the Rust constants.

Control words. The protocol asks for acquire / release / sequentially consistent atomics
on ``head``, ``tail`` and the two ``*_sleeping`` words. Python has no atomics of its own,
so there are two implementations of :class:`Words`:

- ``libatomic`` (used when ``libatomic.so.1``, GCC's atomics runtime, can be loaded with
  :mod:`ctypes`): real ``__atomic_load_8`` / ``__atomic_store_8`` / ``__atomic_compare_exchange_8``
  calls with the orderings the protocol names, correct on every architecture. It is the
  only one that can do ``drop_oldest``, which needs a compare-and-swap of ``tail``.
- ``plain`` (the fallback): loads and stores through a ``memoryview`` of the control
  words cast to native ``Q`` / ``I`` items. CPython reads and writes such an item with one
  fixed-size ``memcpy``, i.e. one aligned 8-byte (or 4-byte) load or store, so ``head`` is
  never seen torn. (Not ``struct.pack_into``: it zero-fills the destination before it
  writes the value, so a consumer polling the word can see ``0`` in between. Native order
  is the ring's little-endian only on a little-endian host: ``plain`` refuses others.)
  Ordering: the slot's bytes are written before ``head``
  (program order), which x86-64 (TSO) keeps for other cores; weakly ordered CPUs
  (aarch64) give no such guarantee for plain stores, so use ``libatomic`` there. The
  "store a flag, then load the other side's word" steps are separated by a
  ``threading.Lock`` acquire/release (a locked instruction on x86-64, i.e. a full fence);
  a wake-up missed anyway costs at most one wait slice (20 ms here, the daemon's poll
  interval on its side), never data.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import mmap
import struct
import sys
import threading
from typing import Any, List, Optional, Union

from ._ring_layout import (
    MAX_SLOTS,
    MIN_SLOTS,
    OFFSET_CONSUMER_SLEEPING,
    OFFSET_DROPPED_BATCHES,
    OFFSET_HEAD,
    OFFSET_TAIL,
    POLICY_BLOCK,
    POLICY_DROP_NEWEST,
    POLICY_DROP_OLDEST,
    RING_HEADER_BYTES,
    SLOT_ALIGN,
    SLOT_HEADER_BYTES,
    SLOT_MIN_OVERHEAD,
)
from .errors import ErrorCode, SchemaError

__all__ = [
    "RingPolicy",
    "RING_HEADER_BYTES",
    "SLOT_HEADER_BYTES",
    "DEFAULT_SLOTS",
    "default_slot_count",
    "ring_bytes",
    "default_slot_bytes",
    "check_geometry",
    "Words",
    "make_words",
]

#: The ring header's bytes up to the end of its last control word (a multiple of 8).
CONTROL_BYTES = OFFSET_DROPPED_BATCHES + 8
#: ``magic | version | slot_size | slot_count`` (``RING_IDENT_BYTES``), written before
#: ``SHM_ATTACH``.
RING_IDENT = struct.Struct("<8sIII")
#: A slot's header: ``len u32 | count u32`` (``SLOT_HEADER_BYTES``).
SLOT_HEADER = struct.Struct("<II")
#: Most slots of a ring when the caller leaves it to the client (as the Rust client).
DEFAULT_SLOTS = 64
#: Fewest slots of a default ring.
MIN_DEFAULT_SLOTS = 8
#: The size a default ring aims at: fewer slots (down to ``MIN_DEFAULT_SLOTS``) once 64
#: would make it larger (the server maps the whole ring).
DEFAULT_RING_BYTES = 16 << 20
#: Record bytes a default slot is sized for (at least one record), as the Rust client.
DEFAULT_SLOT_RECORD_BYTES = 256 * 1024

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class RingPolicy(enum.IntEnum):
    """What a push does when the ring is full (the optional ``policy`` byte of
    ``SHM_ATTACH``)."""

    #: Wait for the server to free a slot; no timestep is ever lost (the default).
    BLOCK = POLICY_BLOCK
    #: Drop the batch being published; its seqs are used (the server records a gap).
    DROP_NEWEST = POLICY_DROP_NEWEST
    #: Take back the oldest slot the server has not claimed yet and publish into it.
    DROP_OLDEST = POLICY_DROP_OLDEST

    @classmethod
    def parse(cls, value: Union["RingPolicy", str, int]) -> "RingPolicy":
        """From a :class:`RingPolicy`, a wire code or ``"block"`` / ``"drop_newest"`` /
        ``"drop_oldest"`` (``-`` works for ``_``)."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper().replace("-", "_")]
            except KeyError:
                raise ValueError(f"unknown ring policy {value!r} (block, drop_newest or drop_oldest)") from None
        return cls(value)

    @property
    def drops(self) -> bool:
        """Whether the policy may drop timesteps."""
        return self != RingPolicy.BLOCK

    def __str__(self) -> str:
        return self.name.lower()


def ring_bytes(slot_size: int, slot_count: int) -> int:
    """Size of the ring memfd: ``RING_HEADER_BYTES + slot_size x slot_count``."""
    return RING_HEADER_BYTES + slot_size * slot_count


def _round_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def default_slot_bytes(record_bytes: int, max_frame_bytes: int) -> int:
    """The Rust client's default ``slot_size``: room for ``max(1, 256 KiB / record)``
    records plus the slot header, rounded up to 64, at least the protocol's minimum and
    (rounded down to 64) at most ``max_frame_bytes``."""
    steps = max(1, DEFAULT_SLOT_RECORD_BYTES // max(record_bytes, 1))
    want = _round_up(steps * record_bytes + SLOT_HEADER_BYTES, SLOT_ALIGN)
    minimum = _round_up(record_bytes + SLOT_MIN_OVERHEAD, SLOT_ALIGN)
    return min(max(want, minimum), max_frame_bytes // SLOT_ALIGN * SLOT_ALIGN)


def default_slot_count(slot_size: int) -> int:
    """The Rust client's default slot count: ``clamp(ceil(16 MiB / slot_size), 8, 64)``."""
    fit = -(-DEFAULT_RING_BYTES // max(slot_size, 1))
    return min(max(fit, MIN_DEFAULT_SLOTS), DEFAULT_SLOTS)


def check_geometry(slot_size: int, slot_count: int, record_bytes: int, max_frame_bytes: int) -> None:
    """The server's ``SHM_ATTACH`` geometry rules, checked before anything is sent.

    Raises:
        SchemaError: code ``BAD_SHM``, naming the value and the rule.
    """

    def bad(msg: str) -> SchemaError:
        return SchemaError(f"SHM_ATTACH {msg}", ErrorCode.BAD_SHM)

    if not MIN_SLOTS <= slot_count <= MAX_SLOTS:
        raise bad(f"slot_count {slot_count} is outside {MIN_SLOTS}..={MAX_SLOTS}")
    if slot_size % SLOT_ALIGN:
        raise bad(f"slot_size {slot_size} is not a multiple of {SLOT_ALIGN}")
    minimum = record_bytes + SLOT_MIN_OVERHEAD
    if slot_size < minimum:
        raise bad(
            f"slot_size {slot_size} is smaller than {SLOT_MIN_OVERHEAD} + one timestep record "
            f"({record_bytes} bytes) = {minimum}"
        )
    if slot_size > max_frame_bytes:
        raise bad(f"slot_size {slot_size} exceeds max_frame_bytes {max_frame_bytes}")


# ---------------------------------------------------------------------------- control words

_RELAXED, _ACQUIRE, _RELEASE, _SEQ_CST = 0, 2, 3, 5


class Words:
    """The ring's control words, accessed with plain ``struct`` loads and stores (see
    the module docstring for what that assumes); :class:`LibatomicWords` overrides every
    method with real atomics."""

    #: ``"plain"`` or ``"libatomic"``.
    kind = "plain"

    def __init__(self, mm: mmap.mmap) -> None:
        self._mm = mm
        # The control words, as native 8-byte and 4-byte items (see the module docstring).
        self._u64: Optional[memoryview] = memoryview(mm)[:CONTROL_BYTES].cast("Q")
        self._u32: Optional[memoryview] = memoryview(mm)[:CONTROL_BYTES].cast("I")
        self._fence_lock = threading.Lock()

    def _words64(self) -> memoryview:
        if self._u64 is None:
            raise ValueError("the ring is closed")
        return self._u64

    def _words32(self) -> memoryview:
        if self._u32 is None:
            raise ValueError("the ring is closed")
        return self._u32

    def load_tail(self) -> int:
        """``tail`` (acquire)."""
        return int(self._words64()[OFFSET_TAIL // 8])

    def store_u64(self, offset: int, value: int) -> None:
        """Store a ``u64`` word (release): ``head`` and the dropped counters."""
        self._words64()[offset // 8] = value

    def store_flag_then_load_tail(self, offset: int, value: int) -> int:
        """Store a ``*_sleeping`` word, then load ``tail``, with a full fence between."""
        self._words32()[offset // 4] = value
        self.fence()
        return self.load_tail()

    def store_flag(self, offset: int, value: int) -> None:
        """Store a ``*_sleeping`` word."""
        self._words32()[offset // 4] = value

    def publish_head(self, head: int) -> bool:
        """Store ``head`` (release), then load ``consumer_sleeping`` with a full fence
        between; returns whether the consumer sleeps."""
        self._words64()[OFFSET_HEAD // 8] = head
        self.fence()
        return bool(self._words32()[OFFSET_CONSUMER_SLEEPING // 4])

    def cas_tail(self, expected: int, new: int) -> bool:
        """Compare-and-swap ``tail``; only with real atomics."""
        raise NotImplementedError("plain control words cannot compare-and-swap")

    def fence(self) -> None:
        """Best effort full fence: an uncontended lock round trip (``lock cmpxchg`` on
        x86-64)."""
        with self._fence_lock:
            pass

    def close(self) -> None:
        """Drop the references into the mapping (so that it can be unmapped)."""
        for view in (self._u64, self._u32):
            if view is not None:
                view.release()
        self._u64 = None
        self._u32 = None


class Libatomic:
    """The functions of GCC's ``libatomic`` used here, with their prototypes."""

    def __init__(self, lib: Any) -> None:
        def func(name: str, argtypes: List[Any], restype: Any) -> Any:
            f = lib[name]  # by name: `lib.__atomic_x` would be mangled inside a class
            f.argtypes = argtypes
            f.restype = restype
            return f

        ptr, order = ctypes.c_void_p, ctypes.c_int
        self.load_8 = func("__atomic_load_8", [ptr, order], ctypes.c_uint64)
        self.load_4 = func("__atomic_load_4", [ptr, order], ctypes.c_uint32)
        self.store_8 = func("__atomic_store_8", [ptr, ctypes.c_uint64, order], None)
        self.store_4 = func("__atomic_store_4", [ptr, ctypes.c_uint32, order], None)
        self.cas_8 = func("__atomic_compare_exchange_8", [ptr, ptr, ctypes.c_uint64, order, order], ctypes.c_bool)


_LIB: Optional[Libatomic] = None
_LIB_LOADED = False


def libatomic() -> Optional[Libatomic]:
    """``libatomic`` (loaded once), or ``None`` when it cannot be loaded."""
    global _LIB, _LIB_LOADED
    if not _LIB_LOADED:
        _LIB_LOADED = True
        try:
            _LIB = Libatomic(ctypes.CDLL(ctypes.util.find_library("atomic") or "libatomic.so.1"))
        except (OSError, AttributeError):
            _LIB = None
    return _LIB


class LibatomicWords(Words):
    """The control words through ``libatomic``, with the protocol's orderings."""

    kind = "libatomic"

    def __init__(self, mm: mmap.mmap, lib: Libatomic) -> None:
        super().__init__(mm)
        self._lib = lib
        self._anchor: Optional[Any] = ctypes.c_char.from_buffer(mm)  # pins the mapping
        base = ctypes.addressof(self._anchor)
        self._head = base + OFFSET_HEAD
        self._tail = base + OFFSET_TAIL
        self._base = base
        self._expected = ctypes.c_uint64(0)

    def load_tail(self) -> int:
        return int(self._lib.load_8(self._tail, _ACQUIRE))

    def store_u64(self, offset: int, value: int) -> None:
        self._lib.store_8(self._base + offset, value, _RELEASE)

    def store_flag_then_load_tail(self, offset: int, value: int) -> int:
        self._lib.store_4(self._base + offset, value, _SEQ_CST)
        return int(self._lib.load_8(self._tail, _SEQ_CST))

    def store_flag(self, offset: int, value: int) -> None:
        self._lib.store_4(self._base + offset, value, _SEQ_CST)

    def publish_head(self, head: int) -> bool:
        # seq_cst store then seq_cst load: ordered against the server's
        # "store consumer_sleeping = 1, fence, re-check head".
        self._lib.store_8(self._head, head, _SEQ_CST)
        return bool(self._lib.load_4(self._base + OFFSET_CONSUMER_SLEEPING, _SEQ_CST))

    def cas_tail(self, expected: int, new: int) -> bool:
        self._expected.value = expected
        return bool(self._lib.cas_8(self._tail, ctypes.byref(self._expected), new, _SEQ_CST, _SEQ_CST))

    def close(self) -> None:
        self._anchor = None
        super().close()


def make_words(mm: mmap.mmap, atomics: Optional[str] = None) -> Words:
    """The control words of ``mm``: ``atomics`` ``"libatomic"``, ``"plain"`` or ``None``
    (``libatomic`` when it loads, else ``plain``).

    Raises:
        OSError: ``"libatomic"`` asked for but not loadable.
    """
    if atomics not in (None, "libatomic", "plain"):
        raise ValueError(f"unknown atomics {atomics!r} (libatomic or plain)")
    lib = libatomic() if atomics != "plain" else None
    if lib is not None:
        return LibatomicWords(mm, lib)
    if atomics == "libatomic":
        raise OSError("libatomic.so.1 cannot be loaded")
    if sys.byteorder != "little":
        raise OSError("plain control words need a little-endian host, and libatomic.so.1 cannot be loaded")
    return Words(mm)
