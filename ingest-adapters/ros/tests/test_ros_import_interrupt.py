"""An import interrupted while messages are fed (SIGINT / SIGTERM set the same event):
the feeding stops, the episode is aborted with what was fed, nothing after."""

import io
import threading
from pathlib import Path
from typing import Any

import bagkit as B
from bridgekit import index_of
from shard_parse import read_episode

from wshard_ros import loads_mapping
from wshard_ros.bag_import.progress import Progress
from wshard_ros.bag_import.run import check_types, open_bags, record
from wshard_ros.bridge import BridgeOptions

STOP_AFTER = 120


class StopAfter(Progress):
    """Progress that sets the interrupt after ``STOP_AFTER`` messages (as the signal
    handler of the command line does)."""

    def __init__(self, interrupt: threading.Event) -> None:
        super().__init__(None, quiet=True, out=io.StringIO())
        self.interrupt = interrupt

    def update(self, nbytes: int) -> None:
        super().update(nbytes)
        if self.messages == STOP_AFTER:
            self.interrupt.set()


def test_ros_import_interrupted_aborts_the_episode(daemon: Any, tmp_path: Path) -> None:
    msgs = B.workload("mcap", joints=300, frames=4)
    bag = B.write_bag("mcap", tmp_path / "intr", msgs)
    mapping = loads_mapping(B.MAPPING)
    sources = open_bags([str(bag)])
    try:
        topics = check_types(mapping, sources)
        interrupt = threading.Event()
        opts = BridgeOptions(str(daemon.socket), None, client_name="test", block_when_full=True)
        result = record(mapping, sources, topics, opts, "intr", "", {}, StopAfter(interrupt), interrupt)
    finally:
        for s in sources:
            s.close()
    assert result.outcome == "interrupted"
    assert index_of(daemon, "intr")["status"] == "aborted"
    fed = [m for m in msgs if m.topic != "/unmapped"][:STOP_AFTER]
    assert sum(t.read for t in result.topics.values() if t.mapped) == STOP_AFTER
    joints = [m for m in fed if m.topic == "/joint_states"]
    j = read_episode(daemon.data_dir / "intr" / "streams", "joint_states")
    assert j.status == "aborted"
    assert j.timestamps == [B.stamp_of(m.msg) for m in joints]
