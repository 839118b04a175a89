"""Python client for ``wshardd``, the WShard episode recorder (wire protocol versions 1
and 2, docs/PROTOCOL.md).

Quick start::

    from wshard_client import Channel, Recorder

    with Recorder.connect("wshardd.sock", "teleop-loop/0.3") as rec:
        with rec.episode(episode_id="ep-0001", env_id="Franka-teleop", tick_hz=100.0,
                         channels=[Channel("joint_pos", "f32", (7,)),
                                   Channel("action", "f32", (7,), lane="action")]) as ep:
            for i in range(500):
                ep.push(i * 10_000_000, 0.0, i == 499, [joint_pos, action])
            ep.flush()  # returns once the server reports every step fsynced

Pure Python; numpy is used when installed (arrays are accepted as payloads, and
:meth:`EpisodeWriter.push_batch` builds whole frames with vectorized copies). Timesteps
travel on the socket, or per episode through a shared-memory ring
(``rec.episode(..., transport="shm")``, Linux, Python >= 3.10).

Protocol version 2 (``Recorder.connect(path, name, protocol_version=2)``): multi-stream
episodes (:meth:`Recorder.open_multistream_episode`, :meth:`Recorder.join_stream`) and
events (``send_event``); see :mod:`wshard_client.multistream`.
"""

from ._episode_spec import EpisodeSpec
from ._events import DEFAULT_MAX_EVENT_BYTES, MAX_EVENT_JSON_DEPTH, EventKind
from ._payload import HAVE_NUMPY
from ._reader import ServerInfo
from ._ring import RingPolicy
from ._schema import DTYPES, Channel, Codec, DType, DTypeInfo, Durability, Lane, Timebase
from ._shm import ShmInfo
from ._transport import Transport, UnixSocketTransport
from ._trigger import TriggerRefused, TriggerWindow
from ._wire import NEWEST_PROTOCOL_VERSION, PROTOCOL_VERSION, Outcome
from .client import DEFAULT_CLIENT_NAME, Client, ClientOptions, Recorder
from .episode import CloseSummary, EpisodeWriter, Step
from .errors import (
    EpisodeFailed,
    ErrorCode,
    JoinRefused,
    NeedsVersion,
    NotPushed,
    ProtocolError,
    SchemaError,
    ServerError,
    ServerJoinRefused,
    Timeout,
    TransportError,
    WshardError,
)
from .multistream import MultiStreamEpisode

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "HAVE_NUMPY",
    "PROTOCOL_VERSION",
    "NEWEST_PROTOCOL_VERSION",
    "DEFAULT_MAX_EVENT_BYTES",
    "MAX_EVENT_JSON_DEPTH",
    "DEFAULT_CLIENT_NAME",
    # connection and episodes
    "Recorder",
    "Client",
    "ClientOptions",
    "ServerInfo",
    "EpisodeWriter",
    "Step",
    "CloseSummary",
    "Outcome",
    # protocol version 2
    "MultiStreamEpisode",
    "EventKind",
    "TriggerWindow",
    "TriggerRefused",
    # schema
    "Channel",
    "EpisodeSpec",
    "DType",
    "DTypeInfo",
    "DTYPES",
    "Lane",
    "Codec",
    "Durability",
    "Timebase",
    # transports
    "Transport",
    "UnixSocketTransport",
    "RingPolicy",
    "ShmInfo",
    # errors
    "WshardError",
    "TransportError",
    "ProtocolError",
    "ServerError",
    "ErrorCode",
    "SchemaError",
    "EpisodeFailed",
    "Timeout",
    "NotPushed",
    "NeedsVersion",
    "JoinRefused",
    "ServerJoinRefused",
]
