"""rosbag2 MCAP files: through rosbags' indexed reader when the file has its footer and
summary, else by a sequential scan of its records (a recording cut short has neither),
which reads every complete chunk and message record and reports the rest as damage."""

import mmap
import struct
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import lz4.frame  # type: ignore[import-untyped]  # a dependency of rosbags
import zstandard
from rosbags.interfaces import MessageDefinitionFormat
from rosbags.rosbag2 import ReaderError
from rosbags.rosbag2.storage_mcap import McapReader

from .errors import BagError

if sys.version_info >= (3, 14):
    from compression.zstd import ZstdError as RosbagsZstdError
else:  # rosbags decompresses zstd chunks with backports.zstd before Python 3.14
    from backports.zstd import ZstdError as RosbagsZstdError
from .source import BagConnection, BagSource, Damage, RawMessage
from .typestores import build_typestore, default_store

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_DATA_END = (
    0x01,
    0x02,
    0x03,
    0x04,
    0x05,
    0x06,
    0x0F,
)
_SCHEMA_FORMATS = {"ros2msg": "msg", "ros2idl": "idl", "omgidl": "idl"}
#: (log time, record offset, 1 + offset in the chunk (0: a message outside chunks), channel id)
Entry = Tuple[int, int, int, int]


class _Cut(Exception):
    """A record runs past the data that is there."""


def _str(buf: Any, pos: int) -> Tuple[str, int]:
    (n,) = struct.unpack_from("<I", buf, pos)
    if pos + 4 + n > len(buf):
        raise _Cut
    return bytes(buf[pos + 4 : pos + 4 + n]).decode(), pos + 4 + n


def _decompress(kind: str, data: bytes, size: int) -> bytes:
    if kind == "":
        return data
    if kind == "zstd":
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    if kind == "lz4":
        return bytes(lz4.frame.decompress(data))
    raise ValueError(f"chunk compression {kind!r} is not supported")


