"""Multi-stream episodes (protocol version 2, docs/PROTOCOL.md "Version 2"):
:class:`MultiStreamEpisode`, the owner's handle, and :class:`MultiStreamMixin`, the
:class:`~wshard_client.Recorder` calls that create an episode and join one with a stream
(the Rust client's ``multistream.rs``). Events are sent by the connection itself
(:mod:`wshard_client._connection`, the Rust client's ``events.rs``).

A robot is not one clock: producers on any connections (this one too) join an open
episode with one **stream** each, with its own clock and channels; a stream is recorded by
an :class:`~wshard_client.EpisodeWriter` exactly as a version 1 episode (seqs and
``DURABLE`` count the stream's timesteps, ``close`` ends the stream).

Below the :class:`~wshard_client.Recorder` (:mod:`wshard_client.client`), which is a
:class:`MultiStreamMixin` and opens the writers (:meth:`MultiStreamMixin._open_writer`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from ._closing import ClosesOnExit
from ._connection import Connection
from ._episode_spec import EpisodeSpec
from ._flight import Flight
from ._events import EventKind
from ._trigger import TriggerWindow
from ._ring import RingPolicy
from ._schema import Channel, Durability, Timebase
from ._validate import validate_episode_open, validate_stream
from ._wire import FrameType, Outcome, encode_episode_close, encode_episode_open, encode_stream_open
from .episode import EpisodeWriter
from .errors import ServerError, WshardError

__all__ = ["MultiStreamEpisode", "MultiStreamMixin"]


class MultiStreamMixin(Connection):
    """The version 2 calls of :class:`~wshard_client.Recorder`, on its connection: a
    multi-stream episode created and owned, streams joined. The writers are opened by
    the recorder (:meth:`_open_writer`)."""

    #: The multi-stream episode this connection created last (owned until it is closed).
    _owned: Optional["MultiStreamEpisode"]

    def _owned_open(self) -> Optional["MultiStreamEpisode"]:
        """The multi-stream episode this connection owns, if any: the last one created,
        until it is closed."""
        owned = self._owned
        return owned if owned is not None and not owned.closed else None

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
        """Send ``OPEN`` or ``STREAM_OPEN`` and return the writer: the
        :class:`~wshard_client.Recorder`'s, which owns the writers it opens."""
        raise NotImplementedError

    def open_multistream_episode(
        self,
        episode_id: str,
        env_id: str = "",
        metadata: Union[Mapping[str, Any], str, None] = None,
        *,
        flight: Flight = None,
    ) -> "MultiStreamEpisode":
        """Create a multi-stream episode owned by this connection (``EPISODE_OPEN``) and
        wait for ``ACCEPTED``. Producers then join it with :meth:`join_stream`.

        Raises:
            NeedsVersion: the connection speaks version 1 (connect with
                ``protocol_version=2``).
            SchemaError: a bad id or metadata; nothing sent.
            ServerError: ``EPISODE_EXISTS``, ``ALREADY_OPEN``, ``DISK_LOW``, ... or an
                earlier ``ERROR`` not yet reported.
            WshardError: this recorder owns an open episode already.
            Timeout, TransportError.
        """
        self._require_version(FrameType.EPISODE_OPEN)
        self._check_usable()
        held = self._owned_open()
        if held is not None:
            raise WshardError(f"this connection owns episode {held.episode_id!r} still; close it first")
        metadata_json = EpisodeSpec(episode_id, [], env_id, metadata=metadata, flight=flight).metadata_json
        validate_episode_open(episode_id, metadata_json)
        self._request(encode_episode_open(episode_id, env_id, metadata_json), "ACCEPTED{EPISODE_OPEN}", "episode_opens")
        owned = self._owned = MultiStreamEpisode(self, episode_id)
        return owned

    def join_stream(
        self,
        episode_id: str,
        stream: str,
        channels: Sequence[Channel],
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
        """Join the open multi-stream episode ``episode_id`` with the stream ``stream``
        (``STREAM_OPEN``); the arguments are :meth:`~wshard_client.Recorder.episode`'s
        (``transport="shm"`` attaches a ring). Returns the stream's
        :class:`~wshard_client.EpisodeWriter` (a context manager); its ``close`` ends the
        stream, and the connection may then join or open something else.

        A connection records one stream at a time: each stream joins from a connection of
        its own (the owner's included: it may record one stream of its episode itself).

        Raises:
            NeedsVersion: the connection speaks version 1.
            SchemaError: a bad episode id, stream name (code ``BAD_EPISODE_ID``) or schema
                (naming the stream and the field); nothing sent.
            ServerJoinRefused: the server refused the join (a :class:`ServerError` and a
                :class:`JoinRefused`): ``UNKNOWN_EPISODE``, ``EPISODE_CLOSED``,
                ``STREAM_EXISTS``, ``BAD_SCHEMA``, ``ALREADY_OPEN``, ``DISK_LOW``, ...
            ServerError: ``BAD_SHM`` (the ring's attach), or an earlier ``ERROR``.
            JoinRefused: a stream or an episode is still recording on this connection;
                nothing sent.
            Timeout, TransportError.

        A :class:`JoinRefused` aborts nothing: leaving a ``with`` block with it closes
        what the block closes ``completed``.
        """
        spec = EpisodeSpec(stream, channels, "", tick_hz, timebase, durability, metadata, flight, latched)
        return self.open_stream(episode_id, spec, transport, slot_bytes=slot_bytes, slots=slots, policy=policy)

    def open_stream(
        self,
        episode_id: str,
        spec: EpisodeSpec,
        transport: str = "socket",
        *,
        slot_bytes: int = 0,
        slots: int = 0,
        policy: Union[RingPolicy, str, int] = RingPolicy.BLOCK,
    ) -> EpisodeWriter:
        """:meth:`join_stream` from a spec object whose ``episode_id`` is the stream name
        (its ``env_id`` is not sent: the episode's is the stream's).

        Raises:
            As :meth:`join_stream`.
        """
        self._require_version(FrameType.STREAM_OPEN)
        self._check_usable()
        validate_stream(episode_id, spec, self.server_info.max_frame_bytes)
        frame = encode_stream_open(episode_id, spec)
        return self._open_writer(
            spec, frame, "ACCEPTED{STREAM_OPEN}", "stream_opens", transport, slot_bytes, slots, policy, episode_id
        )


class MultiStreamEpisode(ClosesOnExit):
    """A multi-stream episode this connection owns (made by
    :meth:`~wshard_client.Recorder.open_multistream_episode`). The owner sends events,
    may record a stream of it itself (:meth:`join_stream`), and closes it: no more
    streams may join, and it finalizes once every stream has ended.

    As a context manager it closes the episode as ``completed`` on a normal exit and as
    ``aborted`` when an exception leaves the block; a recorder closed with the episode
    still open closes it ``aborted``. A connection that ends without either leaves the
    episode ``interrupted``.
    """

    def __init__(self, recorder: MultiStreamMixin, episode_id: str) -> None:
        self._recorder = recorder
        self._episode_id = episode_id
        self._closed = False
        self._streams_left: Optional[int] = None

    @property
    def episode_id(self) -> str:
        """The episode's id."""
        return self._episode_id

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def send_event(self, t_ns: int, label: str, data: Any, kind: Union[EventKind, str, int, None] = None) -> int:
        """Send an event (``EVENT``) and wait until it is durable (``ACCEPTED{EVENT}``);
        returns its seq among the episode's events (0, 1, 2, ...). ``data``: a ``str``
        (text), bytes-like (binary), or anything JSON-serializable (json); ``kind``
        (``"text"``, ``"json"``, ``"binary"``) overrides, e.g. ``kind="json"`` for JSON
        text.

        Raises:
            SchemaError: the data is not what its kind says (nothing sent).
            ServerError: the server refused the event (``LIMIT`` over
                ``limits.max_event_bytes``, ``MALFORMED_FRAME``, ``STORAGE``; the episode
                carries on), or an earlier ``ERROR``.
            WshardError: the episode is closed. Timeout, TransportError.
        """
        if self._closed:
            raise WshardError(f"episode {self._episode_id!r} is closed")
        answer = self._recorder._send_event(t_ns, label, data, kind)
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
        """Send a flight trigger and wait for the window episode's name, as
        :meth:`~wshard_client.Recorder.trigger`.

        Raises:
            TriggerRefused: the daemon refused the trigger (the episode carries on).
            WshardError: the episode is closed. NeedsVersion, ServerError, Timeout,
                TransportError.
        """
        if self._closed:
            raise WshardError(f"episode {self._episode_id!r} is closed")
        return self._recorder.trigger(pre_s, post_s, reason, streams, at_ns)

    def join_stream(
        self, stream: str, channels: Sequence[Channel], tick_hz: float = 0.0, **kwargs: Any
    ) -> EpisodeWriter:
        """Join this episode with a stream on the owner's own connection
        (:meth:`~wshard_client.Recorder.join_stream` with this episode's id)."""
        return self._recorder.join_stream(self._episode_id, stream, channels, tick_hz, **kwargs)

    def close(self, outcome: Union[Outcome, str, int] = Outcome.COMPLETED) -> int:
        """Close the episode (``EPISODE_CLOSE``): no more joins; it finalizes with
        ``outcome`` once every stream has ended. Returns the streams still recording when
        the server answered (0: finalized). A second call returns the first answer.

        Raises:
            ServerError: an ``ERROR`` not yet reported (the ``EPISODE_CLOSE`` is sent
                regardless) or one answering the close. Timeout, TransportError.
        """
        if self._streams_left is not None:
            return self._streams_left
        if self._closed:
            raise WshardError(f"episode {self._episode_id!r} is closed (its close failed)")
        out = Outcome.parse(outcome)
        self._closed = True
        rec = self._recorder
        earlier = rec._state.take_error()
        try:
            left = rec._request(
                encode_episode_close(out), "ACCEPTED{EPISODE_CLOSE}", "episode_closes", "last_episode_close"
            )
        except WshardError:
            if earlier is not None:
                raise earlier from None
            raise
        self._streams_left = left
        if earlier is not None:
            raise earlier
        return left

    def __repr__(self) -> str:
        return f"<MultiStreamEpisode {self._episode_id!r} {'closed' if self._closed else 'open'}>"
