""":class:`Recorder`: one connection to ``wshardd`` (the Rust client's ``Client``), the top
of the client: it opens the episodes and the streams recorded on it and owns them.

Bottom up: :class:`~wshard_client._connection.Connection` (the handshake, frames, requests,
events), the handles that write through it (:class:`~wshard_client.EpisodeWriter`,
:class:`~wshard_client.MultiStreamEpisode`), the version 2 calls
(:class:`~wshard_client.multistream.MultiStreamMixin`), and the :class:`Recorder`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Mapping, Optional, Sequence, Type, Union

from ._connection import DEFAULT_CLIENT_NAME, ClientOptions
from ._episode_spec import EpisodeSpec
from ._flight import Flight
from ._ring import RingPolicy, check_geometry, default_slot_bytes, default_slot_count
from ._schema import Channel, Durability, Timebase
from ._shm import ShmRing, shm_supported
from ._transport import Transport
from ._wire import RECORD_HEADER_BYTES, Outcome, encode_open, encode_shm_attach
from .episode import EpisodeWriter
from .errors import JoinRefused, ServerError, ServerJoinRefused, TransportError, WshardError
from .multistream import MultiStreamEpisode, MultiStreamMixin

__all__ = ["Recorder", "Client", "ClientOptions", "DEFAULT_CLIENT_NAME"]


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
        self._episode: Optional[EpisodeWriter] = None
        self._owned: Optional[MultiStreamEpisode] = None
        super().__init__(transport, client_name, options)

    # ------------------------------------------------------------------ properties

    @property
    def episode_open(self) -> Optional[EpisodeWriter]:
        """The episode (or stream) open on this connection, if any: the last one opened,
        until it is closed."""
        episode = self._episode
        return episode if episode is not None and not episode.closed else None

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
        if self.episode_open is not None:
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
        busy = self.episode_open
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
        flight: Flight = None,
        latched: bool = False,
    ) -> EpisodeWriter:
        """:meth:`open_episode` with the :class:`EpisodeSpec` fields as arguments; the
        writer is a context manager (completed on normal exit, aborted on exception).
        ``transport="shm"`` moves the timesteps through a shared-memory ring (see
        :meth:`open_episode` for ``slot_bytes``, ``slots`` and ``policy``). ``flight``
        and ``latched`` ask for flight mode (see :class:`EpisodeSpec`)."""
        spec = EpisodeSpec(episode_id, channels, env_id, tick_hz, timebase, durability, metadata, flight, latched)
        return self.open_episode(spec, transport, slot_bytes=slot_bytes, slots=slots, policy=policy)

    def _episode_closed(self, episode: EpisodeWriter) -> None:
        """Forget ``episode`` (its attach failed): the connection is free again."""
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
        ep = self.episode_open
        if ep is not None and not self._broken and not self._state.is_ended:
            try:
                ep.close(outcome)
            except WshardError:
                pass
        if ep is not None:
            ep._release_ring()
        self._episode = None
        owned = self._owned_open()
        if owned is not None and not self._broken and not self._state.is_ended:
            try:
                owned.close(outcome)
            except WshardError:
                pass
        self._owned = None
        self._shutdown()

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