class McapBag(BagSource):
    """A rosbag2 MCAP file opened for import (``distro`` picks the default typestore).

    Raises (from the constructor):
        BagError: not an MCAP file of the ``ros2`` profile, or nothing readable.
    """

    def __init__(self, path: str, distro: Optional[str] = None) -> None:
        super().__init__(path=path, kind="mcap")
        self._reader: Optional[McapReader] = None
        self._entries: List[Entry] = []
        self._chunks: Dict[int, Tuple[str, int, int, int]] = {}
        self._cache: Tuple[int, bytes] = (-1, b"")
        self._schemas: Dict[int, Tuple[str, str, str]] = {}
        self._conns: Dict[int, BagConnection] = {}
        try:
            self.size_bytes = Path(path).stat().st_size
            with open(path, "rb") as f:
                head = f.read(len(MAGIC))
        except OSError as e:
            raise BagError(path, f"cannot read: {e.strerror or e}") from None
        if head != MAGIC:
            raise BagError(path, "not an MCAP file (bad magic)", offset=0)
        defs: List[Tuple[str, str, str]] = []
        reader = McapReader(Path(path))
        try:
            reader.open()  # closes itself when it raises
        except (
            ReaderError,
            RosbagsZstdError,
            AssertionError,
            struct.error,
            ValueError,
            TypeError,
            KeyError,
            IndexError,
            UnicodeDecodeError,
        ) as e:
            self._scan(f"no usable footer or summary ({e or type(e).__name__})")
            defs = list(self._schemas.values())
        else:
            self._reader = reader
            for c in reader.connections:
                self._conns[c.id] = BagConnection(c.id, c.topic, c.msgtype)
                self.counts[c.id] = c.msgcount
                fmt = "msg" if c.msgdef.format == MessageDefinitionFormat.MSG else "idl"
                if c.msgdef.format != MessageDefinitionFormat.NONE:
                    defs.append((c.msgtype, fmt, c.msgdef.data))
            self.message_count = sum(self.counts.values())
        if not self._conns:
            raise BagError(path, "no channel record readable: nothing to import")
        self.connections = sorted(self._conns.values(), key=lambda c: c.key)
        self.typestore = build_typestore(path, defs, default_store(False, distro))

    # -- the scan -----------------------------------------------------------------------
    def _scan(self, why: str) -> None:
        with open(self.path, "rb") as f:
            self._buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._buf
        pos = len(MAGIC)
        while pos < len(buf):
            try:
                if pos + 9 > len(buf):
                    raise _Cut
                op = buf[pos]
                (n,) = struct.unpack_from("<Q", buf, pos + 1)
                body = pos + 9
                if body + n > len(buf):
                    if op == OP_CHUNK and pos + 9 + 40 <= len(buf):
                        got = self._scan_chunk(pos, body, cut=True)
                        raise _Cut(f"chunk cut short: {got} messages read from it")
                    raise _Cut
                if op in (OP_FOOTER, OP_DATA_END):
                    break
                if op == OP_CHUNK:
                    try:
                        self._scan_chunk(pos, body)
                    except (struct.error, ValueError, UnicodeDecodeError, zstandard.ZstdError, RuntimeError) as e:
                        # the record's length is sound: skip this chunk, read the next
                        self._chunks.pop(pos, None)
                        self._entries = [x for x in self._entries if x[1] != pos]
                        self.damage.append(Damage(self.path, f"{why}; chunk unreadable ({e}): skipped", pos))
                else:
                    self._record(op, buf, body, pos, 0)
            except _Cut as e:
                what = str(e) or f"record cut short: {len(buf) - pos} bytes not read"
                self.damage.append(Damage(self.path, f"{why}; {what}", pos))
                break
            except (struct.error, ValueError, UnicodeDecodeError, zstandard.ZstdError, RuntimeError) as e:
                self.damage.append(Damage(self.path, f"{why}; record unreadable ({e}): the rest is not read", pos))
                break
            pos = body + n
        else:
            self.damage.append(Damage(self.path, f"{why}; every record was read by a sequential scan"))
        self._entries.sort()
        for entry in self._entries:
            self.counts[entry[3]] = self.counts.get(entry[3], 0) + 1
        self.message_count = len(self._entries)

    def _record(self, op: int, buf: Any, body: int, rec: int, inner: int) -> None:
        if op == OP_SCHEMA:
            (sid,) = struct.unpack_from("<H", buf, body)
            name, p = _str(buf, body + 2)
            enc, p = _str(buf, p)
            (n,) = struct.unpack_from("<I", buf, p)
            text = bytes(buf[p + 4 : p + 4 + n]).decode()
            self._schemas[sid] = (name, _SCHEMA_FORMATS.get(enc, ""), text)
        elif op == OP_CHANNEL:
            cid, sid = struct.unpack_from("<HH", buf, body)
            topic, _ = _str(buf, body + 4)
            if sid not in self._schemas:
                raise ValueError(f"channel {cid} names schema {sid}, not defined before it")
            self._conns.setdefault(cid, BagConnection(cid, topic, self._schemas[sid][0]))
        elif op == OP_MESSAGE:
            cid, _, log_time = struct.unpack_from("<HIQ", buf, body)
            self._entries.append((log_time, rec, inner, cid))

    def _scan_chunk(self, rec: int, body: int, cut: bool = False) -> int:
        """Index the chunk record at ``rec``; ``cut``: it runs past the end of the file (only
        an uncompressed chunk's complete records are read then). Returns its messages."""
        buf = self._buf
        _, _, size, crc = struct.unpack_from("<QQQI", buf, body)
        kind, p = _str(buf, body + 28)
        (clen,) = struct.unpack_from("<Q", buf, p)
        if cut:
            if kind != "":
                return 0
            clen = size = len(buf) - (p + 8)
        self._chunks[rec] = (kind, p + 8, clen, size)
        data = self._chunk(rec)
        pos, count = 0, 0
        while pos + 9 <= len(data):
            op = data[pos]
            (n,) = struct.unpack_from("<Q", data, pos + 1)
            if pos + 9 + n > len(data):
                if cut:
                    break
                raise ValueError(f"record at {pos} of the chunk runs past it")
            self._record(op, data, pos + 9, rec, pos + 1)
            count += op == OP_MESSAGE
            pos += 9 + n
        return count

    def _chunk(self, rec: int) -> bytes:
        if self._cache[0] != rec:
            kind, start, length, size = self._chunks[rec]
            self._cache = (rec, _decompress(kind, bytes(self._buf[start : start + length]), size))
        return self._cache[1]

    # -- reading ------------------------------------------------------------------------
    def raw_messages(self, keys: Set[int]) -> Iterator[RawMessage]:
        if self._reader is not None:
            yield from self._indexed(keys)
        else:
            yield from self._scanned(keys, 0)

    def _scanned(self, keys: Set[int], skip: int) -> Iterator[RawMessage]:
        """The scan's messages of ``keys``, less the first ``skip`` of them."""
        for t, rec, inner, cid in self._entries:
            if cid not in keys:
                continue
            if skip:
                skip -= 1
                continue
            try:
                if inner:
                    data, body = self._chunk(rec), inner - 1 + 9
                else:
                    data, body = self._buf, rec + 9
                (n,) = struct.unpack_from("<Q", data, body - 8)
                raw = bytes(data[body + 22 : body + n])
            except (struct.error, ValueError, zstandard.ZstdError, RuntimeError) as e:
                self.damage.append(Damage(self.path, f"message unreadable ({e}): the rest is not imported", rec))
                return
            yield t, (rec, inner), self._conns[cid], raw

    def _indexed(self, keys: Set[int]) -> Iterator[RawMessage]:
        """Through rosbags' index; when a chunk fails part way, the rest comes from a
        sequential scan that skips what does not read (the scan's order is the index's:
        log time, chunk, position), less the messages already given."""
        assert self._reader is not None
        conns = [c for c in self._reader.connections if c.id in keys]
        n = 0
        try:
            for conn, t, data in self._reader.messages(conns):
                n += 1
                yield t, (0, n), self._conns[conn.id], bytes(data)
            return
        except (ReaderError, RosbagsZstdError, struct.error, ValueError, zstandard.ZstdError, RuntimeError) as e:
            self.damage.append(
                Damage(self.path, f"unreadable after {n} messages ({e}): the rest is read by a sequential scan")
            )
        self._reader.close()
        self._reader = None
        self.counts.clear()
        self._scan("the indexed read failed")
        yield from self._scanned(keys, n)

    def deserialize(self, raw: bytes, msgtype: str) -> Any:
        return self.typestore.deserialize_cdr(raw, msgtype)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        buf = getattr(self, "_buf", None)
        if isinstance(buf, mmap.mmap):
            self._cache = (-1, b"")
            buf.close()
