"""Byte transports between the client and ``wshardd``.

The client only needs a full-duplex byte stream: the caller's thread writes whole frames
with :meth:`Transport.send` while the reader thread blocks in :meth:`Transport.recv`. A
transport is a small object behind that interface, so another one can be added without
touching the protocol state machine. The shared-memory transport of an episode
(``transport="shm"``, :mod:`wshard_client._shm`) keeps the Unix socket as its control
channel: it only needs :meth:`Transport.send_fds` to pass the ring's file descriptors with
``SHM_ATTACH``, and then moves the timesteps through the ring instead of :meth:`send`.
"""

from __future__ import annotations

import abc
import os
import socket
from typing import Optional, Sequence, Union

from .errors import Timeout, TransportError

__all__ = ["Transport", "UnixSocketTransport", "Buffer"]

#: Anything with the buffer protocol: bytes, bytearray, memoryview, numpy arrays.
Buffer = Union[bytes, bytearray, memoryview]

#: ``sun_path`` holds 108 bytes including the terminating NUL.
MAX_UNIX_PATH_BYTES = 107


class Transport(abc.ABC):
    """A full-duplex byte stream to the server.

    :meth:`send` is called by one thread at a time (the caller's), :meth:`recv` only by
    the reader thread, concurrently with :meth:`send`. :meth:`shutdown` may be called from
    any thread and must make a blocked :meth:`recv` return ``b""``.
    """

    #: Short name for messages and ``Recorder.transport_kind``.
    kind: str = "abstract"

    @abc.abstractmethod
    def send(self, data: Buffer) -> None:
        """Write all of ``data``.

        Raises:
            Timeout: the write did not finish within the write timeout (the stream may now
                hold part of a frame).
            OSError: the write failed (e.g. ``BrokenPipeError``).
        """

    def send_fds(self, data: Buffer, fds: Sequence[int]) -> None:
        """Write all of ``data`` with ``fds`` attached (``SCM_RIGHTS``) to its first byte.

        Raises:
            TransportError: this transport cannot pass file descriptors.
            Timeout, OSError: as :meth:`send`.
        """
        raise TransportError(
            f"the {self.kind} transport cannot pass file descriptors (shared memory needs a Unix socket)"
        )

    @abc.abstractmethod
    def recv(self, max_bytes: int) -> bytes:
        """Block until bytes arrive and return up to ``max_bytes`` of them; ``b""`` at the
        end of the stream (also after :meth:`shutdown`).

        Raises:
            OSError: the read failed.
        """

    @abc.abstractmethod
    def shutdown_write(self) -> None:
        """Tell the peer nothing more will be sent (half close); idempotent."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stop both directions: a blocked :meth:`recv` returns ``b""``; idempotent."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the resources; idempotent. Call after the reader thread ended."""


class UnixSocketTransport(Transport):
    """A ``SOCK_STREAM`` Unix socket (the protocol's byte stream; it also passes the fds of ``SHM_ATTACH``).

    ``timeout`` bounds each :meth:`send` (Python's ``sendall`` counts it for the whole
    call); ``None`` waits forever. :meth:`recv` waits as long as it takes.
    """

    kind = "unix"

    def __init__(self, sock: socket.socket, timeout: Optional[float]) -> None:
        self._sock = sock
        self._sock.settimeout(timeout)
        self._shut = False

    @classmethod
    def connect(cls, path: Union[str, "os.PathLike[str]"], timeout: Optional[float] = 60.0) -> "UnixSocketTransport":
        """Connect to the socket at ``path``.

        Raises:
            TransportError: the path is too long, or the socket cannot be reached.
        """
        raw = os.fsencode(path)
        if len(raw) > MAX_UNIX_PATH_BYTES:
            raise TransportError(
                f"socket path {os.fsdecode(raw)!r} is {len(raw)} bytes; AF_UNIX allows at most {MAX_UNIX_PATH_BYTES}"
            )
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(raw)
        except socket.timeout:
            sock.close()
            raise Timeout(f"timed out connecting to {os.fsdecode(raw)}") from None
        except OSError as e:
            sock.close()
            raise TransportError(f"cannot connect to {os.fsdecode(raw)}: {e}") from e
        return cls(sock, timeout)

    def send(self, data: Buffer) -> None:
        try:
            self._sock.sendall(data)
        except socket.timeout:
            raise Timeout("timed out writing to the socket") from None

    def send_fds(self, data: Buffer, fds: Sequence[int]) -> None:
        view = memoryview(data).cast("B")
        try:
            sent = socket.send_fds(self._sock, [view], list(fds))
            if sent < view.nbytes:
                self._sock.sendall(view[sent:])
        except socket.timeout:
            raise Timeout("timed out writing to the socket") from None

    def recv(self, max_bytes: int) -> bytes:
        while True:
            try:
                return self._sock.recv(max_bytes)
            except socket.timeout:
                # The socket timeout bounds writes; the reader just keeps waiting.
                if self._shut:
                    return b""

    def shutdown_write(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def shutdown(self) -> None:
        self._shut = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self._shut = True
        self._sock.close()

    def fileno(self) -> int:
        """The socket's file descriptor (for ``select`` and diagnostics)."""
        return self._sock.fileno()
