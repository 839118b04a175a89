"""The recording core of the ROS bridge (front-end independent): :class:`Bridge` records
the topics of a mapping into multi-stream episodes of ``wshardd``; :func:`serve_control`
offers its episode control on a Unix socket (JSON lines). See
ingest-adapters/ros/README.md, "The recording core"."""

from .control_socket import ControlServer, handle_request, serve_control
from .core import Bridge
from .counters import DROP_ERROR, DROP_FAILED, DROP_QUEUE_FULL, DROP_REASONS, DROP_UNMATCHED
from .errors import ALREADY_RECORDING, BAD_REQUEST, CODES, DAEMON, FAILED, NOT_RECORDING, BridgeError
from .options import BridgeOptions, BridgeState

__all__ = [
    "ALREADY_RECORDING",
    "BAD_REQUEST",
    "Bridge",
    "BridgeError",
    "BridgeOptions",
    "BridgeState",
    "CODES",
    "ControlServer",
    "DAEMON",
    "DROP_ERROR",
    "DROP_FAILED",
    "DROP_QUEUE_FULL",
    "DROP_REASONS",
    "DROP_UNMATCHED",
    "FAILED",
    "NOT_RECORDING",
    "handle_request",
    "serve_control",
]
