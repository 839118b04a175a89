"""The shared-memory half of :class:`~wshard_client.EpisodeWriter`: publishing its
batches into a ring slot instead of writing ``TIMESTEP_BATCH`` frames to the socket
(docs/PROTOCOL.md, "Shared-memory transport"). A mixin, so that the writer's socket path
stays as it was."""

from __future__ import annotations

from typing import Callable, Optional

from ._batch import ColumnBatch, PendingBatch, steps_per_frame
from ._connection import Connection
from ._shm import ShmInfo, ShmRing
from .errors import ProtocolError, ServerError, Timeout, WshardError

__all__ = ["ShmEpisodeMixin"]


class ShmEpisodeMixin:
    """Ring bookkeeping of an episode; ``_ring`` is ``None`` on the socket transport.

    With ``transport="shm"`` each batch goes into one slot of the ring instead of the
    socket (so a batch never exceeds a slot); ``FLUSH``, ``CLOSE`` and every server answer
    still use the socket. When the ring is full a push waits for the server to free a slot
    (``block``: a server ``ERROR``, the end of the connection or the timeout end the wait,
    and the batch stays pending), or drops timesteps (``drop_newest`` / ``drop_oldest``:
    :attr:`dropped_steps`; ``flush`` and ``wait_durable`` then wait only for what was
    sent, :attr:`published_seq`).
    """

    _ring: Optional[ShmRing]
    _client: Connection
    _pending: PendingBatch
    _failed: bool
    _max_frame: int
    _next_seq: int
    _sent_seq: int
    _published_seq: int

    @property
    def published_seq(self) -> int:
        """One past the last seq written to the socket or the ring (= ``sent_seq``
        unless the latest batches were dropped): what ``flush`` waits for."""
        return self._published_seq

    @property
    def transport(self) -> str:
        """How the timesteps travel: ``"socket"`` or ``"shm"``."""
        return "socket" if self._ring is None else "shm"

    @property
    def shm(self) -> Optional[ShmInfo]:
        """The shared-memory ring's geometry, policy and atomics; ``None`` on the socket."""
        return None if self._ring is None else self._ring.info

    @property
    def dropped_steps(self) -> int:
        """Timesteps dropped because the ring was full (drop policies; always 0 for the
        socket and ``block``). Their seqs were used: the server records a gap."""
        return 0 if self._ring is None else self._ring.dropped_steps

    @property
    def dropped_batches(self) -> int:
        """Batches (one ring slot's worth each) dropped; see :attr:`dropped_steps`."""
        return 0 if self._ring is None else self._ring.dropped_batches

    def _send_pending(self) -> None:
        raise NotImplementedError  # EpisodeWriter's

    def _send_pending_for_close(self) -> Optional[WshardError]:
        """``_send_pending`` for ``close``: a stuck or broken ring (``Timeout``,
        ``ProtocolError``) is returned instead of raised, so that ``CLOSE`` still goes out."""
        try:
            self._send_pending()
        except (Timeout, ProtocolError) as e:
            if self._ring is None:
                raise
            return e
        return None

    def _ring_check(self) -> None:
        """Between waits for ring space: raise a server ``ERROR`` or the connection's end."""
        try:
            self._client._check_usable()
        except ServerError:
            self._failed = True
            raise

    def _publish(self, ring: ShmRing, nbytes: int, count: int, fill: Callable[[memoryview], None]) -> bool:
        """One ring slot; ``False`` when dropped. Nothing is published when it raises."""
        try:
            return ring.publish(nbytes, count, fill, self._client.options.timeout, self._ring_check)
        except ProtocolError:
            self._failed = True  # the server broke the ring's rules: nothing more goes in
            raise

    def _publish_pending(self, ring: ShmRing) -> None:
        """The pending batch's records into one slot (one copy). When that raises
        (``Timeout``, a server ``ERROR``, ...) the batch stays pending: a later ``flush``
        or ``close`` retries it."""
        pending = self._pending
        records = pending.records()

        def fill(slot: memoryview) -> None:
            slot[:] = records

        try:
            published = self._publish(ring, records.nbytes, pending.count, fill)
        except BaseException:
            pending.unpin()  # a view of the old buffer may live on in the traceback
            raise
        pending.clear()
        self._sent_seq = self._next_seq
        if published:
            self._published_seq = self._next_seq

    def _publish_columns(self, ring: ShmRing, batch: ColumnBatch) -> None:
        """A column batch, written straight into as many slots as it needs (with numpy:
        vectorized copies from the columns into the mapping, no intermediate frame). A
        slot that raises is not published and its steps do not count as pushed."""
        rec = batch.record_bytes
        per = steps_per_frame(rec, self._max_frame)
        first = batch.first_seq
        for a in range(0, batch.n, per):
            b = min(a + per, batch.n)

            def fill(slot: memoryview, a: int = a, b: int = b) -> None:
                batch.write(slot, a, b)

            published = self._publish(ring, (b - a) * rec, b - a, fill)
            self._next_seq = self._sent_seq = first + b
            if published:
                self._published_seq = self._next_seq

    def _release_ring(self) -> None:
        """Unmap the ring and close its fds (the server keeps its own); idempotent."""
        if self._ring is not None:
            self._ring.close()
