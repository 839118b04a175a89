"""What every bag reader gives the import: the bag's connections, its typestore, its
messages in a fixed order, and the damage it found.

Order: log time first, then the order the recorder wrote the messages (the position in
the file: ROS 1 chunk and offset, MCAP chunk and offset, rosbag2 sqlite3 row id). The
same bag always gives the same sequence, whichever reader path (index or scan) ran.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

#: A message as the readers yield it: (log time ns, position in the bag, connection, raw bytes).
RawMessage = Tuple[int, Tuple[int, ...], "BagConnection", bytes]


@dataclass(frozen=True)
class BagConnection:
    """One topic connection of a bag: ``msgtype`` in the rosbags spelling
    (``sensor_msgs/msg/JointState``), ``key`` unique within the bag."""

    key: int
    topic: str
    msgtype: str


@dataclass(frozen=True)
class Damage:
    """A part of a bag that could not be read: ``offset`` (bytes) or ``record`` where
    known; ``what`` says what is wrong and what was lost."""

    path: str
    what: str
    offset: Optional[int] = None
    record: Optional[str] = None

    def describe(self) -> str:
        where = self.path
        if self.offset is not None:
            where += f": offset {self.offset}"
        if self.record is not None:
            where += f": {self.record}"
        return f"{where}: {self.what}"

    def as_json(self) -> Dict[str, Any]:
        return {"file": self.path, "offset": self.offset, "record": self.record, "what": self.what}


@dataclass
class BagSource:
    """An opened bag. Subclasses fill ``connections``, ``kind``, ``message_count`` and
    implement :meth:`raw_messages` and :meth:`deserialize`."""

    path: str
    kind: str = ""
    connections: List[BagConnection] = field(default_factory=list)
    #: messages the bag says it holds (index or metadata), or None when unknown.
    message_count: Optional[int] = None
    #: messages per connection key (from the index, the metadata or a scan).
    counts: Dict[int, int] = field(default_factory=dict)
    damage: List[Damage] = field(default_factory=list)
    #: the bag's size in bytes.
    size_bytes: int = 0

    def raw_messages(self, keys: "set[int]") -> Iterator[RawMessage]:
        """Messages of the connections ``keys`` in bag order. Damage met while reading is
        appended to :attr:`damage` and ends the iteration (never raised)."""
        raise NotImplementedError

    def deserialize(self, raw: bytes, msgtype: str) -> Any:
        """The message object (rosbags dataclass) of ``raw``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the file."""
