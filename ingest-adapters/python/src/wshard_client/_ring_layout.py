"""The shared-memory ring's layout (docs/PROTOCOL.md, "Shared-memory transport"): the
offsets, sizes and codes of the Rust ``wshard_ingest_proto::ring``, generated from it.

Layout (little-endian, offsets in bytes)::

    0     magic              [u8; 8]
    8     version            u32
    12    slot_size          u32
    16    slot_count         u32
    64    head               u64
    128   tail               u64
    192   consumer_sleeping  u32
    256   producer_sleeping  u32
    320   dropped_steps      u64
    384   dropped_batches    u64
    4096  slot[0] .. slot[slot_count - 1], slot_size bytes each: len u32 | count u32 | records

Do not edit: ``RING_LAYOUT_BLESS=1 cargo test -p wshard-ingest-proto --test proto_ring_python_layout``
rewrites this file, and fails while it differs from the Rust constants.
"""

#: ``magic`` at offset 0.
RING_MAGIC = b"WSHRING1"
#: ``version`` at offset 8.
RING_VERSION = 1
#: Bytes before ``slot[0]``.
RING_HEADER_BYTES = 4096
#: Offset of ``magic`` (``[u8; 8]``).
OFFSET_MAGIC = 0
#: Offset of ``version`` (``u32``).
OFFSET_VERSION = 8
#: Offset of ``slot_size`` (``u32``).
OFFSET_SLOT_SIZE = 12
#: Offset of ``slot_count`` (``u32``).
OFFSET_SLOT_COUNT = 16
#: Offset of ``head`` (``u64``).
OFFSET_HEAD = 64
#: Offset of ``tail`` (``u64``).
OFFSET_TAIL = 128
#: Offset of ``consumer_sleeping`` (``u32``).
OFFSET_CONSUMER_SLEEPING = 192
#: Offset of ``producer_sleeping`` (``u32``).
OFFSET_PRODUCER_SLEEPING = 256
#: Offset of ``dropped_steps`` (``u64``).
OFFSET_DROPPED_STEPS = 320
#: Offset of ``dropped_batches`` (``u64``).
OFFSET_DROPPED_BATCHES = 384
#: Bytes of ``magic | version | slot_size | slot_count``, written before ``SHM_ATTACH``.
RING_IDENT_BYTES = 20
#: Bytes of a slot's header: ``len u32 | count u32``.
SLOT_HEADER_BYTES = 8
#: ``slot_size`` is a multiple of this.
SLOT_ALIGN = 64
#: ``slot_size`` is at least this plus one timestep record.
SLOT_MIN_OVERHEAD = 64
#: Fewest slots a ring may have.
MIN_SLOTS = 2
#: Most slots a ring may have.
MAX_SLOTS = 65536
#: File descriptors that travel with ``SHM_ATTACH``: ring memfd, ``data_ready``, ``space_ready``.
SHM_ATTACH_FDS = 3
#: The ``policy`` byte of ``SHM_ATTACH`` for ``block``.
POLICY_BLOCK = 0
#: The ``policy`` byte of ``SHM_ATTACH`` for ``drop_newest``.
POLICY_DROP_NEWEST = 1
#: The ``policy`` byte of ``SHM_ATTACH`` for ``drop_oldest``.
POLICY_DROP_OLDEST = 2
