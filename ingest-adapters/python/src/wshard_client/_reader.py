"""The background reader thread and the state it shares with the caller's thread.

Server frames (``DURABLE``, ``ERROR``, ``ACCEPTED``) arrive whenever the server likes, also
while the caller is blocked writing a large batch. A dedicated thread reads them, so the
socket's receive side never fills up and the server is never blocked on us (the design of
the Rust client's ``reader.rs``). It updates :class:`SharedState` under a
:class:`threading.Condition` and wakes the waiters; the caller's hot path (``push``) only
reads two plain attributes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Optional, Tuple, TypeVar, Union

from ._events import is_event_refusal
from ._trigger import TriggerRefused, TriggerWindow, is_trigger_refusal
from ._transport import Transport
from ._wire import (
    Accepted,
    AcceptedWhat,
    ClientFrame,
    Durable,
    ErrorFrame,
    FrameDecoder,
    HelloOk,
    ServerFrame,
    Triggered,
)
from .errors import ErrorCode, ProtocolError, ServerError, Timeout, TransportError, WshardError

__all__ = ["ServerInfo", "SharedState", "run_reader"]

T = TypeVar("T")

#: Bytes asked for per ``recv`` (server frames are small).
_RECV_BYTES = 64 * 1024


@dataclass(frozen=True)
class ServerInfo:
    """``HELLO_OK`` contents."""

    #: ``protocol_version``: the version the connection speaks (1, or 2 when the client
    #: asked for it and the server speaks it).
    version: int
    #: ``server_name``, e.g. ``wshardd/0.1.0``.
    server_name: str
    #: The largest ``body_len`` the server accepts; batches are kept under it.
    max_frame_bytes: int


class SharedState:
    """What the reader thread saw, guarded by :attr:`cond`.

    Attributes (read under the lock unless noted):
        hello: ``HELLO_OK`` contents once received.
        durable: latest ``DURABLE.up_to_seq`` of the current episode or stream (reset
            by ``ACCEPTED{OPEN}`` and ``ACCEPTED{STREAM_OPEN}``); a plain int, safe to
            read without the lock.
        stream_opens / episode_opens / episode_closes: ``ACCEPTED{STREAM_OPEN}``,
            ``ACCEPTED{EPISODE_OPEN}``, ``ACCEPTED{EPISODE_CLOSE}`` frames seen (version 2);
            last_episode_close: the last one's ``up_to_seq`` (streams still recording).
        events_sent / events_answered / event_answers: every ``EVENT`` is answered by
            exactly one frame, in order: ``ACCEPTED{EVENT}`` or an ``ERROR`` whose message
            starts with ``EVENT`` (docs/PROTOCOL.md "EVENT"); the n-th answer is the n-th
            event's, kept by index (its seq, or the refusal) until its sender takes it.
        opens / closes: ``ACCEPTED{OPEN}`` / ``ACCEPTED{CLOSE}`` frames seen.
        last_close: the last ``ACCEPTED{CLOSE}.up_to_seq``.
        attaches / last_attach: ``ACCEPTED{SHM_ATTACH}`` frames seen and the last one's
            ``up_to_seq`` (for a shared-memory transport; unused by the socket path).
        errors: ``ERROR`` frames not yet returned to the caller.
        ended: why the connection ended (an exception to raise), ``None`` while it lives.
        error_pending / is_ended: fast-path flags mirrored for ``push``.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.hello: Optional[ServerInfo] = None
        self.durable = 0
        self.opens = 0
        self.closes = 0
        self.last_close = 0
        self.attaches = 0
        self.last_attach = 0
        self.stream_opens = 0
        self.episode_opens = 0
        self.episode_closes = 0
        self.last_episode_close = 0
        self.events_sent = 0
        self.events_answered = 0
        self.event_answers: Dict[int, Union[int, ServerError]] = {}
        # Every TRIGGER is answered by exactly one frame, in order: TRIGGERED or an ERROR
        # whose message starts with TRIGGER (docs/PROTOCOL.md "TRIGGER"), kept by index.
        self.triggers_sent = 0
        self.triggers_answered = 0
        self.trigger_answers: Dict[int, Union[TriggerWindow, ServerError]] = {}
        self.errors: Deque[Tuple[ErrorCode, str]] = deque()
        self.ended: Optional[WshardError] = None
        self.error_pending = False
        self.is_ended = False

    def take_error(self) -> Optional[ServerError]:
        """Pop the oldest server ``ERROR`` not yet returned, as a :class:`ServerError`."""
        if not self.error_pending:
            return None
        with self.cond:
            return self._pop_error()

    def peek_error(self) -> Optional[WshardError]:
        """The oldest server ``ERROR`` not yet returned (left in place), else the end of the
        connection, else ``None``; never blocks."""
        with self.cond:
            if self.errors:
                code, message = self.errors[0]
                return ServerError(code, message)
            if self.is_ended:
                return self.ended or TransportError("connection closed by the daemon")
        return None

    def _pop_error(self) -> Optional[ServerError]:
        if not self.errors:
            self.error_pending = False
            return None
        code, message = self.errors.popleft()
        self.error_pending = bool(self.errors)
        return ServerError(code, message)

    def wait(self, what: str, timeout: Optional[float], ready: Callable[["SharedState"], Optional[T]]) -> T:
        """Wait until ``ready(self)`` returns something other than ``None``.

        While it does not, a server ``ERROR`` ends the wait (raised as
        :class:`ServerError`), as do the end of the connection and the timeout. ``ready``
        is checked first: what the server acknowledged stays acknowledged, and an
        ``ERROR`` that came with or after the awaited answer is left for the next call.

        Raises:
            ServerError, TransportError, ProtocolError, Timeout.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            while True:
                value = ready(self)
                if value is not None:
                    return value
                err = self._pop_error()
                if err is not None:
                    raise err
                if self.ended is not None:
                    raise _copy(self.ended)
                if deadline is None:
                    self.cond.wait()
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise Timeout(f"timed out waiting for {what}")
                    self.cond.wait(left)

    def wait_end(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) for the reader to finish, e.g. after a failed write,
        so that the server's last ``ERROR`` can be reported instead of a bare EPIPE."""
        with self.cond:
            self.cond.wait_for(lambda: self.ended is not None, timeout)

    def end_error(self) -> Optional[WshardError]:
        """A fresh exception for the end of the connection, or ``None`` while it lives."""
        with self.cond:
            return None if self.ended is None else _copy(self.ended)

    def apply(self, frame: ServerFrame) -> None:
        """Record one server frame (called with the lock held).

        Raises:
            ProtocolError: a client-to-server frame type came from the server.
        """
        if isinstance(frame, Durable):
            if frame.up_to_seq > self.durable:
                self.durable = frame.up_to_seq
        elif isinstance(frame, ErrorFrame):
            if self.events_answered < self.events_sent and is_event_refusal(frame.message):
                self._answer_event(ServerError(frame.code, frame.message))
            elif self.triggers_answered < self.triggers_sent and is_trigger_refusal(frame.message):
                self._answer_trigger(TriggerRefused(frame.code, frame.message))
            else:
                self.errors.append((frame.code, frame.message))
                self.error_pending = True
        elif isinstance(frame, Accepted):
            if frame.what == AcceptedWhat.OPEN:
                self.opens += 1
                self.durable = 0
            elif frame.what == AcceptedWhat.CLOSE:
                self.closes += 1
                self.last_close = frame.up_to_seq
            elif frame.what == AcceptedWhat.SHM_ATTACH:
                self.attaches += 1
                self.last_attach = frame.up_to_seq
            elif frame.what == AcceptedWhat.STREAM_OPEN:
                self.stream_opens += 1
                self.durable = 0
            elif frame.what == AcceptedWhat.EPISODE_OPEN:
                self.episode_opens += 1
            elif frame.what == AcceptedWhat.EPISODE_CLOSE:
                self.episode_closes += 1
                self.last_episode_close = frame.up_to_seq
            else:  # EVENT
                self._answer_event(frame.up_to_seq)
        elif isinstance(frame, Triggered):
            self._answer_trigger(TriggerWindow(frame.episode, frame.merged, frame.window_start_ns, frame.window_end_ns))
        elif isinstance(frame, HelloOk):
            self.hello = ServerInfo(frame.version, frame.server_name, frame.max_frame_bytes)
        elif isinstance(frame, ClientFrame):
            raise ProtocolError(f"unexpected from server: {frame.frame_type.name} is a client-to-server frame")


    def _answer_event(self, answer: Union[int, ServerError]) -> None:
        self.event_answers[self.events_answered] = answer
        self.events_answered += 1

    def _answer_trigger(self, answer: Union[TriggerWindow, ServerError]) -> None:
        self.trigger_answers[self.triggers_answered] = answer
        self.triggers_answered += 1


