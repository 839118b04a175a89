"""Typed exceptions of the client and the wire error codes (docs/PROTOCOL.md, "ERROR").

Every exception the client raises on purpose derives from :class:`WshardError`:

- :class:`TransportError` (also a :class:`ConnectionError`): the socket could not be
  reached, a read or write failed, or the connection is gone;
- :class:`ProtocolError`: the server sent something that does not parse or makes no sense
  here (another protocol version, a client-to-server frame, ...);
- :class:`ServerError`: the server answered with an ``ERROR`` frame; ``.code`` is an
  :class:`ErrorCode`, ``.message`` the server's text;
- :class:`SchemaError` (also a :class:`ValueError`): a schema or payload was refused on the
  client side before anything was sent;
- :class:`EpisodeFailed`: an earlier server ``ERROR`` failed the episode; only ``close``
  is still possible;
- :class:`Timeout` (also a :class:`TimeoutError`): no answer in time;
- :class:`NotPushed` (also a :class:`ValueError`): ``wait_durable`` for a seq never pushed;
- :class:`NeedsVersion`: the call needs protocol version 2 and the connection speaks 1;
- :class:`JoinRefused`: a stream could not join an episode (refused by the client, or by
  the server as :class:`ServerJoinRefused`, also a :class:`ServerError`); nothing recording
  changed, so leaving a ``with`` block with it aborts nothing.
"""

from __future__ import annotations

import enum
from typing import Optional

__all__ = [
    "ErrorCode",
    "WshardError",
    "TransportError",
    "ProtocolError",
    "ServerError",
    "SchemaError",
    "EpisodeFailed",
    "Timeout",
    "NotPushed",
    "NeedsVersion",
    "JoinRefused",
    "ServerJoinRefused",
]


class ErrorCode(enum.IntEnum):
    """The ``code`` of an ``ERROR`` frame, as in docs/PROTOCOL.md."""

    MALFORMED_FRAME = 1
    UNKNOWN_FRAME = 2
    FRAME_TOO_LARGE = 3
    HANDSHAKE = 4
    UNSUPPORTED_VERSION = 5
    BAD_SCHEMA = 6
    BAD_EPISODE_ID = 7
    EPISODE_EXISTS = 8
    ALREADY_OPEN = 9
    NOT_OPEN = 10
    SEQUENCE = 11
    PAYLOAD_SIZE = 12
    LIMIT = 13
    OVERLOADED = 14
    STORAGE = 15
    SHUTTING_DOWN = 16
    INTERNAL = 17
    #: Shared-memory transport refused or broken (``SHM_ATTACH`` geometry or fds, a bad
    #: ring slot); also the code of a :class:`SchemaError` for a ring geometry refused
    #: client-side.
    BAD_SHM = 18
    #: OPEN refused: free space on the data directory's filesystem is below the low
    #: watermark. The connection stays usable; retry when space returns.
    DISK_LOW = 19
    #: The open episode was finalized by the daemon (an operator's ``wshard close``,
    #: ``stop`` or ``abort``, or the disk's high watermark); the message says which status
    #: and why. Everything acknowledged is kept;
    #: the connection stays usable for a new OPEN.
    STOPPED = 20
    #: The peer's uid/gid is not on the socket's allowlist (SO_PEERCRED). Closes the
    #: connection.
    PERMISSION_DENIED = 21
    #: A timestep's ``t_ns`` is below the previous timestep's: ``t_ns`` must not decrease
    #: within an episode (equal is allowed). The frame (or ring slot) is refused whole.
    TIMESTAMP_ORDER = 22
    #: A server deadline passed: no complete HELLO within ``limits.handshake_timeout_ms``,
    #: no open episode for ``limits.no_episode_timeout_ms``, or the client did not read
    #: its socket for the server's write timeout; the message names which. Closes the
    #: connection (an open episode is finalized ``interrupted``; what was DURABLE stays).
    TIMEOUT = 23
    #: Protocol version 2, STREAM_OPEN refused: no open multi-stream episode has that id.
    UNKNOWN_EPISODE = 24
    #: Protocol version 2, STREAM_OPEN refused: the episode exists but is closed or
    #: finalized; no more streams may join.
    EPISODE_CLOSED = 25
    #: Protocol version 2, STREAM_OPEN refused: the stream name is used in the episode
    #: already, with the same schema.
    STREAM_EXISTS = 26

    @property
    def closes_connection(self) -> bool:
        """Whether the server closes the connection after this code (``MALFORMED_FRAME``
        only when the framing itself is broken, so it is ``False`` here)."""
        return self in _CLOSING

    def __str__(self) -> str:
        return f"{self.name} ({self.value})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


