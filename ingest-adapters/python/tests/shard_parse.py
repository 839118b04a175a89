"""A tiny WShard reader for the tests, independent of the reference library.

Parses the 64-byte header, the 48-byte index entries and the string table of a Shard v2
file, and reads raw blocks and zstd blocks (through the ``zstandard`` package, a test
dependency: wshardd compresses ``reward``, ``done`` and ``time/timestamps_ns`` with zstd when
that pays). LZ4 blocks raise (the read-back tests use codec ``none`` or ``zstd`` for their
channels). Episodes are assembled from the manifest's ``meta/manifest`` JSON, which lists the
chunks in order.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Set

try:  # test dependency; without it zstd blocks are reported as compressed
    import zstandard
except ImportError:  # pragma: no cover
    zstandard = None  # type: ignore[assignment]

MAGIC = b"SHRD"
HEADER = struct.Struct("<4sBBHBBHIQQQQ16x")  # 64 bytes
ENTRY = struct.Struct("<QIHHQQQIHH")  # 48 bytes
ENTRY_ZSTD = 0x0002
ROLE_MANIFEST = 0x04
ROLE_WSHARD = 0x05
ENTRY_COMPRESSED = 0x0001
assert HEADER.size == 64 and ENTRY.size == 48


@dataclass
class Entry:
    """One index entry."""

    name: str
    flags: int
    data_offset: int
    disk_size: int
    orig_size: int
    checksum: int
    content_type: int


@dataclass
class Shard:
    """One parsed file: header fields and entries by name, in index order."""

    path: Path
    role: int
    flags: int
    compression_default: int
    entries: Dict[str, Entry]
    data: bytes

    def block(self, name: str) -> bytes:
        """The decoded bytes of block ``name`` (raw or zstd)."""
        e = self.entries[name]
        raw = self.data[e.data_offset : e.data_offset + e.disk_size]
        if e.flags & ENTRY_COMPRESSED and e.disk_size != e.orig_size:
            if not e.flags & ENTRY_ZSTD or zstandard is None:
                raise ValueError(f"{self.path}: block {name!r} is compressed (flags 0x{e.flags:04x})")
            raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=e.orig_size)
        assert len(raw) == e.orig_size, f"{name}: {len(raw)} bytes, orig_size {e.orig_size}"
        return raw

    def json(self, name: str) -> Any:
        """A JSON block, decoded."""
        return json.loads(self.block(name))


def read_shard(path: Path) -> Shard:
    """Parse the header, the index and the string table of ``path``."""
    data = Path(path).read_bytes()
    magic, version, role, flags, _align, comp, entry_size, count, strings_off, data_off, _schema, total = (
        HEADER.unpack_from(data, 0)
    )
    if magic != MAGIC or version != 2:
        raise ValueError(f"{path}: not a Shard v2 file ({magic!r} v{version})")
    if entry_size != 48 or total != len(data):
        raise ValueError(f"{path}: entry size {entry_size}, total_file_size {total} vs {len(data)}")
    strings = data[strings_off:data_off]
    entries: Dict[str, Entry] = {}
    for i in range(count):
        _hash, name_off, name_len, eflags, off, disk, orig, crc, ctype, _tags = ENTRY.unpack_from(data, 64 + 48 * i)
        name = strings[name_off : name_off + name_len].decode("utf-8")
        entries[name] = Entry(name, eflags, off, disk, orig, crc, ctype)
    return Shard(Path(path), role, flags, comp, entries, data)


@dataclass
class Episode:
    """A recorded episode: manifest JSON and every block concatenated over the chunks."""

    manifest: Dict[str, Any]
    chunk_meta: List[Dict[str, Any]]
    blocks: Dict[str, bytes] = field(default_factory=dict)
    #: Blocks stored compressed in some chunk (not read by this reader).
    compressed: Set[str] = field(default_factory=set)

    @property
    def status(self) -> str:
        return str(self.manifest.get("status"))

    @property
    def timesteps(self) -> int:
        return int(self.manifest["total_timesteps"])

    def channel(self, block_name: str) -> bytes:
        if block_name in self.compressed:
            raise ValueError(f"block {block_name!r} is compressed; use codec none to read it back")
        return self.blocks[block_name]

    @property
    def rewards(self) -> List[float]:
        raw = self.blocks.get("reward", b"")
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))

    @property
    def dones(self) -> List[int]:
        return list(self.blocks.get("done", b""))

    @property
    def timestamps(self) -> List[int]:
        raw = self.blocks.get("time/timestamps_ns", b"")
        return list(struct.unpack(f"<{len(raw) // 8}q", raw))


def read_episode(data_dir: Path, episode_id: str) -> Episode:
    """Read ``data_dir/{id}/{id}_manifest.wshard`` and its chunks, in chunk order."""
    folder = Path(data_dir) / episode_id
    manifest_shard = read_shard(folder / f"{episode_id}_manifest.wshard")
    assert manifest_shard.role == ROLE_MANIFEST, manifest_shard.role
    manifest = manifest_shard.json("meta/manifest")
    chunks = sorted(manifest["chunks"], key=lambda c: c["chunk_index"])
    ep = Episode(manifest, [])
    parts: Dict[str, List[bytes]] = {}
    for c in chunks:
        shard = read_shard(folder / c["uri"])
        assert shard.role == ROLE_WSHARD, shard.role
        ep.chunk_meta.append({"episode": shard.json("meta/episode"), "channels": shard.json("meta/channels")})
        for name in shard.entries:
            e = shard.entries[name]
            if name.startswith("meta/"):
                continue
            readable_zstd = bool(e.flags & ENTRY_ZSTD) and zstandard is not None
            if e.flags & ENTRY_COMPRESSED and e.disk_size != e.orig_size and not readable_zstd:
                ep.compressed.add(name)
            else:
                parts.setdefault(name, []).append(shard.block(name))
    ep.blocks = {k: b"".join(v) for k, v in parts.items() if k not in ep.compressed}
    return ep
