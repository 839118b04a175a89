""":class:`Connection`: one connection to ``wshardd``, as the handshake leaves it: writing
frames, sending a request and waiting for its ``ACCEPTED``, sending an event and waiting
for its answer, and the checks that the connection is usable and speaks a version.

Design: the caller's thread encodes steps straight into one pending ``TIMESTEP_BATCH``
frame and writes it to the socket; a background reader thread consumes the server's
asynchronous ``DURABLE`` / ``ERROR`` / ``ACCEPTED`` frames and publishes them through a
``threading.Condition`` (see :mod:`wshard_client._reader`). A reader thread keeps the
receive side drained even while a large batch write is blocked.

The handles write through a connection: :class:`~wshard_client.EpisodeWriter`
(:mod:`wshard_client.episode`) and :class:`~wshard_client.MultiStreamEpisode`
(:mod:`wshard_client.multistream`). :class:`~wshard_client.Recorder`
(:mod:`wshard_client.client`) is a connection that opens those handles and owns them.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence, Tuple, Type, TypeVar, Union, cast

from ._events import EventKind, event_data
from ._reader import ServerInfo, SharedState, start_reader
from ._transport import Buffer, Transport, UnixSocketTransport
from ._trigger import TriggerWindow, trigger_fields
from ._wire import NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION, FrameType, encode_event, encode_hello, encode_trigger
from .errors import ErrorCode, NeedsVersion, ProtocolError, SchemaError, ServerError, TransportError, WshardError

__all__ = ["Connection", "ClientOptions", "DEFAULT_CLIENT_NAME"]

#: ``HELLO.client_name`` when none is given.
DEFAULT_CLIENT_NAME = "wshard-client-py/0.1.0"

#: Bytes of an ``EVENT`` body besides ``label`` and ``data``: type 1, ``t_ns`` 8, ``kind``
#: 1, the two length prefixes 2 + 4.
_EVENT_FIXED_BYTES = 1 + 8 + 1 + 2 + 4

_Conn = TypeVar("_Conn", bound="Connection")


@dataclass(frozen=True)
class ClientOptions:
    """Tuning of a :class:`~wshard_client.Recorder` (the Rust ``ClientOptions``)."""

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


class Connection:
    """A handshaken connection to ``wshardd``: the frames written on it and the answers
    awaited. It opens no episode itself: see :class:`~wshard_client.Recorder`, which is
    one. Not thread-safe (the reader thread is internal)."""

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
        self._reader: threading.Thread = start_reader(transport, self._state)
        # A connection dropped without close() still releases its socket and reader thread
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
                    f"unexpected from server: HELLO_OK protocol_version {info.version} (this client asked for {asked})"
                )
        except BaseException:
            self._shutdown()
            raise
        self._info: ServerInfo = info

    @classmethod
    def connect(
        cls: Type[_Conn],
        path: Union[str, "os.PathLike[str]"],
        client_name: str = DEFAULT_CLIENT_NAME,
        *,
        options: Optional[ClientOptions] = None,
        **option_overrides: Any,
    ) -> _Conn:
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
        episode, see :meth:`Recorder.open_episode`)."""
        return self._transport

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

    # ------------------------------------------------------------------ version 2

    def _require_version(self, frame: FrameType) -> None:
        """Refuse, before sending, a frame the connection's version does not know (the
        server would close the connection)."""
        speaks = self.protocol_version
        if speaks < NEWEST_PROTOCOL_VERSION:
            raise NeedsVersion(frame.name, NEWEST_PROTOCOL_VERSION, speaks)

    def _send_event(
        self, t_ns: int, label: str, data: Any, kind: Union[EventKind, str, int, None]
    ) -> Union[int, ServerError]:
        """Check and send one ``EVENT``, wait for its answer: its seq, or the server's
        refusal of this event alone (returned, not raised: the recording carries on).
        Raises what fails the connection or its recording (an ``ERROR`` about something
        sent before, the end of the connection, the timeout)."""
        self._require_version(FrameType.EVENT)
        self._check_usable()
        k, raw = event_data(data, kind)
        body = _EVENT_FIXED_BYTES + len(label.encode("utf-8")) + len(raw)
        max_frame = self.server_info.max_frame_bytes
        if body > max_frame:
            raise SchemaError(
                f"EVENT: field data is {len(raw)} bytes, the frame allows at most "
                f"{max(max_frame - (body - len(raw)), 0)} (the server's max_frame_bytes {max_frame})",
                ErrorCode.MALFORMED_FRAME,
            )
        frame = encode_event(int(t_ns), int(k), label, raw)
        state = self._state
        with state.cond:
            mine = state.events_sent
            state.events_sent += 1
        try:
            self._write(frame)
        except BaseException:
            with state.cond:
                state.events_sent = min(state.events_sent, mine)
            raise
        answer = cast(
            Union[int, ServerError],
            state.wait("ACCEPTED{EVENT}", self.options.timeout, lambda st: st.event_answers.get(mine)),
        )
        with state.cond:
            # Answers of earlier events whose senders gave up waiting go with it.
            for i in [i for i in state.event_answers if i <= mine]:
                del state.event_answers[i]
        return answer

    def _send_trigger(
        self,
        pre_s: float,
        post_s: float,
        reason: str,
        streams: Optional[Sequence[str]],
        at_ns: Optional[int],
    ) -> Union[TriggerWindow, ServerError]:
        """Send one ``TRIGGER``, wait for its answer: the window, or the server's refusal
        of this trigger alone (returned, not raised: the recording carries on). Raises
        what fails the connection or its recording, as :meth:`_send_event`."""
        self._require_version(FrameType.TRIGGER)
        self._check_usable()
        pre_ns, post_ns, names = trigger_fields(pre_s, post_s, streams)
        frame = encode_trigger(pre_ns, post_ns, str(reason), names, None if at_ns is None else int(at_ns))
        state = self._state
        with state.cond:
            mine = state.triggers_sent
            state.triggers_sent += 1
        try:
            self._write(frame)
        except BaseException:
            with state.cond:
                state.triggers_sent = min(state.triggers_sent, mine)
            raise
        answer = cast(
            Union[TriggerWindow, ServerError],
            state.wait("TRIGGERED", self.options.timeout, lambda st: st.trigger_answers.get(mine)),
        )
        with state.cond:
            for i in [i for i in state.trigger_answers if i <= mine]:
                del state.trigger_answers[i]
        return answer

    def trigger(
        self,
        pre_s: float = 30.0,
        post_s: float = 10.0,
        reason: str = "",
        streams: Optional[Sequence[str]] = None,
        at_ns: Optional[int] = None,
    ) -> TriggerWindow:
        """Send a flight trigger (``TRIGGER``, protocol version 2) on this connection,
        recording or not, and wait for the window episode's name (``TRIGGERED``): the
        daemon persists ``[t - pre_s, t + post_s]`` of its flight streams (``streams``:
        ``EPISODE`` or ``EPISODE/STREAM`` names, ``None`` = every one; ``t``: each
        stream's latest ``t_ns``, or ``at_ns``) as an episode, with ``reason`` as its
        ``trigger`` event; the copy runs after the answer.

        Raises:
            NeedsVersion: the connection speaks version 1.
            TriggerRefused: the daemon refused the trigger (``LIMIT``, ``NOT_OPEN``,
                ``UNKNOWN_EPISODE``, ``STORAGE``; the message names the field or stream;
                the connection carries on), or the window is not a number (nothing sent).
            ServerError: an earlier ``ERROR``. Timeout, TransportError.
        """
        answer = self._send_trigger(pre_s, post_s, reason, streams, at_ns)
        if isinstance(answer, ServerError):
            raise answer
        return answer

    # ------------------------------------------------------------------ closing

    def _shutdown(self) -> None:
        """Close the socket and wait for the reader thread (what is open is left to the
        server). Idempotent."""
        self._closed = True
        self._finalizer.detach()
        self._transport.shutdown()
        self._reader.join(timeout=5.0)
        self._transport.close()
