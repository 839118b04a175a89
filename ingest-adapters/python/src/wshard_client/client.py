""":class:`Recorder`: one connection to ``wshardd`` (the Rust client's ``Client``).

Design: the caller's thread encodes steps straight into one pending ``TIMESTEP_BATCH``
frame and writes it to the socket; a background reader thread consumes the server's
asynchronous ``DURABLE`` / ``ERROR`` / ``ACCEPTED`` frames and publishes them through a
``threading.Condition`` (see :mod:`wshard_client._reader`). A reader thread keeps the
receive side drained even while a large batch write is blocked.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Mapping, Optional, Sequence, Tuple, Type, Union

from ._episode_spec import EpisodeSpec
from ._reader import ServerInfo, SharedState, start_reader
from ._ring import RingPolicy, check_geometry, default_slot_bytes, default_slot_count
from ._schema import Channel, Durability, Timebase
from ._shm import ShmRing, shm_supported
from ._transport import Buffer, Transport, UnixSocketTransport
from ._wire import (
    NEWEST_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    RECORD_HEADER_BYTES,
    Outcome,
    encode_hello,
    encode_open,
    encode_shm_attach,
)
from .episode import EpisodeWriter
from .errors import JoinRefused, ProtocolError, ServerError, ServerJoinRefused, TransportError, WshardError
from .multistream import MultiStreamEpisode, MultiStreamMixin

__all__ = ["Recorder", "Client", "ClientOptions", "DEFAULT_CLIENT_NAME"]

#: ``HELLO.client_name`` when none is given.
DEFAULT_CLIENT_NAME = "wshard-client-py/0.1.0"


@dataclass(frozen=True)
class ClientOptions:
    """Tuning of a :class:`Recorder` (the Rust ``ClientOptions``)."""

    #: Send the pending batch once its frame reaches this many bytes. Batches never exceed
    #: the server's ``max_frame_bytes``.
    batch_bytes: int = 256 * 1024
    #: Send the pending batch once it holds this many steps.
    batch_steps: int = 4096
    #: Send the pending batch on the next ``push`` once its oldest step has waited this
    #: long (seconds), so slow loops do not sit on data; ``None`` = sizes only.
    batch_delay: Optional[float] = 0.010
    #: How long to wait for the server (seconds): handshake, ``OPEN``, ``CLOSE``,
    #: ``flush``, ``wait_durable``, and each socket write; ``None`` = forever.
    timeout: Optional[float] = 60.0
    #: The protocol version ``HELLO`` asks for: 1 (default, what every client before
    #: version 2 speaks) or 2 (multi-stream episodes and events:
    #: :meth:`Recorder.open_multistream_episode`, :meth:`Recorder.join_stream`,
    #: ``send_event``). The connection speaks what ``HELLO_OK`` answers
    #: (:attr:`Recorder.protocol_version`).
    protocol_version: int = PROTOCOL_VERSION


class Recorder(MultiStreamMixin):
    """A blocking connection to ``wshardd`` speaking protocol version 1, or 2 when
    ``protocol_version=2`` asks for it; one episode (or stream) at a time.

    Use :meth:`connect`, then :meth:`episode` (or :meth:`open_episode`)::

        with Recorder.connect("/run/wshardd/wshardd.sock", "teleop/0.3") as rec:
            with rec.episode(episode_id="ep-0001", env_id="Franka", tick_hz=100.0,
                             channels=[Channel("joints", "f32", (7,))]) as ep:
                ep.push(t_ns, 0.0, False, [joints])

    An ``ERROR`` from the server is raised by the next call as :class:`ServerError`.
    Not thread-safe: use a recorder (and its episode) from one thread; the reader thread
    is internal. Python ignores SIGPIPE, so a write to a closed connection raises.
    """

    def __init__(
        self,
        transport: Transport,
        client_name: str = DEFAULT_CLIENT_NAME,
        options: Optional[ClientOptions] = None,
    ) -> None:
        """Handshake over an already connected ``transport`` (see :meth:`connect`): send
        ``HELLO`` and wait for ``HELLO_OK``.

        Raises:
            ServerError: the server refused the handshake (e.g. ``OVERLOADED``).
            ProtocolError: it speaks another protocol version.
            Timeout, TransportError.
        """
        self._transport = transport
        self._options = options or ClientOptions()
        self._state = SharedState()
        self._broken = False
        self._closed = False
        self._episode: Optional[EpisodeWriter] = None
        self._owned: Optional[MultiStreamEpisode] = None
        self._reader: threading.Thread = start_reader(transport, self._state)
        # A recorder dropped without close() still releases its socket and reader thread
        # (the server then finalizes an open episode as `interrupted`).
        self._finalizer = weakref.finalize(self, transport.shutdown)
        asked = self._options.protocol_version
        try:
            if not PROTOCOL_VERSION <= asked <= NEWEST_PROTOCOL_VERSION:
                raise ValueError(f"protocol_version {asked}: this client speaks 1..={NEWEST_PROTOCOL_VERSION}")
            self._write(encode_hello(client_name, asked))
            info = self._state.wait("HELLO_OK", self._options.timeout, lambda st: st.hello)
            # The server answers the version the connection speaks: at most the one asked.
            if not PROTOCOL_VERSION <= info.version <= asked:
                raise ProtocolError(
                    f"unexpected from server: HELLO_OK protocol_version {info.version} "
                    f"(this client asked for {asked})"
                )
        except BaseException:
            self._shutdown()
            raise
        self._info: ServerInfo = info

    @classmethod
    def connect(
        cls,
        path: Union[str, "os.PathLike[str]"],
        client_name: str = DEFAULT_CLIENT_NAME,
        *,
        options: Optional[ClientOptions] = None,
        **option_overrides: Any,
    ) -> "Recorder":
        """Connect to the Unix socket at ``path`` and handshake.

        ``option_overrides`` set single :class:`ClientOptions` fields, e.g.
        ``Recorder.connect(path, batch_delay=None, timeout=10.0)``.

        Raises:
            TransportError: the socket cannot be reached; as :meth:`__init__` otherwise.
        """
        opts = replace(options or ClientOptions(), **option_overrides)
        transport = UnixSocketTransport.connect(path, opts.timeout)
        return cls(transport, client_name, opts)

    # ------------------------------------------------------------------ properties

    @property
    def server_info(self) -> ServerInfo:
        """What the server announced in ``HELLO_OK``."""
        return self._info

    @property
    def protocol_version(self) -> int:
        """The protocol version the connection speaks (what ``HELLO_OK`` answered)."""
        return self._info.version

    @property
    def options(self) -> ClientOptions:
        """The options in use."""
        return self._options

    @property
    def transport(self) -> Transport:
        """The byte transport (a :class:`UnixSocketTransport`; shared memory is chosen per
        episode, see :meth:`open_episode`)."""
        return self._transport

    @property
    def episode_open(self) -> Optional[EpisodeWriter]:
        """The episode open on this connection, if any."""
        return self._episode

    # ------------------------------------------------------------------ episodes

    def open_episode(
        self,
        spec: EpisodeSpec,
        transport: str = "socket",
        *,
        slot_bytes: int = 0,
        slots: int = 0,
        policy: Union[RingPolicy, str, int] = RingPolicy.BLOCK,
    ) -> EpisodeWriter:
        """Check ``spec`` locally, send ``OPEN``, wait for ``ACCEPTED{OPEN}``.

        ``transport``: ``"socket"`` (``TIMESTEP_BATCH`` frames on the socket) or ``"shm"``
        (a shared-memory ring of ``slots`` slots of ``slot_bytes`` bytes, one batch per
        slot, attached with ``SHM_ATTACH`` right after ``ACCEPTED{OPEN}``; 0 = the Rust
        client's defaults: 64 slots (fewer, down to 8, when the ring would exceed 16 MiB),
        room for ``max(1, 256 KiB / record)`` timesteps per
        slot). ``policy``: what a push does when the ring is full, ``"block"`` (wait),
        ``"drop_newest"`` or ``"drop_oldest"`` (drop timesteps, see
        :attr:`EpisodeWriter.dropped_steps`). If the attach fails the episode is closed
        ``aborted`` and the error raised.

        Raises:
            SchemaError: the schema breaks the protocol's rules, or the ring's geometry
                (code ``BAD_SHM``); nothing sent.
            ServerError: the server refused it (``BAD_SCHEMA``, ``EPISODE_EXISTS``,
                ``BAD_SHM``, ...) or an earlier ``ERROR`` not yet reported.
            WshardError: an episode or a stream is still open on this connection (one
                connection records one at a time).
            ValueError: an unknown transport or policy, ring options for the socket.
            Timeout, TransportError (also: shared memory is not available here).
        """
        self._check_usable()
        spec.validate(self._info.max_frame_bytes)
        frame = encode_open(spec)
        return self._open_writer(spec, frame, "ACCEPTED{OPEN}", "opens", transport, slot_bytes, slots, policy)

    def _request(self, frame: bytes, what: str, counter: str, answer: Optional[str] = None) -> int:
        """Send ``frame`` and wait for its ``ACCEPTED`` (``what`` names it in a timeout):
        until the shared state's counter ``counter`` has moved. Returns the state's
        attribute ``answer`` read then (0 without one)."""
        state = self._state
        before = getattr(state, counter)
        self._write(frame)

        def ready(st: SharedState) -> Optional[int]:
            if getattr(st, counter) <= before:
                return None
            return 0 if answer is None else int(getattr(st, answer))

        return state.wait(what, self._options.timeout, ready)

    def _open_writer(
        self,
        spec: EpisodeSpec,
        frame: bytes,
        what: str,
        counter: str,
        transport: str,
        slot_bytes: int,
        slots: int,
        policy: Union[RingPolicy, str, int],
        stream_of: Optional[str] = None,
    ) -> EpisodeWriter:
        """Send ``OPEN`` or ``STREAM_OPEN`` of a stream of ``stream_of`` (``frame``,
        checked), wait for its ``ACCEPTED`` and return the writer, with its ring attached
        for ``transport="shm"``. A refused ``STREAM_OPEN`` raises a
        :class:`JoinRefused`."""
        if self._episode is not None:
            raise self._busy(spec.episode_id, stream_of)
        ring = self._make_ring(spec, transport, slot_bytes, slots, RingPolicy.parse(policy))
        try:
            self._request(frame, what, counter)
        except ServerError as e:
            if ring is not None:
                ring.close()
            if stream_of is None or isinstance(e, JoinRefused):
                raise
            raise ServerJoinRefused(e.code, e.message) from None
        except BaseException:
            if ring is not None:
                ring.close()
            raise
        episode = self._episode = EpisodeWriter(self, spec, ring, stream_of)
        if ring is not None:
            self._attach(episode, ring)
        return episode

    def _busy(self, opening: str, stream_of: Optional[str]) -> WshardError:
        """The refusal of opening ``opening`` (a stream of ``stream_of``, or an episode)
        while this connection records another: a connection records one at a time."""
        busy = self._episode
        assert busy is not None
        held = (
            f"episode {busy.episode_id!r}"
            if busy.stream_of is None
            else f"stream {busy.episode_id!r} of episode {busy.stream_of!r}"
        )
        if stream_of is not None:
            return JoinRefused(
                f"STREAM_OPEN {opening!r}: {held} is still recording on this connection; a connection "
                f"records one stream at a time: join {opening!r} from a connection of its own "
                f"(Recorder.connect(..., protocol_version=2)), or close {busy.episode_id!r} first"
            )
        return WshardError(
            f"OPEN {opening!r}: {held} is still recording on this connection; a connection records one "
            f"episode at a time: open {opening!r} on a connection of its own, or close {busy.episode_id!r} first"
        )

    def _make_ring(
        self, spec: EpisodeSpec, transport: str, slot_bytes: int, slots: int, policy: RingPolicy
    ) -> Optional[ShmRing]:
        """The ring for ``transport="shm"`` (geometry checked), ``None`` for the socket."""
        kind = transport.strip().lower() if isinstance(transport, str) else transport
        if kind == "socket":
            if slot_bytes or slots or policy != RingPolicy.BLOCK:
                raise ValueError("slot_bytes, slots and policy are options of transport='shm'")
            return None
        if kind != "shm":
            raise ValueError(f"unknown transport {transport!r} (socket or shm)")
        why = shm_supported()
        if why is not None:
            raise TransportError(why)
        record = RECORD_HEADER_BYTES + spec.step_bytes
        max_frame = self._info.max_frame_bytes
        size = slot_bytes or default_slot_bytes(record, max_frame)
        count = slots or default_slot_count(size)
        check_geometry(size, count, record, max_frame)
        return ShmRing(size, count, policy)

    def _attach(self, episode: EpisodeWriter, ring: ShmRing) -> None:
        """Send ``SHM_ATTACH`` with the ring's fds and wait for ``ACCEPTED{SHM_ATTACH}``;
        on failure close the episode ``aborted`` and raise. The policy byte is sent only
        for drop policies, as the Rust client does."""
        attaches = self._state.attaches
        try:
            frame = encode_shm_attach(ring.slot_size, ring.slot_count, int(ring.policy) if ring.policy.drops else None)
            self._write(frame, ring.fds)
            self._state.wait(
                "ACCEPTED{SHM_ATTACH}", self._options.timeout, lambda st: True if st.attaches > attaches else None
            )
        except BaseException:
            ring.close()
            if not self._broken and not self._state.is_ended:
                try:
                    episode.close(Outcome.ABORTED)
                except WshardError:
                    pass
            self._episode_closed(episode)
            raise

    def episode(
        self,
        episode_id: str,
        channels: Sequence[Channel],
        env_id: str = "",
        tick_hz: float = 0.0,
        *,
        timebase: Union[Timebase, str, int] = Timebase.TICKS,
        durability: Union[Durability, str, int] = Durability.ACK,
        metadata: Union[Mapping[str, Any], str, None] = None,
        transport: str = "socket",
        slot_bytes: int = 0,
        slots: int = 0,
        policy: Union[RingPolicy, str, int] = RingPolicy.BLOCK,
    ) -> EpisodeWriter:
        """:meth:`open_episode` with the :class:`EpisodeSpec` fields as arguments; the
        writer is a context manager (completed on normal exit, aborted on exception).
        ``transport="shm"`` moves the timesteps through a shared-memory ring (see
        :meth:`open_episode` for ``slot_bytes``, ``slots`` and ``policy``)."""
        spec = EpisodeSpec(episode_id, channels, env_id, tick_hz, timebase, durability, metadata)
        return self.open_episode(spec, transport, slot_bytes=slot_bytes, slots=slots, policy=policy)

    # ------------------------------------------------------------------ low level

    def connection_error(self) -> Optional[WshardError]:
        """What failed or ended this connection, seen without sending, taking or raising
        anything (for a thread that watches connections another thread writes on): the
        oldest server ``ERROR`` not yet reported (a :class:`ServerError`; the next call
        still raises it), else the end of the connection (a :class:`TransportError`), else
        ``None``."""
        return self._state.peek_error()

    def send_raw(self, frame: Buffer) -> None:
        """Write already encoded bytes as they are (see ``wshard_client._wire``), for
        tools and tests; bypasses every client-side check and the episode's seq
        bookkeeping, so the server may refuse what follows."""
        self._write(frame)

    def _check_usable(self) -> None:
        """Fail fast on a closed or broken connection or a pending server ``ERROR``."""
        err = self._state.take_error()
        if err is not None:
            raise err
        if self._closed:
            raise TransportError("the recorder is closed")
        if self._broken:
            raise TransportError("connection closed (an earlier write failed)")
        if self._state.is_ended:
            end = self._state.end_error()
            if end is not None:
                raise end

    def _write(self, data: Buffer, fds: Optional[Tuple[int, ...]] = None) -> None:
        """Write whole frames (with ``fds`` attached, ``SCM_RIGHTS``); on failure the
        connection is marked broken (the stream may hold half a frame) and the server's
        last ``ERROR`` is preferred over ``EPIPE``."""
        if self._broken or self._closed:
            raise TransportError("connection closed")
        try:
            if fds:
                self._transport.send_fds(data, fds)
            else:
                self._transport.send(data)
        except OSError as e:
            self._broken = True
            self._transport.shutdown_write()
            self._state.wait_end(1.0)
            err: Optional[WshardError] = self._state.take_error()
            raise (err or TransportError(f"socket write failed: {e}")) from e
        except BaseException:
            # Timeout, KeyboardInterrupt, ...: part of the frame may be out; the stream
            # can no longer be parsed by the server, so nothing more is sent.
            self._broken = True
            self._transport.shutdown_write()
            raise

    def _episode_closed(self, episode: EpisodeWriter) -> None:
        if self._episode is episode:
            self._episode = None

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the episode or stream still open (as ``aborted``, errors ignored), then
        a multi-stream episode this connection owns (``aborted`` too), then the
        connection; waits for the reader thread. Idempotent."""
        self._close_with(Outcome.ABORTED)

    def _close_with(self, outcome: Outcome) -> None:
        """:meth:`close`, closing what is still open with ``outcome``."""
        if self._closed:
            return
        ep = self._episode
        if ep is not None and not self._broken and not self._state.is_ended:
            try:
                ep.close(outcome)
            except WshardError:
                pass
        if ep is not None:
            ep._release_ring()
        self._episode = None
        owned = self._owned
        if owned is not None and not self._broken and not self._state.is_ended:
            try:
                owned.close(outcome)
            except WshardError:
                pass
        self._owned = None
        self._shutdown()

    def _shutdown(self) -> None:
        self._closed = True
        self._finalizer.detach()
        self._transport.shutdown()
        self._reader.join(timeout=5.0)
        self._transport.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        """:meth:`close`; when a :class:`JoinRefused` leaves the block (a refused join
        changed nothing recording), what is still open is closed ``completed``."""
        self._close_with(Outcome.COMPLETED if isinstance(exc, JoinRefused) else Outcome.ABORTED)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Recorder {self._info.server_name if hasattr(self, '_info') else '?'} {state}>"


#: The Rust client's name for the same class.
Client = Recorder
