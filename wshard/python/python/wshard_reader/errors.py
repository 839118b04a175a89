"""Exceptions of ``wshard_reader``.

Every error the reader raises is a :class:`WshardReadError`. Its message names the file, and
the stream and field when they are known; the same are attributes (``path``, ``stream``,
``field``; ``None`` when not known). The subclasses also derive from the built-in exception
that fits, so ``except FileNotFoundError`` or ``except LookupError`` keep working.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "WshardReadError",
    "EpisodeNotFoundError",
    "WshardIOError",
    "CorruptDataError",
    "InvalidEpisodeError",
    "UnknownNameError",
    "BadArgumentError",
]


class WshardReadError(Exception):
    """Base class of every error of the reader."""

    path: Optional[str]
    stream: Optional[str]
    field: Optional[str]

    def __init__(
        self,
        message: str,
        path: Optional[str] = None,
        stream: Optional[str] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.stream = stream
        self.field = field

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class EpisodeNotFoundError(WshardReadError, FileNotFoundError):
    """A directory or file the episode needs does not exist (episode directory, index,
    manifest, chunk)."""


class WshardIOError(WshardReadError, OSError):
    """Any other I/O failure reading a file, or a file that changed while it was opened."""


class CorruptDataError(WshardReadError):
    """Bytes that do not match their CRC32C, SHA-256, codec, length or magic: the file is
    damaged."""


class InvalidEpisodeError(WshardReadError):
    """Well-formed bytes whose content breaks the format's rules: bad metadata or JSON,
    manifest continuity, a chunk that disagrees with the manifest or with chunk 0, a bad line
    in the events file."""


class UnknownNameError(WshardReadError, LookupError):
    """A stream or channel the episode does not have."""


class BadArgumentError(WshardReadError, ValueError):
    """An argument that cannot be used: an unknown policy, ``linear`` on a non-numeric
    channel, a rate that is not positive, both or neither of ``clock`` and ``rate_hz``."""
