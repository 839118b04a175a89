"""The bridge's options and states."""

import enum
from dataclasses import dataclass, field
from typing import FrozenSet, Optional, Union

from wshard_client import Durability


class BridgeState(str, enum.Enum):
    """What :meth:`~wshard_ros.bridge.Bridge.status` reports as ``state``."""

    #: No episode is recording (messages are counted ``idle``).
    IDLE = "idle"
    #: An episode is recording.
    RECORDING = "recording"
    #: The daemon or a connection failed during an episode (``last_error`` says how); the
    #: next ``start`` connects anew.
    FAILED = "failed"


#: Bytes of one JSON request line the bridge control socket reads at most.
MAX_REQUEST_BYTES = 64 * 1024


@dataclass(frozen=True)
class BridgeOptions:
    """How the bridge talks to the daemon.

    Attributes:
        socket_path: the daemon's ingest socket.
        control_path: the daemon's control socket (``annotate``); ``None``: annotate is
            refused with a clear error.
        client_name: ``HELLO.client_name`` of every connection (streams add ``/STREAM``).
        queue_steps: steps each stream's queue holds (bounded, > 0).
        block_when_full: ``False`` (live): a full queue drops the newest step, counted
            ``queue_full``; ``True`` (bag import): ``on_message`` waits (back-pressure).
        transport: ``"socket"`` or ``"shm"``: the transport of every stream.
        shm_streams: streams recorded through shared memory whatever ``transport`` says.
        durability: the streams' durability (``"ack"`` or ``"chunk"``).
        bridge_socket: where :func:`~wshard_ros.bridge.serve_control` listens (the
            bridge control socket), or ``None``.
        timeout: seconds to wait for the daemon on any one call (the client's timeout).
        max_pending: stamps a shared stream waits for at most (older ones are dropped,
            ``unmatched``).
    """

    socket_path: str
    control_path: Optional[str] = None
    client_name: str = "wshard-ros-bridge"
    queue_steps: int = 4096
    block_when_full: bool = False
    transport: str = "socket"
    shm_streams: FrozenSet[str] = field(default_factory=frozenset)
    durability: Union[Durability, str] = "ack"
    bridge_socket: Optional[str] = None
    timeout: float = 30.0
    max_pending: int = 64

    def __post_init__(self) -> None:
        if self.queue_steps <= 0:
            raise ValueError(f"queue_steps {self.queue_steps}: must be > 0")
        if self.transport not in ("socket", "shm"):
            raise ValueError(f"transport {self.transport!r}: socket or shm")
        if self.max_pending <= 0:
            raise ValueError(f"max_pending {self.max_pending}: must be > 0")
        if not self.timeout > 0:
            raise ValueError(f"timeout {self.timeout}: must be > 0")
        object.__setattr__(self, "shm_streams", frozenset(self.shm_streams))

    def stream_transport(self, stream: str) -> str:
        """The transport of ``stream``."""
        return "shm" if self.transport == "shm" or stream in self.shm_streams else "socket"
