"""StampAssembler alone (no daemon): pairing by stamp, what is given up and when."""

import pytest

from wshard_ros import Sample
from wshard_ros.bridge.assemble import StampAssembler


def s(t: int, tag: str) -> Sample:
    return Sample(t, [tag.encode(), str(t).encode()])


def test_ros_bridge_assemble_pairs_in_mapping_order() -> None:
    a = StampAssembler(["/rgb", "/depth"])
    assert a.add("/depth", s(5, "d")).step is None and a.pending == 1
    got = a.add("/rgb", s(5, "c"))
    assert got.step == (5, [b"c", b"5", b"d", b"5"]) and got.unmatched == [] and a.pending == 0


def test_ros_bridge_assemble_gives_up_older_stamps_and_duplicates() -> None:
    a = StampAssembler(["/a", "/b", "/c"])
    a.add("/a", s(1, "a"))
    a.add("/b", s(2, "b"))
    assert a.add("/a", s(1, "a2")).unmatched == [["/a"]]  # duplicate of a pending stamp
    a.add("/a", s(3, "a"))
    a.add("/b", s(3, "b"))
    got = a.add("/c", s(3, "c"))
    assert got.step is not None and got.step[0] == 3
    assert got.unmatched == [["/a"], ["/b"]]  # stamps 1 and 2
    assert a.add("/c", s(2, "c")).unmatched == [["/c"]]  # older than the completed 3
    a.add("/a", s(3, "a"))  # equal to the completed one: waits
    assert a.pending == 1
    assert a.drain() == [["/a"]] and a.pending == 0


def test_ros_bridge_assemble_max_pending_and_order() -> None:
    a = StampAssembler(["/a", "/b"], max_pending=2)
    a.add("/a", s(30, "a"))
    a.add("/a", s(10, "a"))  # out of order: kept sorted
    got = a.add("/a", s(20, "a"))
    assert got.unmatched == [["/a"]]  # the oldest, 10, goes
    got = a.add("/b", s(20, "b"))
    assert got.step is not None and got.step[0] == 20 and got.unmatched == []
    assert a.pending == 1
    with pytest.raises(ValueError):
        StampAssembler(["/a"], max_pending=0)
