"""Bag import: ROS 1 ``.bag``, rosbag2 sqlite3 and rosbag2 MCAP into one multi-stream
episode of ``wshardd``, through the same mapping file, converters and recording core as
the live bridge (ingest-adapters/ros/README.md, "Bag import")."""

from .bags import open_bag
from .errors import BagError, BagImportError, BagTypeMismatch, DaemonStartError
from .source import BagConnection, BagSource, Damage

__all__ = [
    "BagConnection",
    "BagError",
    "BagImportError",
    "BagSource",
    "BagTypeMismatch",
    "DaemonStartError",
    "Damage",
    "open_bag",
]
