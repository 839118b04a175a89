"""ROS 1 ``.bag`` (format 2.0): through its index when the bag has one, else by a
sequential scan of its chunk records (a recording cut short has no index: ``rosbag
record`` writes it on close), which reads every complete chunk and the complete records
of an uncompressed chunk cut short, and reports the rest as damage."""

import bz2
import mmap
import struct
from typing import Any, Dict, Iterator, List, Set, Tuple

import lz4.frame  # type: ignore[import-untyped]  # a dependency of rosbags
from rosbags.typesys.msg import normalize_msgtype

from .errors import BagError
from .source import BagConnection, BagSource, Damage, RawMessage
from .typestores import build_typestore, default_store

MAGIC = b"#ROSBAG V2.0\n"
OP_MSGDATA, OP_BAGHEADER, OP_IDXDATA, OP_CHUNK, OP_CHUNK_INFO, OP_CONNECTION = 2, 3, 4, 5, 6, 7
_U32 = struct.Struct("<I")
_TIME = struct.Struct("<II")
#: An index entry: (log time, chunk position, offset in the chunk's data, connection id).
Entry = Tuple[int, int, int, int]


class Truncated(Exception):
    """A record runs past the end of what is there."""


def _fields(buf: Any) -> Dict[str, bytes]:
    out: Dict[str, bytes] = {}
    pos = 0
    while pos < len(buf):
        if pos + 4 > len(buf):
            raise ValueError("header field size cut short")
        (size,) = _U32.unpack_from(buf, pos)
        pos += 4
        if pos + size > len(buf):
            raise ValueError("header field runs past its header")
        name, sep, value = buf[pos : pos + size].partition(b"=")
        if not sep:
            raise ValueError("header field without '='")
        out[name.decode("latin-1")] = value
        pos += size
    return out


def _record(buf: Any, pos: int) -> Tuple[Dict[str, bytes], int, int, int]:
    """``(header fields, data start, data length, next position)`` of the record at
    ``pos``; :class:`Truncated` when it runs past ``buf``."""
    if pos + 4 > len(buf):
        raise Truncated
    (hlen,) = _U32.unpack_from(buf, pos)
    if pos + 8 + hlen > len(buf):
        raise Truncated
    header = _fields(buf[pos + 4 : pos + 4 + hlen])
    (dlen,) = _U32.unpack_from(buf, pos + 4 + hlen)
    start = pos + 8 + hlen
    return header, start, dlen, start + dlen


def _u32(h: Dict[str, bytes], k: str) -> int:
    return int(_U32.unpack(h[k])[0])


def _time(raw: bytes) -> int:
    sec, nsec = _TIME.unpack(raw)
    return int(sec) * 1_000_000_000 + int(nsec)


def _decompress(kind: str, data: bytes, size: int) -> bytes:
    if kind == "none":
        return data
    if kind == "bz2":
        return bz2.decompress(data)
    if kind == "lz4":
        return bytes(lz4.frame.decompress(data))
    raise ValueError(f"compression {kind!r} is not supported")