_CLOSING = frozenset(
    {
        ErrorCode.UNKNOWN_FRAME,
        ErrorCode.FRAME_TOO_LARGE,
        ErrorCode.HANDSHAKE,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.OVERLOADED,
        ErrorCode.SHUTTING_DOWN,
        ErrorCode.INTERNAL,
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.TIMEOUT,
    }
)


class WshardError(Exception):
    """Base class of every error raised by ``wshard_client``."""


class TransportError(WshardError, ConnectionError):
    """Connecting, reading or writing the socket failed, or the connection is closed."""


class ProtocolError(WshardError):
    """The server sent bytes that do not parse, or a frame that makes no sense here."""


class ServerError(WshardError):
    """The server answered with an ``ERROR`` frame.

    Attributes:
        code: the ``ERROR.code`` as an :class:`ErrorCode`.
        message: the ``ERROR.message``, naming the field and the values.
    """

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"server error {code}: {message}")
        self.code: ErrorCode = code
        self.message: str = message


class SchemaError(WshardError, ValueError):
    """A schema or a payload was refused client-side; nothing was sent.

    Attributes:
        code: the :class:`ErrorCode` the server would have answered (``BAD_SCHEMA``,
            ``BAD_EPISODE_ID``, ``PAYLOAD_SIZE`` or ``BAD_SHM``), or ``None``.
        channel: the channel concerned, when there is one.
    """

    def __init__(
        self,
        message: str,
        code: Optional[ErrorCode] = ErrorCode.BAD_SCHEMA,
        channel: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code: Optional[ErrorCode] = code
        self.channel: Optional[str] = channel


class EpisodeFailed(WshardError):
    """An earlier server ``ERROR`` failed this episode (the client's and the server's seqs
    no longer agree); close it and open a new one."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or "the episode failed after an earlier server error; close it and open a new one")


class Timeout(WshardError, TimeoutError):
    """No answer from the server within the timeout."""


class NotPushed(WshardError, ValueError):
    """``wait_durable`` was asked for a seq that was not pushed yet."""

    def __init__(self, seq: int, next_seq: int) -> None:
        super().__init__(f"seq {seq} was not pushed (next seq is {next_seq})")
        self.seq: int = seq
        self.next_seq: int = next_seq


class NeedsVersion(WshardError):
    """The call needs a later protocol version than the connection speaks (multi-stream
    episodes and events need version 2: connect with ``protocol_version=2``); nothing was
    sent.

    Attributes:
        frame: the frame the call would send, e.g. ``"STREAM_OPEN"``.
        needs / speaks: the version that defines it, the version the connection speaks.
    """

    def __init__(self, frame: str, needs: int, speaks: int) -> None:
        super().__init__(
            f"{frame} needs protocol version {needs}; this connection speaks version {speaks} "
            f"(connect with protocol_version={needs})"
        )
        self.frame: str = frame
        self.needs: int = needs
        self.speaks: int = speaks


class JoinRefused(WshardError):
    """A stream could not join a multi-stream episode (``join_stream``): refused by the
    client before anything was sent (this connection records a stream or an episode
    already: a connection records one at a time, so each stream joins from a connection of
    its own), or by the server (:class:`ServerJoinRefused`). Nothing was created and
    nothing recording changed: when it leaves the ``with`` block of a recorder, an episode
    or a stream, what the block closes is closed ``completed``, not ``aborted``."""


class ServerJoinRefused(JoinRefused, ServerError):
    """The server refused a ``STREAM_OPEN`` (``UNKNOWN_EPISODE``, ``EPISODE_CLOSED``,
    ``STREAM_EXISTS``, ``BAD_SCHEMA``, ``DISK_LOW``, ...): a :class:`ServerError` with its
    ``code`` and ``message``, and a :class:`JoinRefused`."""
