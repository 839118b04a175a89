"""The bridge's typed error: :class:`BridgeError`, with a ``code`` the bridge control
socket answers as it is (``{"ok": false, "error": {"code": ..., "message": ...}}``)."""

from typing import Tuple

from ..errors import RosBridgeError

#: ``start`` while an episode is recording.
ALREADY_RECORDING = "ALREADY_RECORDING"
#: ``stop``, ``abort`` or ``annotate`` while no episode is recording.
NOT_RECORDING = "NOT_RECORDING"
#: The request is malformed or names something bad (an episode id, metadata, a field).
BAD_REQUEST = "BAD_REQUEST"
#: The recording failed earlier (the daemon or a connection went): ``last_error`` says why.
FAILED = "FAILED"
#: The daemon refused the operation or could not be reached.
DAEMON = "DAEMON"

CODES: Tuple[str, ...] = (ALREADY_RECORDING, NOT_RECORDING, BAD_REQUEST, FAILED, DAEMON)


class BridgeError(RosBridgeError):
    """An episode operation of the bridge (``start``, ``stop``, ``abort``, ``annotate``)
    that cannot be done.

    Attributes:
        code: one of :data:`CODES` (the control socket's error code).
        message: what was wrong, naming the episode, topic, field or daemon error.
    """

    def __init__(self, code: str, message: str) -> None:
        assert code in CODES, code
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class ControlSocketError(RosBridgeError, OSError):
    """The bridge control socket cannot be set up: the path is in use by a live listener,
    or binding, listening or its mode failed (the text names the path)."""
