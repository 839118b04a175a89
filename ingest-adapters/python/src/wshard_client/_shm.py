"""The producer side of the shared-memory transport (docs/PROTOCOL.md, "Shared-memory
transport"; the Rust client's ``shm.rs``), in pure Python (stdlib only, Linux,
Python >= 3.10 for :func:`os.eventfd`).

The ring is a memfd (``MFD_ALLOW_SEALING``), sized, given its header, and sealed with
``F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`` before it is mapped and sent, so neither
side's mapping can ever be cut short. Two eventfds (created ``EFD_NONBLOCK``) carry the
wake-ups: ``data_ready`` (written when the server sleeps) and ``space_ready`` (written by
the server when we sleep). The three fds travel with ``SHM_ATTACH`` (``SCM_RIGHTS``).

Publishing a slot: make room as the policy says (``block``: wait on ``space_ready`` in
20 ms slices with ``producer_sleeping`` set, so that a server ``ERROR``, the end of the
connection or the timeout end the wait; ``drop_newest``: drop this batch;
``drop_oldest``: take the oldest unclaimed slot back with a compare-and-swap of
``tail``), write the records and then the slot header into the slot, store ``head + 1``
last, and write ``data_ready`` if ``consumer_sleeping`` is set. How the control words are
accessed from Python (real atomics through ``libatomic``, or plain stores) is described
in :mod:`wshard_client._ring`.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import select
import time
import weakref
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from ._ring import RING_IDENT, SLOT_HEADER, RingPolicy, Words, make_words, ring_bytes
from ._ring_layout import (
    OFFSET_DROPPED_BATCHES,
    OFFSET_DROPPED_STEPS,
    OFFSET_PRODUCER_SLEEPING,
    RING_HEADER_BYTES,
    RING_MAGIC,
    RING_VERSION,
    SLOT_HEADER_BYTES,
)
from .errors import ProtocolError, Timeout, TransportError

__all__ = ["ShmInfo", "ShmRing", "shm_supported"]

#: Longest single sleep while waiting for ring space, so errors and the timeout are seen.
WAIT_SLICE = 0.020

# Linux values, for Pythons whose fcntl module lacks the names.
_F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
_F_SEAL_SEAL = getattr(fcntl, "F_SEAL_SEAL", 0x0001)
_F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 0x0002)
_F_SEAL_GROW = getattr(fcntl, "F_SEAL_GROW", 0x0004)


def shm_supported() -> Optional[str]:
    """``None`` when this Python can use the shared-memory transport, else why not."""
    if not hasattr(os, "eventfd"):
        return "shared memory needs Python >= 3.10 (os.eventfd)"
    if not hasattr(os, "memfd_create"):
        return "shared memory needs Linux (os.memfd_create)"
    return None


@dataclass(frozen=True)
class ShmInfo:
    """The ring of a shared-memory episode (``EpisodeWriter.shm``)."""

    #: Bytes per slot (``SHM_ATTACH.slot_size``).
    slot_bytes: int
    #: Slots in the ring (``SHM_ATTACH.slot_count``).
    slots: int
    #: What a push does when the ring is full.
    policy: RingPolicy
    #: How the control words are accessed: ``"libatomic"`` or ``"plain"``.
    atomics: str


def _close_fds(fds: List[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class ShmRing:
    """A mapped ring this client produces into (one episode). Not thread-safe."""

    def __init__(self, slot_size: int, slot_count: int, policy: RingPolicy, atomics: Optional[str] = None) -> None:
        """Create, size, label and seal a memfd for ``slot_count`` slots of ``slot_size``
        bytes, create the two eventfds, and map the ring. The geometry is assumed checked
        (:func:`wshard_client._ring.check_geometry`).

        Raises:
            TransportError: a step failed (naming it), this Python cannot do it, or
                ``drop_oldest`` without ``libatomic``.
        """
        why = shm_supported()
        if why is not None:
            raise TransportError(why)
        self._closed = True  # until everything is set up
        self._view: Optional[memoryview] = None
        self.slot_size = slot_size
        self.slot_count = slot_count
        self.policy = policy
        self.head = 0
        self.dropped_steps = 0
        self.dropped_batches = 0
        #: Times a push slept on ``space_ready`` because the ring was full.
        self.waits = 0
        #: Timesteps in each slot as last published (by position), for ``drop_oldest``.
        self._counts = [0] * slot_count
        self._size = ring_bytes(slot_size, slot_count)
        fds: List[int] = []
        self._fds = fds
        self._finalizer = weakref.finalize(self, _close_fds, fds)
        step = "memfd_create"
        try:
            ring_fd = os.memfd_create("wshard-ring", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            fds.append(ring_fd)
            step = "ftruncate"
            os.ftruncate(ring_fd, self._size)
            step = "pwrite"
            ident = RING_IDENT.pack(RING_MAGIC, RING_VERSION, slot_size, slot_count)
            if os.pwrite(ring_fd, ident, 0) != len(ident):
                raise OSError("short header write")
            step = "fcntl(F_ADD_SEALS)"
            fcntl.fcntl(ring_fd, _F_ADD_SEALS, _F_SEAL_SHRINK | _F_SEAL_GROW | _F_SEAL_SEAL)
            step = "eventfd"
            for _ in range(2):
                fds.append(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
            step = "mmap"
            self._mm = mmap.mmap(ring_fd, self._size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            step = "atomics"
            self._words: Words = make_words(self._mm, atomics)
        except OSError as e:
            self._finalizer()
            raise TransportError(f"shared-memory ring: {step} failed: {e}") from e
        self._closed = False
        self._view = memoryview(self._mm)
        if policy == RingPolicy.DROP_OLDEST and self._words.kind != "libatomic":
            self.close()
            raise TransportError(
                "shared-memory policy drop_oldest needs an atomic compare-and-swap: libatomic.so.1 cannot be loaded"
            )
        self._poll = select.poll()
        self._poll.register(fds[2], select.POLLIN)

    # ------------------------------------------------------------------ properties

    @property
    def fds(self) -> Tuple[int, int, int]:
        """The three fds of ``SHM_ATTACH``, in protocol order: ring, data_ready, space_ready."""
        return (self._fds[0], self._fds[1], self._fds[2])

    @property
    def capacity(self) -> int:
        """Record bytes one slot holds (``slot_size - 8``)."""
        return self.slot_size - SLOT_HEADER_BYTES

    @property
    def info(self) -> ShmInfo:
        """Geometry, policy and atomics, for ``EpisodeWriter.shm``."""
        return ShmInfo(self.slot_size, self.slot_count, self.policy, self._words.kind)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # ------------------------------------------------------------------ making room

    def _used(self, tail: int) -> int:
        if tail > self.head:
            raise ProtocolError(f"shared-memory ring: tail {tail} is ahead of head {self.head}")
        used = self.head - tail
        if used > self.slot_count:
            raise ProtocolError(f"shared-memory ring: tail {tail} is more than {self.slot_count} slots behind head")
        return used

    def _wait_space(self, timeout: Optional[float], check: Callable[[], None]) -> None:
        """Block until a slot is free (producer rule 1). ``check`` runs between sleeps and
        ends the wait with its exception (a server ``ERROR``, the connection gone)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        words = self._words
        while True:
            if self._used(words.load_tail()) < self.slot_count:
                return
            check()
            slice_s = WAIT_SLICE
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Timeout("timed out waiting for a free slot in the shared-memory ring")
                slice_s = min(slice_s, left)
            try:
                tail = words.store_flag_then_load_tail(OFFSET_PRODUCER_SLEEPING, 1)
                if self._used(tail) >= self.slot_count:
                    self.waits += 1
                    self._poll.poll(max(1, int(slice_s * 1000)))
                    try:
                        os.eventfd_read(self._fds[2])
                    except BlockingIOError:
                        pass
            finally:
                words.store_flag(OFFSET_PRODUCER_SLEEPING, 0)

    def _note_dropped(self, count: int) -> None:
        self.dropped_steps += count
        self.dropped_batches += 1
        self._words.store_u64(OFFSET_DROPPED_STEPS, self.dropped_steps)
        self._words.store_u64(OFFSET_DROPPED_BATCHES, self.dropped_batches)

    def _take_back_oldest(self) -> None:
        """``drop_oldest``: while the ring is full, take the oldest slot back by moving
        ``tail`` from its index to index + 1 (compare-and-swap): if that wins, the server
        had not claimed it and never will; if it fails, the server claimed it meanwhile."""
        words = self._words
        while True:
            tail = words.load_tail()
            if self._used(tail) < self.slot_count:
                return
            if words.cas_tail(tail, tail + 1):
                self._note_dropped(self._counts[tail % self.slot_count])
                return

    # ------------------------------------------------------------------ publishing

    def publish(
        self,
        nbytes: int,
        count: int,
        fill: Callable[[memoryview], None],
        timeout: Optional[float],
        check: Callable[[], None],
    ) -> bool:
        """Publish one slot of ``count`` records (``nbytes`` bytes, written by
        ``fill(view)`` straight into the slot): make room as the policy says, fill, write
        the slot header, store ``head + 1``, wake the server if it sleeps. Returns
        ``False`` when the batch was dropped instead (``drop_newest``, full ring). When
        anything raises, nothing was published.

        Raises:
            ValueError: the records do not fit a slot.
            Timeout: no free slot within ``timeout`` (``block``).
            ProtocolError: the server broke the ring's rules (``tail`` out of range).
            Whatever ``check`` or ``fill`` raise.
        """
        view = self._view
        if view is None:
            raise TransportError("the shared-memory ring is closed")
        if not 0 < nbytes <= self.capacity or count < 1:
            raise ValueError(f"a batch of {nbytes} bytes does not fit a slot of {self.slot_size} bytes")
        policy = self.policy
        if policy == RingPolicy.BLOCK:
            self._wait_space(timeout, check)
        elif policy == RingPolicy.DROP_NEWEST:
            if self._used(self._words.load_tail()) >= self.slot_count:
                self._note_dropped(count)
                return False
        else:
            self._take_back_oldest()
        index = self.head % self.slot_count
        offset = RING_HEADER_BYTES + index * self.slot_size
        start = offset + SLOT_HEADER_BYTES
        fill(view[start : start + nbytes])
        SLOT_HEADER.pack_into(self._mm, offset, nbytes, count)
        self._counts[index] = count
        self.head += 1
        if self._words.publish_head(self.head):
            try:
                os.eventfd_write(self._fds[1], 1)
            except BlockingIOError:
                pass  # counter saturated: already set
        return True

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Unmap the ring and close the three fds (the server keeps its own); idempotent.
        The mapping stays until the last view into it is gone if one is still alive."""
        if self._closed:
            return
        self._closed = True
        self._words.close()
        view, self._view = self._view, None
        try:
            if view is not None:
                view.release()
            self._mm.close()
        except BufferError:
            pass  # a view into a slot is still referenced; the GC unmaps it later
        self._finalizer()

    def __repr__(self) -> str:
        return (
            f"<ShmRing {self.slot_count} x {self.slot_size} B policy={self.policy} head={self.head} "
            f"atomics={self._words.kind}{' closed' if self._closed else ''}>"
        )
