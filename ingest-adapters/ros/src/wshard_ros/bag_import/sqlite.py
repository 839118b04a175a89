"""rosbag2 sqlite3 files (``.db3``): one ordered query on an intact file; on a file cut
short (its size below what its header says) or a query that fails part way, every row
still readable is salvaged by row id and the rest reported as damage."""

import sqlite3
import struct
import urllib.parse
from pathlib import Path
from typing import Any, Iterator, List, Optional, Set, Tuple

from .errors import BagError
from .source import BagConnection, BagSource, Damage, RawMessage
from .typestores import build_typestore, default_store

SQLITE_MAGIC = b"SQLite format 3\x00"
#: How far past an unreadable row id the salvage probes (ids + 2^0 .. 2^N).
SALVAGE_PROBES = 24


class SqliteBag(BagSource):
    """A rosbag2 sqlite3 file opened for import.

    Raises (from the constructor):
        BagError: not an SQLite database, or no ``topics`` / ``messages`` tables readable.
    """

    def __init__(self, path: str, distro: Optional[str] = None) -> None:
        super().__init__(path=path, kind="sqlite3")
        try:
            self.size_bytes = Path(path).stat().st_size
            with open(path, "rb") as f:
                head = f.read(100)
        except OSError as e:
            raise BagError(path, f"cannot read: {e.strerror or e}") from None
        if head[:16] != SQLITE_MAGIC or len(head) < 100:
            raise BagError(path, "not an SQLite database (bad magic)", offset=0)
        page = struct.unpack(">H", head[16:18])[0]
        page = 65536 if page == 1 else page
        pages = struct.unpack(">I", head[28:32])[0]
        self._cut = pages * page > self.size_bytes
        try:
            uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?immutable=1"
            self._db = sqlite3.connect(uri, uri=True)
            if self._cut:
                # SQLite refuses a file shorter than its header's page count as corrupt unless
                # the schema is "writable"; the connection is read-only, nothing is written.
                self._db.execute("PRAGMA writable_schema = ON")
            rows = self._db.execute("SELECT id, name, type FROM topics ORDER BY id").fetchall()
        except sqlite3.Error as e:
            raise BagError(path, f"topics table unreadable: {e}", record="topics") from None
        self.connections = [BagConnection(int(i), str(n), str(t)) for i, n, t in rows]
        self._conns = {c.key: c for c in self.connections}
        defs: List[Tuple[str, str, str]] = []
        try:
            for name, enc, text in self._db.execute(
                "SELECT topic_type, encoding, encoded_message_definition FROM message_definitions ORDER BY id"
            ):
                defs.append((str(name), "msg" if enc == "ros2msg" else "idl", str(text)))
        except sqlite3.Error:
            pass  # schema < 4: no definitions in the bag; the default store is used
        self._salvaged: Optional[List[Tuple[int, int, int]]] = None
        if self._cut:
            self._salvage(f"file cut short: {self.size_bytes} of {pages * page} bytes", 0)
        else:
            try:
                for tid, n in self._db.execute("SELECT topic_id, count(*) FROM messages GROUP BY topic_id"):
                    self.counts[int(tid)] = int(n)
            except sqlite3.Error as e:
                self._salvage(f"messages unreadable ({e})", 0)
        self.message_count = sum(self.counts.values())
        self.typestore = build_typestore(path, defs, default_store(False, distro))

    def _salvage(self, why: str, first_id: int) -> None:
        """Index every readable row (timestamp, id, topic) by row id; unreadable spans are
        skipped by probing ahead and reported."""
        rows: List[Tuple[int, int, int]] = []
        next_id, bad_from = first_id, None
        probes = 0
        while probes <= SALVAGE_PROBES:
            try:
                cur = self._db.execute(
                    "SELECT timestamp, id, topic_id FROM messages WHERE id >= ? ORDER BY id", (next_id,)
                )
                for t, i, tid in cur:
                    if bad_from is not None:
                        self.damage.append(
                            Damage(
                                self.path,
                                f"{why}; rows from id {bad_from} to {int(i) - 1} unreadable",
                                record=f"messages row {bad_from}",
                            )
                        )
                        bad_from, probes = None, 0
                    rows.append((int(t), int(i), int(tid)))
                    next_id = int(i) + 1
                break
            except sqlite3.Error:
                bad_from = next_id if bad_from is None else bad_from
                next_id += 1 << probes
                probes += 1
        if bad_from is not None:
            self.damage.append(
                Damage(self.path, f"{why}; rows from id {bad_from} on unreadable", record=f"messages row {bad_from}")
            )
        elif not self.damage:
            self.damage.append(Damage(self.path, f"{why}; every row salvaged by row id"))
        rows.sort()
        self._salvaged = rows
        self.counts.clear()
        for _, _, tid in rows:
            self.counts[tid] = self.counts.get(tid, 0) + 1

    def raw_messages(self, keys: Set[int]) -> Iterator[RawMessage]:
        last: Optional[Tuple[int, int]] = None
        if self._salvaged is None:
            marks = ",".join("?" for _ in keys)
            try:
                cur = self._db.execute(
                    "SELECT timestamp, id, topic_id, data FROM messages"
                    f" WHERE topic_id IN ({marks}) ORDER BY timestamp, id",
                    sorted(keys),
                )
                for t, i, tid, data in cur:
                    last = (int(t), int(i))
                    yield int(t), (int(i),), self._conns[int(tid)], bytes(data)
                return
            except sqlite3.Error as e:
                after = f"after row id {last[1]}" if last else "before the first row"
                self._salvage(f"the ordered query failed {after} ({e})", 0)
        yield from self._salvaged_messages(keys, last)

    def _salvaged_messages(self, keys: Set[int], after: Optional[Tuple[int, int]]) -> Iterator[RawMessage]:
        """The salvaged rows of ``keys`` past ``after`` (timestamp, id), data read row by row."""
        for t, i, tid in self._salvaged or []:
            if tid not in keys or (after is not None and (t, i) <= after):
                continue
            try:
                row = self._db.execute("SELECT data FROM messages WHERE id = ?", (i,)).fetchone()
            except sqlite3.Error as e:
                self.damage.append(Damage(self.path, f"data unreadable ({e})", record=f"messages row {i}"))
                continue
            if row is not None:
                yield t, (i,), self._conns[tid], bytes(row[0])

    def deserialize(self, raw: bytes, msgtype: str) -> Any:
        return self.typestore.deserialize_cdr(raw, msgtype)

    def close(self) -> None:
        self._db.close()
