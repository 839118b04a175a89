"""An episode ended from outside the bridge: the daemon finalized it (an operator's
``wshard stop``, ``abort`` or ``close``, the bridge's own ``stop_episode`` /
``abort_episode``, the disk's high watermark) and told every connection of it with
``ERROR{STOPPED}``. That is the end of the episode, not a failure of the bridge: it goes
back to ``idle`` and the next ``start`` records the next episode.

The daemon stops a multi-stream episode by telling its owner connection and each stream's;
a stream alone (``wshard close EP/STREAM``) is stopped without the owner being told. So a
stream's ``STOPPED`` ends the episode only when the owner's comes too: the owner is looked
at for :data:`OWNER_NOTICE_S` (the daemon tells both within its read poll)."""

import time
from typing import Optional

from wshard_client import ErrorCode, ServerError

from .streams import EpisodeRun

#: Seconds a stream's ``ERROR{STOPPED}`` waits for the owner's.
OWNER_NOTICE_S = 2.0
#: How often the owner's connection is looked at meanwhile.
_POLL_S = 0.02


def _is_stopped(error: Optional[BaseException]) -> bool:
    return isinstance(error, ServerError) and error.code == ErrorCode.STOPPED


def ended_by_daemon(run: EpisodeRun, error: BaseException, wait_s: float = OWNER_NOTICE_S) -> Optional[str]:
    """The daemon's words when ``error`` (from the owner or a stream of ``run``) means the
    daemon ended the whole episode: the owner's ``ERROR{STOPPED}`` message; ``None`` when
    it is anything else (a failure, or one stream stopped alone)."""
    if not _is_stopped(error):
        return None
    deadline = time.monotonic() + wait_s
    while True:
        owner_error = run.owner.connection_error()
        if _is_stopped(owner_error):
            return str(owner_error)
        if owner_error is not None or time.monotonic() >= deadline:
            return None
        time.sleep(_POLL_S)
