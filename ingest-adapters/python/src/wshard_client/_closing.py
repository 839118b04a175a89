"""The ``with`` block of the handles that are closed with an outcome
(:class:`~wshard_client.EpisodeWriter`, :class:`~wshard_client.MultiStreamEpisode`)."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional, Type, TypeVar

from ._wire import Outcome
from .errors import JoinRefused, WshardError

_Self = TypeVar("_Self", bound="ClosesOnExit")


def aborts(exc: Optional[BaseException]) -> bool:
    """Whether ``exc``, leaving a ``with`` block, aborts what the block closes: any
    exception but a :class:`JoinRefused` (a refused join changed nothing recording)."""
    return exc is not None and not isinstance(exc, JoinRefused)


class ClosesOnExit:
    """Leaving the ``with`` block closes the handle, unless it is closed already:
    ``completed`` on a normal exit, ``aborted`` (data kept) when an exception leaves the
    block, whose own error then stays the one raised. A :class:`JoinRefused` (a stream
    that could not join: nothing recording changed) closes it ``completed``."""

    _closed: bool

    def close(self, outcome: Outcome = Outcome.COMPLETED) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._closed:
            return
        if exc_type is None:
            self.close(Outcome.COMPLETED)
            return
        try:
            self.close(Outcome.ABORTED if aborts(exc) else Outcome.COMPLETED)
        except WshardError:
            pass  # the exception that left the block is the one to see
