"""Typed errors of the bag import. Every one names the bag file, and where known the byte
offset or the record at fault."""

from typing import Optional

from ..errors import RosBridgeError


class BagImportError(RosBridgeError):
    """Base of every error of :mod:`wshard_ros.bag_import`."""


class BagError(BagImportError):
    """A bag that cannot be read at all: not a bag, a bad magic or header, no readable
    message. Nothing is recorded for it.

    Attributes:
        path: the bag file (or rosbag2 directory).
        offset: the byte offset at fault, or ``None``.
        record: the record at fault (``"CHUNK at 4117"``, ``"messages row 12"``), or ``None``.
    """

    def __init__(self, path: str, what: str, offset: Optional[int] = None, record: Optional[str] = None) -> None:
        self.path = path
        self.offset = offset
        self.record = record
        self.what = what
        where = path
        if offset is not None:
            where += f": offset {offset}"
        if record is not None:
            where += f": {record}"
        super().__init__(f"{where}: {what}")


class BagTypeMismatch(BagImportError):
    """A topic's type in the bag is not the type the mapping gives it (refused before
    anything is recorded).

    Attributes:
        path: the bag.  topic: the topic.  mapping_type, bag_type: the two types.
    """

    def __init__(self, path: str, topic: str, mapping_type: str, bag_type: str) -> None:
        self.path = path
        self.topic = topic
        self.mapping_type = mapping_type
        self.bag_type = bag_type
        super().__init__(
            f"{path}: topic {topic!r}: the bag records it as {bag_type!r}, the mapping says {mapping_type!r}"
        )


class DaemonStartError(BagImportError):
    """The private ``wshardd`` of ``--data-dir`` could not be found, started or stopped."""
