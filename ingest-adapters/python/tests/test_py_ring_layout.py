"""The ring layout the Python client writes by: the generated constants
(``wshard_client/_ring_layout.py``, kept equal to the Rust ``wshard_ingest_proto::ring`` by the
Rust test ``proto_ring_python_layout``) agree with what ``_ring.py`` builds on them by hand:
the header and slot-header ``struct`` formats, the control words it maps, the policy codes.
No daemon needed."""

from __future__ import annotations

from wshard_client import _ring as ring
from wshard_client import _ring_layout as layout


def test_py_ring_layout_structs_match_the_generated_offsets() -> None:
    assert ring.RING_IDENT.size == layout.RING_IDENT_BYTES
    assert ring.SLOT_HEADER.size == layout.SLOT_HEADER_BYTES
    ident = ring.RING_IDENT.pack(layout.RING_MAGIC, layout.RING_VERSION, 0x11223344, 0x55667788)

    def u32_at(offset: int) -> int:
        return int.from_bytes(ident[offset : offset + 4], "little")

    assert ident[layout.OFFSET_MAGIC : layout.OFFSET_MAGIC + 8] == layout.RING_MAGIC
    assert u32_at(layout.OFFSET_VERSION) == layout.RING_VERSION
    assert u32_at(layout.OFFSET_SLOT_SIZE) == 0x11223344
    assert u32_at(layout.OFFSET_SLOT_COUNT) == 0x55667788
    assert ring.SLOT_HEADER.pack(7, 9) == (7).to_bytes(4, "little") + (9).to_bytes(4, "little")


def test_py_ring_layout_control_words_lie_in_the_mapped_words() -> None:
    for offset in (layout.OFFSET_HEAD, layout.OFFSET_TAIL, layout.OFFSET_DROPPED_STEPS, layout.OFFSET_DROPPED_BATCHES):
        assert offset % 8 == 0 and offset + 8 <= ring.CONTROL_BYTES, offset
    for offset in (layout.OFFSET_CONSUMER_SLEEPING, layout.OFFSET_PRODUCER_SLEEPING):
        assert offset % 4 == 0 and offset + 4 <= ring.CONTROL_BYTES, offset
    assert layout.RING_IDENT_BYTES <= layout.OFFSET_HEAD
    assert ring.CONTROL_BYTES <= layout.RING_HEADER_BYTES
    assert ring.ring_bytes(256, 4) == layout.RING_HEADER_BYTES + 256 * 4


def test_py_ring_layout_policies_are_the_wire_codes() -> None:
    assert [(str(p), p.value) for p in ring.RingPolicy] == [
        ("block", layout.POLICY_BLOCK),
        ("drop_newest", layout.POLICY_DROP_NEWEST),
        ("drop_oldest", layout.POLICY_DROP_OLDEST),
    ]
