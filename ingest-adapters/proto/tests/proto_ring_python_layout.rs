//! The Python client's copy of the ring layout, `wshard_client/_ring_layout.py`, is
//! generated from `wshard_ingest_proto::ring`: this test renders it from the constants and
//! fails when the committed file differs. `RING_LAYOUT_BLESS=1 cargo test -p
//! wshard-ingest-proto --test proto_ring_python_layout` rewrites it.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::PathBuf;

use wshard_ingest_proto::ring::{
    RingPolicy, MAX_SLOTS, MIN_SLOTS, OFFSET_CONSUMER_SLEEPING, OFFSET_DROPPED_BATCHES,
    OFFSET_DROPPED_STEPS, OFFSET_HEAD, OFFSET_MAGIC, OFFSET_PRODUCER_SLEEPING, OFFSET_SLOT_COUNT,
    OFFSET_SLOT_SIZE, OFFSET_TAIL, OFFSET_VERSION, RING_HEADER_BYTES, RING_IDENT_BYTES, RING_MAGIC,
    RING_VERSION, SHM_ATTACH_FDS, SLOT_ALIGN, SLOT_HEADER_BYTES, SLOT_MIN_OVERHEAD,
};

const COMMAND: &str =
    "RING_LAYOUT_BLESS=1 cargo test -p wshard-ingest-proto --test proto_ring_python_layout";

fn python_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python/src/wshard_client/_ring_layout.py")
}

/// The header's fields in offset order: offset, name, type.
const FIELDS: [(usize, &str, &str); 10] = [
    (OFFSET_MAGIC, "magic", "[u8; 8]"),
    (OFFSET_VERSION, "version", "u32"),
    (OFFSET_SLOT_SIZE, "slot_size", "u32"),
    (OFFSET_SLOT_COUNT, "slot_count", "u32"),
    (OFFSET_HEAD, "head", "u64"),
    (OFFSET_TAIL, "tail", "u64"),
    (OFFSET_CONSUMER_SLEEPING, "consumer_sleeping", "u32"),
    (OFFSET_PRODUCER_SLEEPING, "producer_sleeping", "u32"),
    (OFFSET_DROPPED_STEPS, "dropped_steps", "u64"),
    (OFFSET_DROPPED_BATCHES, "dropped_batches", "u64"),
];

/// The Python module, from the Rust constants.
fn render() -> String {
    let mut out = String::from(
        "\"\"\"The shared-memory ring's layout (docs/PROTOCOL.md, \"Shared-memory transport\"): the\n\
         offsets, sizes and codes of the Rust ``wshard_ingest_proto::ring``, generated from it.\n\
         \n\
         Layout (little-endian, offsets in bytes)::\n\n",
    );
    for (offset, name, ty) in FIELDS {
        writeln!(out, "    {offset:<5} {name:<18} {ty}").unwrap();
    }
    writeln!(
        out,
        "    {RING_HEADER_BYTES:<5} slot[0] .. slot[slot_count - 1], slot_size bytes each: \
         len u32 | count u32 | records\n\n\
         Do not edit: ``{COMMAND}``\n\
         rewrites this file, and fails while it differs from the Rust constants.\n\
         \"\"\"\n"
    )
    .unwrap();
    let magic: String = RING_MAGIC.iter().map(|&b| char::from(b)).collect();
    let mut line = |comment: &str, name: &str, value: String| {
        writeln!(out, "#: {comment}").unwrap();
        writeln!(out, "{name} = {value}").unwrap();
    };
    line(
        "``magic`` at offset 0.",
        "RING_MAGIC",
        format!("b\"{magic}\""),
    );
    line(
        "``version`` at offset 8.",
        "RING_VERSION",
        RING_VERSION.to_string(),
    );
    line(
        "Bytes before ``slot[0]``.",
        "RING_HEADER_BYTES",
        RING_HEADER_BYTES.to_string(),
    );
    for (offset, name, ty) in FIELDS {
        line(
            &format!("Offset of ``{name}`` (``{ty}``)."),
            &format!("OFFSET_{}", name.to_uppercase()),
            offset.to_string(),
        );
    }
    line(
        "Bytes of ``magic | version | slot_size | slot_count``, written before ``SHM_ATTACH``.",
        "RING_IDENT_BYTES",
        RING_IDENT_BYTES.to_string(),
    );
    line(
        "Bytes of a slot's header: ``len u32 | count u32``.",
        "SLOT_HEADER_BYTES",
        SLOT_HEADER_BYTES.to_string(),
    );
    line(
        "``slot_size`` is a multiple of this.",
        "SLOT_ALIGN",
        SLOT_ALIGN.to_string(),
    );
    line(
        "``slot_size`` is at least this plus one timestep record.",
        "SLOT_MIN_OVERHEAD",
        SLOT_MIN_OVERHEAD.to_string(),
    );
    line(
        "Fewest slots a ring may have.",
        "MIN_SLOTS",
        MIN_SLOTS.to_string(),
    );
    line(
        "Most slots a ring may have.",
        "MAX_SLOTS",
        MAX_SLOTS.to_string(),
    );
    line(
        "File descriptors that travel with ``SHM_ATTACH``: ring memfd, ``data_ready``, ``space_ready``.",
        "SHM_ATTACH_FDS",
        SHM_ATTACH_FDS.to_string(),
    );
    for policy in RingPolicy::ALL {
        line(
            &format!("The ``policy`` byte of ``SHM_ATTACH`` for ``{policy}``."),
            &format!("POLICY_{}", policy.name().to_uppercase()),
            policy.code().to_string(),
        );
    }
    out
}

#[test]
fn proto_ring_python_layout_is_current() {
    let path = python_file();
    let want = render();
    if std::env::var("RING_LAYOUT_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from wshard_ingest_proto::ring: run {COMMAND}",
        path.display()
    );
}
