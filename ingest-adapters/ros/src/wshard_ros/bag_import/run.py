"""The import: open the bags, check the mapping against them, start the episode, feed
every message of a mapped topic to the recording core (``Bridge``, back-pressure, receive
time = the bag's log time) in bag order, end the episode ``completed`` (or ``aborted``
when a bag is damaged) and count per topic what was read, recorded and skipped."""

import heapq
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from rosbags.serde import SerdeError

from ..bridge import Bridge, BridgeError, BridgeOptions
from ..mapping import BridgeMapping
from ..msgtypes import canonical_type
from .bags import open_bag
from .errors import BagTypeMismatch
from .progress import Progress
from .source import BagConnection, BagSource, Damage

CLIENT_NAME = "wshard-ros-import"
#: Skip reasons of the summary.
NOT_MAPPED = "not_in_mapping"
UNDECODABLE = "undecodable"
_DESER_ERRORS = (SerdeError, struct.error, IndexError, ValueError, TypeError, KeyError, UnicodeDecodeError)
_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9._-]")
#: A message in the merged order: (log time, bag number, position, source, connection, raw).
Merged = Tuple[int, int, Tuple[int, ...], BagSource, BagConnection, bytes]


@dataclass
class TopicCount:
    """What the import did with one topic."""

    topic: str
    bag_type: str
    mapped: str  # "stream", "event" or "" (not in the mapping)
    read: int = 0
    recorded: int = 0
    skipped: Dict[str, int] = field(default_factory=dict)
    last_error: Optional[str] = None

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n


@dataclass
class ImportResult:
    """The outcome: ``outcome`` is ``completed``, ``aborted`` or ``failed``."""

    episode_id: str
    outcome: str
    topics: Dict[str, TopicCount]
    damage: List[Damage]
    error: Optional[str] = None
    #: log time of the first message fed to the episode (0: none).
    first_t_ns: int = 0

    @property
    def skipped_mapped(self) -> int:
        """Messages of mapped topics not recorded."""
        return sum(sum(t.skipped.values()) for t in self.topics.values() if t.mapped)


def default_episode_id(bags: List[str]) -> str:
    """The first bag's name without its extension, made a valid episode id."""
    name = os.path.basename(os.path.normpath(bags[0]))
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    ident = _NOT_ID_CHAR.sub("_", stem).lstrip(".")[:128]
    return ident or "bag"


def open_bags(paths: List[str]) -> List[BagSource]:
    """Every bag's readers, in command-line order.

    Raises:
        BagError: a bag that cannot be read (those opened before are closed).
    """
    sources: List[BagSource] = []
    try:
        for p in paths:
            sources.extend(open_bag(p))
    except BaseException:
        for s in sources:
            s.close()
        raise
    return sources


def check_types(mapping: BridgeMapping, sources: List[BagSource]) -> Dict[str, TopicCount]:
    """Per topic of the bags, its type and whether the mapping records it.

    Raises:
        BagTypeMismatch: a mapped topic whose type in a bag is another type.
    """
    wanted = {s.topic: ("stream", s.type) for s in mapping.topics}
    wanted.update({e.topic: ("event", e.type) for e in mapping.events})
    topics: Dict[str, TopicCount] = {}
    for src in sources:
        for conn in src.connections:
            kind, want = wanted.get(conn.topic, ("", ""))
            have = canonical_type(conn.msgtype) or conn.msgtype
            if kind and have != want:
                raise BagTypeMismatch(src.path, conn.topic, want, conn.msgtype)
            tc = topics.setdefault(conn.topic, TopicCount(conn.topic, have, kind))
            if not kind:
                n = src.counts.get(conn.key, 0)
                tc.read += n
                tc.skip(NOT_MAPPED, n)
    return topics


def _tagged(number: int, src: BagSource, keys: Set[int]) -> Iterator[Merged]:
    for t, pos, conn, raw in src.raw_messages(keys):
        yield t, number, pos, src, conn, raw


def merged_messages(sources: List[BagSource], topics: Dict[str, TopicCount]) -> Iterator[Merged]:
    """The mapped topics' messages of every bag in one order: log time, then bag (command
    line order), then position in the bag."""
    its = []
    for n, src in enumerate(sources):
        keys = {c.key for c in src.connections if topics[c.topic].mapped}
        if keys:
            its.append(_tagged(n, src, keys))
    return heapq.merge(*its, key=lambda m: (m[0], m[1], m[2]))