class Ros1Bag(BagSource):
    """A ROS 1 bag opened for import.

    Raises (from the constructor):
        BagError: not a ROS 1 bag 2.0, the bag header unreadable, or no message readable.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path=path, kind="ros1")
        try:
            with open(path, "rb") as f:
                self._buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if _size(f) else b""
        except OSError as e:
            raise BagError(path, f"cannot read: {e.strerror or e}") from None
        self.size_bytes = len(self._buf)
        self._conns: Dict[int, BagConnection] = {}
        self._defs: Dict[str, Tuple[str, str, str]] = {}
        self._chunks: Dict[int, Tuple[str, int, int, int]] = {}  # pos -> (compression, start, len, size)
        self._entries: List[Entry] = []
        self._chunk_cache: Tuple[int, bytes] = (-1, b"")
        buf = self._buf
        if buf[: len(MAGIC)] != MAGIC:
            raise BagError(path, "not a ROS 1 bag 2.0 (bad magic)", offset=0)
        try:
            header, _, _, first = _record(buf, len(MAGIC))
            if header.get("op") != bytes([OP_BAGHEADER]):
                raise ValueError("first record is not the bag header")
            index_pos = struct.unpack("<Q", header["index_pos"])[0]
            conn_count = _u32(header, "conn_count")
            chunk_count = _u32(header, "chunk_count")
        except (Truncated, ValueError, KeyError, struct.error) as e:
            raise BagError(path, f"bag header unreadable: {e or 'cut short'}", offset=len(MAGIC)) from None
        if index_pos and index_pos < len(buf) and self._read_index(index_pos, conn_count, chunk_count):
            pass
        else:
            why = "no index (the recording was not closed)" if not index_pos else "index missing or damaged"
            self._scan(first, why)
        if not self._conns:
            raise BagError(path, "no connection record readable: nothing to import")
        self._entries.sort()
        self.connections = sorted(self._conns.values(), key=lambda c: c.key)
        self.message_count = len(self._entries)
        for entry in self._entries:
            self.counts[entry[3]] = self.counts.get(entry[3], 0) + 1
        self.typestore = build_typestore(path, self._defs.values(), default_store(True, None))

    # -- the index ----------------------------------------------------------------------
    def _connection(self, header: Dict[str, bytes], data: bytes) -> None:
        conn = _u32(header, "conn")
        topic = header["topic"].decode()
        inner = _fields(data)
        msgtype = normalize_msgtype(inner["type"].decode())
        self._conns.setdefault(conn, BagConnection(conn, topic, msgtype))
        self._defs.setdefault(msgtype, (msgtype, "msg", inner.get("message_definition", b"").decode()))

    def _read_index(self, pos: int, conn_count: int, chunk_count: int) -> bool:
        buf = self._buf
        try:
            infos: List[int] = []
            for _ in range(conn_count):
                h, s, n, pos = _record(buf, pos)
                self._connection(h, buf[s : s + n])
            for _ in range(chunk_count):
                h, s, n, pos = _record(buf, pos)
                infos.append(int(struct.unpack("<Q", h["chunk_pos"])[0]))
            for chunk_pos in infos:
                h, s, n, nxt = _record(buf, chunk_pos)
                if h.get("op") != bytes([OP_CHUNK]) or nxt > len(buf):
                    raise ValueError("chunk record")
                self._chunks[chunk_pos] = (h["compression"].decode(), s, n, _u32(h, "size"))
                while nxt < len(buf):
                    h, s, n, after = _record(buf, nxt)
                    if h.get("op") != bytes([OP_IDXDATA]):
                        break
                    conn = _u32(h, "conn")
                    for i in range(_u32(h, "count")):
                        sec, nsec, off = struct.unpack_from("<III", buf, s + 12 * i)
                        self._entries.append((sec * 1_000_000_000 + nsec, chunk_pos, off, conn))
                    nxt = after
        except (Truncated, ValueError, KeyError, struct.error, UnicodeDecodeError):
            self._conns.clear()
            self._defs.clear()
            self._chunks.clear()
            self._entries.clear()
            return False
        return True

    # -- the scan -----------------------------------------------------------------------
    def _scan(self, pos: int, why: str) -> None:
        buf = self._buf
        lost_chunks = 0
        while pos < len(buf):
            try:
                h, s, n, nxt = _record(buf, pos)
                op = h.get("op", b"\0")[0]
            except (Truncated, ValueError):
                self.damage.append(Damage(self.path, f"{why}; record cut short: {len(buf) - pos} bytes not read", pos))
                return
            if op == OP_CHUNK:
                cut = nxt > len(buf)
                kind = h.get("compression", b"none").decode()
                if cut and kind != "none":
                    lost_chunks += 1
                    self.damage.append(
                        Damage(
                            self.path, f"{why}; {kind} chunk cut short: its messages are lost", pos, f"CHUNK at {pos}"
                        )
                    )
                    return
                got = self._scan_chunk(pos, kind, s, min(n, len(buf) - s), _u32(h, "size"))
                if cut:
                    self.damage.append(
                        Damage(
                            self.path,
                            f"{why}; chunk cut short ({len(buf) - s} of {n} bytes): {got} messages read from it",
                            pos,
                            f"CHUNK at {pos}",
                        )
                    )
                    return
            elif op == OP_CONNECTION and nxt <= len(buf):
                self._connection(h, buf[s : s + n])
            pos = nxt
        self.damage.append(Damage(self.path, f"{why}; every chunk record was read by a sequential scan"))

    def _scan_chunk(self, pos: int, kind: str, start: int, length: int, size: int) -> int:
        try:
            data = _decompress(kind, self._buf[start : start + length], size)
        except (ValueError, OSError, RuntimeError) as e:
            self.damage.append(Damage(self.path, f"chunk does not decompress: {e}", pos, f"CHUNK at {pos}"))
            return 0
        self._chunks[pos] = (kind, start, length, size)
        off, count = 0, 0
        while off < len(data):
            try:
                h, s, n, nxt = _record(data, off)
            except (Truncated, ValueError):
                break
            if nxt > len(data):
                break
            op = h.get("op", b"\0")[0]
            if op == OP_CONNECTION:
                self._connection(h, data[s:nxt])
            elif op == OP_MSGDATA:
                self._entries.append((_time(h["time"]), pos, off, _u32(h, "conn")))
                count += 1
            off = nxt
        return count

    # -- reading ------------------------------------------------------------------------
    def _chunk(self, pos: int) -> bytes:
        if self._chunk_cache[0] != pos:
            kind, start, length, size = self._chunks[pos]
            self._chunk_cache = (pos, _decompress(kind, self._buf[start : start + length], size))
        return self._chunk_cache[1]

    def raw_messages(self, keys: Set[int]) -> Iterator[RawMessage]:
        bad: Set[int] = set()  # chunks that do not read: their messages are skipped
        for t, chunk_pos, off, conn in self._entries:
            if conn not in keys or chunk_pos in bad:
                continue
            try:
                data = self._chunk(chunk_pos)
                h, s, n, nxt = _record(data, off)
                if h.get("op", b"\0")[0] != OP_MSGDATA or nxt > len(data):
                    raise ValueError("not a message record")
            except (Truncated, ValueError, KeyError, OSError, RuntimeError) as e:
                bad.add(chunk_pos)
                self.damage.append(
                    Damage(
                        self.path,
                        f"chunk unreadable ({e or 'cut short'}): its messages from offset {off} on are skipped",
                        chunk_pos,
                        f"CHUNK at {chunk_pos}",
                    )
                )
                continue
            yield t, (chunk_pos, off), self._conns[conn], data[s:nxt]

    def deserialize(self, raw: bytes, msgtype: str) -> Any:
        return self.typestore.deserialize_ros1(raw, msgtype)

    def close(self) -> None:
        self._chunk_cache = (-1, b"")
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()
        self._buf = b""


def _size(f: Any) -> int:
    f.seek(0, 2)
    return int(f.tell())