def _copy(e: WshardError) -> WshardError:
    """A new exception of the same type and message (one exception object should not be
    raised from several places, its traceback would grow)."""
    try:
        return type(e)(*e.args)
    except TypeError:
        return e


def run_reader(transport: Transport, state: SharedState) -> None:
    """Body of the reader thread: read, decode, update, notify; until EOF or an error."""
    decoder = FrameDecoder()
    end: WshardError
    while True:
        try:
            data = transport.recv(_RECV_BYTES)
        except OSError as e:
            end = TransportError(f"socket read failed: {e}")
            break
        if not data:
            end = TransportError("connection closed")
            break
        decoder.feed(data)
        stop: Optional[WshardError] = None
        with state.cond:
            try:
                while True:
                    frame = decoder.next_frame()
                    if frame is None:
                        break
                    state.apply(frame)
            except ProtocolError as e:
                stop = e
            state.cond.notify_all()
        if stop is not None:
            transport.shutdown()
            end = stop
            break
    with state.cond:
        state.ended = end
        state.is_ended = True
        state.cond.notify_all()


def start_reader(transport: Transport, state: SharedState) -> threading.Thread:
    """Start :func:`run_reader` on a daemon thread (it never blocks interpreter exit)."""
    thread = threading.Thread(target=run_reader, args=(transport, state), name="wshard-client-reader", daemon=True)
    thread.start()
    return thread