def import_metadata(user: Dict[str, Any], sources: List[BagSource], damage: List[Damage]) -> Dict[str, Any]:
    """The episode's metadata: the user's, plus ``ros_bag_import`` (bag names, kinds,
    sizes; damage found when the bags were opened)."""
    bags = [{"file": os.path.basename(s.path), "kind": s.kind, "bytes": s.size_bytes} for s in sources]
    info: Dict[str, Any] = {"bags": bags}
    if damage:
        info["damage"] = [d.as_json() for d in damage]
    return {**user, "ros_bag_import": info}


def record(
    mapping: BridgeMapping,
    sources: List[BagSource],
    topics: Dict[str, TopicCount],
    options: BridgeOptions,
    episode_id: str,
    env_id: str,
    metadata: Dict[str, Any],
    progress: Progress,
    interrupt: Optional[threading.Event] = None,
) -> ImportResult:
    """Record the bags into one episode through the recording core. ``interrupt`` set
    while messages are fed ends the feeding and the episode ``aborted`` (outcome
    ``interrupted`` in the result); once every message is fed the episode is finished.

    Raises:
        BridgeError: the episode could not be started (the daemon refused it, is gone).
    """
    opened_damage = [d for s in sources for d in s.damage]
    bridge = Bridge(mapping, options)
    try:
        bridge.start(episode_id, env_id, import_metadata(metadata, sources, opened_damage))
        first_t: Optional[int] = None
        stop = interrupt or threading.Event()
        try:
            for t, _, _, src, conn, raw in merged_messages(sources, topics):
                if stop.is_set():
                    result = _end(bridge, "aborted", episode_id, topics, [])
                    result.outcome = "interrupted" if result.outcome == "aborted" else result.outcome
                    return result
                first_t = t if first_t is None else first_t
                tc = topics[conn.topic]
                tc.read += 1
                progress.update(len(raw))
                try:
                    msg = src.deserialize(raw, conn.msgtype)
                except _DESER_ERRORS as e:
                    tc.skip(UNDECODABLE)
                    tc.last_error = f"{src.path}: topic {conn.topic!r}: message at log time {t} does not decode: {e}"
                    continue
                bridge.on_message(conn.topic, msg, t)
        except KeyboardInterrupt:
            _end(bridge, "aborted", episode_id, topics, [])
            raise
        progress.done()
        progress.note("every message fed; closing the streams and the episode")
        damage = [d for s in sources for d in s.damage]
        late = damage[len(opened_damage) :] if len(damage) > len(opened_damage) else []
        if late and options.control_path is not None:
            try:
                bridge.annotate("ros_bag_import.damage", json={"damage": [d.as_json() for d in late]})
            except BridgeError:
                pass  # the summary and the exit code still say it
        result = _end(bridge, "aborted" if damage else "completed", episode_id, topics, damage)
        result.first_t_ns = first_t or 0
        return result
    finally:
        bridge.close()


def _end(
    bridge: Bridge, outcome: str, episode_id: str, topics: Dict[str, TopicCount], damage: List[Damage]
) -> ImportResult:
    error: Optional[str] = None
    try:
        summary = bridge.abort() if outcome == "aborted" else bridge.stop()
        status: Dict[str, Any] = {"topics": summary.get("topics", {}), "events": summary.get("events", {})}
    except BridgeError as e:
        outcome, error = "failed", str(e)
        status = bridge.status()
    for group in ("topics", "events"):
        for topic, c in (status.get(group) or {}).items():
            tc = topics.get(topic)
            if tc is None:
                continue
            tc.recorded = int(c.get("recorded", 0))
            reasons = {str(k): int(v) for k, v in (c.get("drop_reasons") or {}).items() if v}
            for reason, n in reasons.items():
                tc.skip(reason, n)
            unexplained = int(c.get("dropped", 0)) - sum(reasons.values())
            if unexplained > 0:
                tc.skip("dropped", unexplained)
            if c.get("late"):
                tc.skip("late", int(c["late"]))
            if c.get("last_error"):
                tc.last_error = str(c["last_error"])
    return ImportResult(episode_id, outcome, topics, damage, error)
