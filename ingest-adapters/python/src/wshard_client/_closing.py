"""The ``with`` block of the handles that are closed with an outcome
(:class:`~wshard_client.EpisodeWriter`, :class:`~wshard_client.MultiStreamEpisode`)."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional, Type, TypeVar

from ._wire import Outcome
from .errors import WshardError

_Self = TypeVar("_Self", bound="ClosesOnExit")


class ClosesOnExit:
    """Leaving the ``with`` block closes the handle, unless it is closed already:
    ``completed`` on a normal exit, ``aborted`` (data kept) when an exception leaves the
    block, whose own error then stays the one raised."""

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
            self.close(Outcome.ABORTED)
        except WshardError:
            pass  # the exception that left the block is the one to see
