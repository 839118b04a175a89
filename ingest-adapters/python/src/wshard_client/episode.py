""":class:`EpisodeWriter`: pushing the timesteps of one open episode (the Rust client's
``EpisodeWriter``) through the :class:`~wshard_client._connection.Connection` it was
opened on. The :class:`~wshard_client.Recorder` (:mod:`wshard_client.client`) opens it;
once it is closed, the recorder may open another."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from ._batch import ColumnBatch, PendingBatch, checked_header
from ._closing import ClosesOnExit
from ._connection import Connection
from ._counters import counters_items, encode_counters
from ._episode_shm import ShmEpisodeMixin
from ._episode_spec import EpisodeSpec
from ._payload import Payloads, column_payload, layouts_of, order_payloads, step_payload
from ._shm import ShmRing
from ._trigger import TriggerRefused, TriggerWindow
from ._wire import BATCH_HEADER_BYTES, RECORD_HEADER_BYTES, FrameType, Outcome, encode_close, encode_flush
from .errors import EpisodeFailed, ErrorCode, NotPushed, SchemaError, ServerError, WshardError

__all__ = ["EpisodeWriter", "Step", "CloseSummary"]

_U32_MAX = 0xFFFFFFFF


class Step(NamedTuple):
    """One timestep for :meth:`EpisodeWriter.push_batch` (a plain 4-tuple works too)."""

    t_ns: int
    reward: float
    done: bool
    #: One payload per channel in schema order, or a dict by channel name.
    payloads: Payloads


@dataclass(frozen=True)
class CloseSummary:
    """What the server reported when the episode closed."""

    #: ``ACCEPTED{CLOSE}.up_to_seq``: timesteps recorded.
    timesteps: int
    #: Latest ``DURABLE.up_to_seq`` seen for the episode.
    durable_up_to: int
    #: The outcome sent.
    outcome: Outcome
    #: Timesteps this client dropped (shared-memory drop policies; 0 otherwise): pushed,
    #: never sent, not recorded.
    dropped_steps: int = 0


class EpisodeWriter(ShmEpisodeMixin, ClosesOnExit):
    """An open episode on a :class:`~wshard_client.Recorder`.

    Steps are numbered from 0 by the writer and collected into one pending
    ``TIMESTEP_BATCH`` frame; the batch is sent when it reaches ``batch_bytes`` or
    ``batch_steps``, when its oldest step is older than ``batch_delay`` at the next push,
    or on :meth:`flush`, :meth:`wait_durable`, :meth:`push_batch` and :meth:`close`.

    After the server refuses anything of the episode (an ``ERROR``), the error is raised
    once as :class:`ServerError` and every later call but :meth:`close` raises
    :class:`EpisodeFailed`: the server's and the writer's seqs no longer agree.

    With ``transport="shm"`` each batch goes into one slot of a shared-memory ring
    instead of the socket; see :class:`~wshard_client._episode_shm.ShmEpisodeMixin`.

    As a context manager it closes the episode as ``completed`` on a normal exit and as
    ``aborted`` when an exception leaves the block. Not thread-safe: use one writer from
    one thread.
    """

    def __init__(
        self, client: Connection, spec: EpisodeSpec, ring: Optional[ShmRing] = None, stream_of: Optional[str] = None
    ) -> None:
        self._client = client
        self._stream_of = stream_of
        self._state = client._state
        self._spec = spec
        self._layouts = layouts_of(spec.channels)
        self._step_bytes = spec.step_bytes
        self._record_bytes = RECORD_HEADER_BYTES + self._step_bytes
        self._max_frame = client.server_info.max_frame_bytes + 4
        opts = client.options
        self._batch_bytes = opts.batch_bytes
        self._batch_steps = opts.batch_steps
        self._batch_delay = opts.batch_delay
        self._pending = PendingBatch()
        self._next_seq = 0
        self._sent_seq = 0
        self._published_seq = 0
        self._ring = ring
        if ring is not None:
            self._max_frame = ring.capacity + BATCH_HEADER_BYTES
        self._failed = False
        self._closed = False
        self._summary: Optional[CloseSummary] = None

    # ------------------------------------------------------------------ properties

    @property
    def spec(self) -> EpisodeSpec:
        """The schema this episode was opened with."""
        return self._spec

    @property
    def episode_id(self) -> str:
        """The episode id (of a stream: its name)."""
        return self._spec.episode_id

    @property
    def stream_of(self) -> Optional[str]:
        """The multi-stream episode this writer records a stream of (``join_stream``), or
        ``None`` for an episode (``open_episode``)."""
        return self._stream_of

    @property
    def step_bytes(self) -> int:
        """Payload bytes of one timestep (all channels)."""
        return self._step_bytes

    @property
    def next_seq(self) -> int:
        """The seq the next pushed step gets (= steps pushed so far)."""
        return self._next_seq

    @property
    def sent_seq(self) -> int:
        """Every seq below it was written to the socket or the ring, or dropped."""
        return self._sent_seq

    @property
    def durable_seq(self) -> int:
        """Every timestep with ``seq < durable_seq`` is on stable storage, as of the latest
        ``DURABLE`` the reader thread has seen. Never blocks, never raises."""
        if self._summary is not None:
            return self._summary.durable_up_to
        return self._state.durable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def failed(self) -> bool:
        """Whether a server ``ERROR`` failed the episode."""
        return self._failed

    # ------------------------------------------------------------------ internals

    def _check_usable(self) -> None:
        if self._closed:
            raise WshardError(f"episode {self.episode_id!r} is closed")
        if self._failed:
            raise EpisodeFailed()
        try:
            self._client._check_usable()
        except ServerError:
            self._failed = True
            raise

    def _append(self, t_ns: int, reward: float, done: bool, payloads: Sequence[Any]) -> int:
        header = checked_header(self._next_seq, t_ns, reward, done)
        pending = self._pending
        if pending.count and (len(pending) + self._record_bytes > self._max_frame or pending.count == _U32_MAX):
            self._send_pending()
        pending.append(header, payloads)
        seq = self._next_seq
        self._next_seq = seq + 1
        return seq

    def _batch_due(self) -> bool:
        p = self._pending
        if len(p) >= self._batch_bytes or p.count >= self._batch_steps:
            return True
        delay = self._batch_delay
        return delay is not None and p.since is not None and time.monotonic() - p.since >= delay

    def _write(self, frame: Any) -> None:
        try:
            self._client._write(frame)
        except ServerError:
            self._failed = True
            raise

    def _deliver_batch(self, frame: Any) -> None:
        """Write one whole ``TIMESTEP_BATCH`` frame to the socket (the socket transport;
        with a ring, batches go through :meth:`_publish` instead)."""
        self._write(frame)

    def _send_pending(self) -> None:
        pending = self._pending
        if pending.count == 0:
            return
        if self._ring is not None:
            self._publish_pending(self._ring)
            return
        self._deliver_batch(pending.take())
        self._sent_seq = self._published_seq = self._next_seq

    def _wait_durable_up_to(self, up_to: int, what: str, timeout: Optional[float]) -> int:
        if timeout is None:
            timeout = self._client.options.timeout
        try:
            return self._state.wait(what, timeout, lambda st: st.durable if st.durable >= up_to else None)
        except ServerError:
            self._failed = True
            raise

    # ------------------------------------------------------------------ pushing

    def push(self, t_ns: int, reward: float, done: bool, payloads: Payloads) -> int:
        """Push one timestep and return its seq. ``payloads``: one per channel in schema
        order, or a dict by channel name (numpy arrays, buffers, numbers or lists; see
        :mod:`wshard_client._payload`). The step is sent with the pending batch.

        Raises:
            SchemaError: a payload does not match its channel (nothing queued).
            ServerError: an ``ERROR`` the server sent since the last call (then
                :class:`EpisodeFailed` on every later call).
            TransportError: the connection is gone.
        """
        self._check_usable()
        lays = self._layouts
        bufs = [step_payload(lay, v) for lay, v in zip(lays, order_payloads(lays, payloads))]
        seq = self._append(t_ns, reward, done, bufs)
        if self._batch_due():
            self._send_pending()
        return seq

    def push_packed(self, t_ns: int, reward: float, done: bool, payload: Any) -> int:
        """:meth:`push` with all channels' payloads already concatenated in schema order
        (any buffer of exactly :attr:`step_bytes` bytes).

        Raises:
            SchemaError: ``payload`` is not exactly one step; otherwise as :meth:`push`.
        """
        self._check_usable()
        view = memoryview(payload)
        if view.nbytes != self._step_bytes:
            raise SchemaError(
                f"packed payload is {view.nbytes} bytes, schema step is {self._step_bytes} bytes",
                ErrorCode.PAYLOAD_SIZE,
                "*",
            )
        flat = view.cast("B") if view.c_contiguous and (view.ndim != 1 or view.format != "B") else view
        seq = self._append(t_ns, reward, done, [flat if view.c_contiguous else view.tobytes()])
        if self._batch_due():
            self._send_pending()
        return seq

    def push_batch(
        self,
        steps: Optional[Iterable[Union[Step, Sequence[Any]]]] = None,
        *,
        t_ns: Any = None,
        payloads: Optional[Payloads] = None,
        reward: Any = 0.0,
        done: Any = False,
    ) -> range:
        """Push several steps and send them now (with anything pending), without waiting
        for durability. Everything is checked before anything is queued. Returns the
        range of their seqs.

        Two forms:

        - ``push_batch([Step(t_ns, reward, done, payloads), ...])`` (or 4-tuples);
        - columns: ``push_batch(t_ns=ts, payloads=[col0, col1, ...], reward=r, done=d)``
          where ``ts`` holds N timestamps, each column N steps of its channel (a numpy
          array of shape ``(N, *shape)``, a buffer of ``N x step`` bytes or a sequence of N
          per-step payloads; a dict by name works too), and ``reward`` / ``done`` are
          scalars or N values. With numpy the frames are built with vectorized copies,
          without a Python loop per step.

        Raises:
            As :meth:`push`.
        """
        self._check_usable()
        if steps is not None:
            if t_ns is not None or payloads is not None:
                raise TypeError("push_batch: pass either steps or t_ns= and payloads= columns, not both")
            return self._push_steps(steps)
        if t_ns is None or payloads is None:
            raise TypeError("push_batch: columns need both t_ns= and payloads=")
        n = len(t_ns)
        first = self._next_seq
        if n == 0:
            return range(first, first)
        lays = self._layouts
        cols = [column_payload(lay, v, n) for lay, v in zip(lays, order_payloads(lays, payloads))]
        batch = ColumnBatch(first, t_ns, reward, done, cols, self._step_bytes)
        self._send_pending()
        if self._ring is not None:
            self._publish_columns(self._ring, batch)
            return range(first, self._next_seq)
        for m, frame in batch.frames(self._column_frame_bytes()):
            self._next_seq += m
            self._deliver_batch(frame)
            self._sent_seq = self._published_seq = self._next_seq
        return range(first, self._next_seq)

    def _column_frame_bytes(self) -> int:
        """Frame size for column batches: large enough that the per-frame overhead
        vanishes, small enough for the server to work on one frame while the next is
        built; never above ``max_frame_bytes``."""
        return min(self._max_frame, max(self._batch_bytes, 4 << 20))

    def _push_steps(self, steps: Iterable[Union[Step, Sequence[Any]]]) -> range:
        lays = self._layouts
        checked = []
        for i, s in enumerate(steps):
            if len(s) != 4:
                raise TypeError(f"push_batch: step {i} has {len(s)} fields, expected (t_ns, reward, done, payloads)")
            t, r, d, p = s
            checked.append((t, r, d, [step_payload(lay, v) for lay, v in zip(lays, order_payloads(lays, p))]))
        first = self._next_seq
        for t, r, d, bufs in checked:
            self._append(t, r, d, bufs)
        self._send_pending()
        return range(first, self._next_seq)

    # ------------------------------------------------------------------ durability

    def flush(self, timeout: Optional[float] = None) -> int:
        """Send what is pending plus ``FLUSH``, and wait until a ``DURABLE`` covers every
        step pushed (``DURABLE`` means fsynced: journal in ``ack`` durability, a finalized
        chunk plus manifest in ``chunk``); with a drop policy every step sent
        (:attr:`published_seq`). Returns the durable ``up_to_seq``.

        Raises:
            ServerError, Timeout, TransportError, EpisodeFailed.
        """
        self._check_usable()
        self._send_pending()
        self._write(encode_flush())
        return self._wait_durable_up_to(self._published_seq, "DURABLE after FLUSH", timeout)

    def wait_durable(self, seq: int, timeout: Optional[float] = None) -> int:
        """Wait until timestep ``seq`` is durable (a ``DURABLE`` with ``up_to_seq > seq``);
        returns the durable ``up_to_seq``. Sends the pending batch if ``seq`` is in it, but
        no ``FLUSH``: the server's fsync policy decides when (in ``chunk`` durability that
        is when a chunk is finalized; use :meth:`flush` to force it). With a drop policy
        ``seq`` may have been dropped (never durable): the wait then ends once every step
        sent up to it is durable.

        Raises:
            NotPushed: ``seq`` was not pushed yet; otherwise as :meth:`flush`.
        """
        self._check_usable()
        if seq >= self._next_seq:
            raise NotPushed(seq, self._next_seq)
        if seq >= self._sent_seq:
            self._send_pending()
        return self._wait_durable_up_to(min(seq + 1, self._published_seq), "DURABLE", timeout)

    # ------------------------------------------------------------------ events

    def send_event(self, t_ns: int, label: str, data: Any, kind: Optional[Union[str, int]] = None) -> int:
        """Send an event (``EVENT``, protocol version 2) beside this stream or episode and
        wait until it is durable (``ACCEPTED{EVENT}``); returns its seq among the
        episode's events. ``data`` and ``kind`` as
        :meth:`~wshard_client.MultiStreamEpisode.send_event`. Pending timesteps are not
        sent by it: the event has its own ``t_ns``, seq and acknowledgement.

        Raises:
            NeedsVersion: the connection speaks version 1.
            SchemaError: the data is not what its kind says (nothing sent).
            ServerError: the server refused the event (``LIMIT``, ``MALFORMED_FRAME``,
                ``STORAGE``: the recording carries on), or an ``ERROR`` about the
                timesteps, which fails the episode as in :meth:`push`.
            EpisodeFailed, Timeout, TransportError.
        """
        self._check_usable()
        try:
            answer = self._client._send_event(t_ns, label, data, kind)
        except ServerError:
            self._failed = True
            raise
        if isinstance(answer, ServerError):
            raise answer
        return answer

    def trigger(
        self,
        pre_s: float = 30.0,
        post_s: float = 10.0,
        reason: str = "",
        streams: Optional[Sequence[str]] = None,
        at_ns: Optional[int] = None,
    ) -> TriggerWindow:
        """Send a flight trigger (``TRIGGER``, protocol version 2) beside this stream or
        episode and wait for the window episode's name, as
        :meth:`~wshard_client.Recorder.trigger`. Pending timesteps are not sent by it:
        :meth:`flush` first what the window must hold.

        Raises:
            NeedsVersion: the connection speaks version 1.
            TriggerRefused: the daemon refused the trigger (the recording carries on).
            ServerError: an ``ERROR`` about the timesteps, which fails the episode as in
                :meth:`push`. EpisodeFailed, Timeout, TransportError.
        """
        self._check_usable()
        try:
            answer = self._client._send_trigger(pre_s, post_s, reason, streams, at_ns)
        except TriggerRefused:
            raise  # refused before sending: the episode carries on
        except ServerError:
            self._failed = True
            raise
        if isinstance(answer, ServerError):
            raise answer
        return answer

    def send_counters(self, counters: Mapping[str, int]) -> None:
        """Send the producer's own counters (``COUNTERS``, protocol version 2): each
        ``name -> value`` replaces the value the daemon keeps for that name in this stream
        (or episode), shown in ``wshard status`` and the metrics until the stream ends.
        Names ``[a-z0-9_]{1,32}``, values ``0..=2**64-1``, at most 32 per call. Nothing is
        answered or awaited and nothing is durable; pending timesteps are not sent by it.

        Raises:
            NeedsVersion: the connection speaks version 1.
            SchemaError: code ``MALFORMED_FRAME``, naming the counter (nothing sent).
            ServerError: an earlier ``ERROR`` (fails the episode as in :meth:`push`).
            EpisodeFailed, TransportError.
        """
        self._client._require_version(FrameType.COUNTERS)
        self._check_usable()
        self._write(encode_counters(counters_items(counters)))

    # ------------------------------------------------------------------ closing

    def close(self, outcome: Union[Outcome, str, int] = Outcome.COMPLETED) -> CloseSummary:
        """Send what is pending (unless the episode failed) and ``CLOSE``, then wait for
        ``ACCEPTED{CLOSE}``. ``outcome``: ``"completed"`` or ``"aborted"`` (data kept, the
        manifest says ``aborted``). The connection can open another episode afterwards.
        A second call returns the first summary.

        With shared memory the ring is released; a pending batch that cannot go into it
        (``Timeout``, a broken ring) does not stop ``CLOSE``: its error is raised after.

        Raises:
            ServerError: an ``ERROR`` not yet reported or one answering the close (the
                ``CLOSE`` is sent regardless, so the server ends the episode).
            Timeout, TransportError, ProtocolError.
        """
        if self._summary is not None:
            return self._summary
        if self._closed:
            raise WshardError(f"episode {self.episode_id!r} is closed (its close failed)")
        out = Outcome.parse(outcome)
        self._closed = True
        state = self._state
        earlier = state.take_error()
        closes = state.closes
        unsent: Optional[WshardError] = None
        try:
            if not (self._failed or earlier is not None):
                unsent = self._send_pending_for_close()
            self._client._write(encode_close(out))
            timeout = self._client.options.timeout
            timesteps = state.wait("ACCEPTED{CLOSE}", timeout, lambda st: st.last_close if st.closes > closes else None)
        except WshardError:
            if earlier is not None:
                raise earlier from None
            raise
        finally:
            self._release_ring()
        self._summary = CloseSummary(timesteps, state.durable, out, self.dropped_steps)
        if earlier is not None:
            raise earlier
        if unsent is not None:
            raise unsent
        # An ERROR that arrived while closing is reported here, not by a later call.
        late = state.take_error()
        if late is not None:
            raise late
        return self._summary

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("failed" if self._failed else "open")
        return f"<EpisodeWriter {self.episode_id!r} {state} next_seq={self._next_seq} durable={self.durable_seq}>"
