"""The mapping file: which topics to record, into which stream, with which options
(format in ingest-adapters/ros/README.md, "The mapping file")."""

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from wshard_client import Codec, SchemaError

from .errors import MappingError, UnknownMessageType
from .msgtypes import EVENT_TYPES, STREAM_TYPES, canonical_type

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

#: The server's stream names: 1..=64 bytes of ``[A-Za-z0-9._-]``, not starting with ``.``.
_STREAM_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")
#: Characters of a topic name that are not allowed in a stream name.
_NOT_STREAM_CHAR = re.compile(r"[^A-Za-z0-9._-]")
#: Characters allowed in a channel prefix (channel ids may contain ``/``).
_PREFIX_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
ZSTD_LEVELS = range(1, 23)

TIME_SOURCES = ("header", "receive")
COMPRESSED_MODES = ("bytes", "decode")
TOP_LEVEL_KEYS = ("topics", "events", "flight_triggers")
TOPIC_KEYS = ("type", "stream", "time", "codec", "prefix", "tick_hz", "compressed", "max_bytes")
EVENT_KEYS = ("type", "label")
FLIGHT_TRIGGER_KEYS = ("pre_s", "post_s")
#: A mapped trigger topic's window when the entry names none (the daemon's defaults), and
#: the longest one (the daemon's one hour).
DEFAULT_TRIGGER_PRE_S = 30.0
DEFAULT_TRIGGER_POST_S = 10.0
MAX_TRIGGER_WINDOW_S = 3600.0


@dataclass(frozen=True)
class TopicSpec:
    """One recorded topic. ``time`` is ``"header"`` or ``"receive"`` (always ``"receive"``
    for a type without a header); ``prefix`` starts every channel name of the topic."""

    topic: str
    type: str
    stream: str
    time: str
    codec: str
    prefix: str
    tick_hz: float
    compressed: str
    max_bytes: int
    has_header: bool


@dataclass(frozen=True)
class EventSpec:
    """One topic recorded as events labelled ``label``."""

    topic: str
    type: str
    label: str


@dataclass(frozen=True)
class FlightTriggerSpec:
    """A topic whose every message (any type) fires the daemon's flight trigger with the
    window ``[t - pre_s, t + post_s]``, its reason the topic name (and the text of a
    ``std_msgs/String``)."""

    topic: str
    pre_s: float
    post_s: float


@dataclass(frozen=True)
class BridgeMapping:
    """A parsed, checked mapping file."""

    file: str
    topics: Tuple[TopicSpec, ...]
    events: Tuple[EventSpec, ...]
    flight_triggers: Tuple[FlightTriggerSpec, ...] = ()

    def streams(self) -> Dict[str, List[TopicSpec]]:
        """The streams by name, each with its topics in file order."""
        out: Dict[str, List[TopicSpec]] = {}
        for spec in self.topics:
            out.setdefault(spec.stream, []).append(spec)
        return out


def load_mapping(path: Union[str, Path]) -> BridgeMapping:
    """Read and check the mapping file at ``path``.

    Raises:
        MappingError: the file cannot be read, is not TOML, or an entry is wrong (the error
            names the file, the topic and the key).
        UnknownMessageType: a topic's type has no converter.
    """
    name = str(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise MappingError(name, None, None, f"cannot read: {e.strerror or e}") from e
    except tomllib.TOMLDecodeError as e:
        raise MappingError(name, None, None, f"not valid TOML: {e}") from e
    return parse_mapping(data, name)


def loads_mapping(text: str, file: str = "<string>") -> BridgeMapping:
    """:func:`load_mapping` from TOML text; ``file`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MappingError(file, None, None, f"not valid TOML: {e}") from e
    return parse_mapping(data, file)


def parse_mapping(data: Mapping[str, Any], file: str = "<string>") -> BridgeMapping:
    """Check an already parsed mapping (a dict as ``tomllib`` returns it)."""
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise MappingError(file, None, key, f"unknown key (expected {', '.join(TOP_LEVEL_KEYS)})")
    topics = _table(file, data, "topics")
    events = _table(file, data, "events")
    triggers = _table(file, data, "flight_triggers")
    if not topics and not events and not triggers:
        raise MappingError(file, None, "topics", "no topics and no events to record")
    specs = tuple(_topic(file, topic, entry) for topic, entry in topics.items())
    event_specs = tuple(_event(file, topic, entry) for topic, entry in events.items())
    for ev in event_specs:
        if ev.topic in topics:
            raise MappingError(file, ev.topic, None, "listed both in [topics] and in [events]")
    trigger_specs = tuple(_flight_trigger(file, topic, entry) for topic, entry in triggers.items())
    for tr in trigger_specs:
        if tr.topic in topics or tr.topic in events:
            raise MappingError(file, tr.topic, None, "listed both in [flight_triggers] and in [topics] or [events]")
    mapping = BridgeMapping(file, specs, event_specs, trigger_specs)
    _check_streams(file, mapping)
    return mapping


def _table(file: str, data: Mapping[str, Any], key: str) -> Dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise MappingError(file, None, key, "must be a table of topics")
    return value


def _entry(file: str, topic: str, entry: Any, allowed: Tuple[str, ...]) -> Dict[str, Any]:
    if not topic.startswith("/") or len(topic) < 2:
        raise MappingError(file, topic, None, "a topic name is absolute: it starts with '/'")
    if not isinstance(entry, dict):
        raise MappingError(file, topic, None, "must be a table")
    for key in entry:
        if key not in allowed:
            raise MappingError(file, topic, key, f"unknown key (expected {', '.join(allowed)})")
    if "type" not in entry:
        raise MappingError(file, topic, "type", 'missing (e.g. "sensor_msgs/JointState")')
    return entry


def _get(
    file: str, topic: str, entry: Mapping[str, Any], key: str, kind: Union[type, Tuple[type, ...]], default: Any
) -> Any:
    value = entry.get(key, default)
    # bool is an int in Python; no key of the mapping takes true/false.
    if not isinstance(value, kind) or isinstance(value, bool):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names = " or ".join(k.__name__ for k in kinds)
        raise MappingError(file, topic, key, f"must be a {names}, got {value!r}")
    return value


def _msg_type(file: str, topic: str, entry: Mapping[str, Any], known: Tuple[str, ...]) -> str:
    raw = _get(file, topic, entry, "type", str, "")
    name = canonical_type(raw)
    if name is None or name not in known:
        raise UnknownMessageType(file, topic, raw, ", ".join(known))
    return name


def _topic(file: str, topic: str, raw: Any) -> TopicSpec:
    entry = _entry(file, topic, raw, TOPIC_KEYS)
    msg_type = _msg_type(file, topic, entry, tuple(STREAM_TYPES))
    has_header = STREAM_TYPES[msg_type]
    stream = _get(file, topic, entry, "stream", str, "") or _default_stream(file, topic)
    if not _STREAM_RE.match(stream):
        raise MappingError(file, topic, "stream", f"{stream!r}: 1..=64 of [A-Za-z0-9._-], not starting with '.'")
    time = _get(file, topic, entry, "time", str, "header" if has_header else "receive")
    if time not in TIME_SOURCES:
        raise MappingError(file, topic, "time", f"{time!r}: one of {', '.join(TIME_SOURCES)}")
    if time == "header" and not has_header:
        raise MappingError(file, topic, "time", f'{msg_type} has no header: only "receive"')
    codec = _get(file, topic, entry, "codec", str, "default")
    try:
        kind, level = Codec.parse(codec)
    except SchemaError as e:
        raise MappingError(file, topic, "codec", str(e)) from None
    if kind == Codec.ZSTD and level is not None and level not in ZSTD_LEVELS:
        raise MappingError(file, topic, "codec", f"{codec!r}: zstd levels are 1..=22")
    prefix = _get(file, topic, entry, "prefix", str, "")
    if prefix and not _PREFIX_RE.match(prefix):
        raise MappingError(file, topic, "prefix", f"{prefix!r}: letters, digits and . _ / -")
    tick_hz = float(_get(file, topic, entry, "tick_hz", (int, float), 0.0))
    if not tick_hz >= 0.0 or tick_hz == float("inf"):
        raise MappingError(file, topic, "tick_hz", f"{tick_hz!r}: a finite rate >= 0 (0 = not fixed)")
    compressed, max_bytes = _compressed(file, topic, entry, msg_type)
    return TopicSpec(topic, msg_type, stream, time, codec, prefix, tick_hz, compressed, max_bytes, has_header)


def _compressed(file: str, topic: str, entry: Mapping[str, Any], msg_type: str) -> Tuple[str, int]:
    if msg_type != "sensor_msgs/CompressedImage":
        for key in ("compressed", "max_bytes"):
            if key in entry:
                raise MappingError(file, topic, key, "only for sensor_msgs/CompressedImage")
        return "", 0
    mode = _get(file, topic, entry, "compressed", str, "bytes")
    if mode not in COMPRESSED_MODES:
        raise MappingError(file, topic, "compressed", f"{mode!r}: one of {', '.join(COMPRESSED_MODES)}")
    if mode == "decode":
        if "max_bytes" in entry:
            raise MappingError(file, topic, "max_bytes", 'only with compressed = "bytes" (decode learns the shape)')
        return mode, 0
    if "max_bytes" not in entry:
        raise MappingError(file, topic, "max_bytes", "missing: the largest compressed image, in bytes")
    max_bytes = _get(file, topic, entry, "max_bytes", int, 0)
    if max_bytes <= 0:
        raise MappingError(file, topic, "max_bytes", f"{max_bytes}: must be > 0")
    return mode, max_bytes


def _default_stream(file: str, topic: str) -> str:
    name = _NOT_STREAM_CHAR.sub("_", topic.strip("/").replace("/", "."))
    if not _STREAM_RE.match(name):
        raise MappingError(file, topic, "stream", f"no usable stream name from the topic ({name!r}): give one")
    return name


def _event(file: str, topic: str, raw: Any) -> EventSpec:
    entry = _entry(file, topic, raw, EVENT_KEYS)
    msg_type = _msg_type(file, topic, entry, EVENT_TYPES)
    label = _get(file, topic, entry, "label", str, topic)
    if not label:
        raise MappingError(file, topic, "label", "must not be empty")
    return EventSpec(topic, msg_type, label)


def _flight_trigger(file: str, topic: str, raw: Any) -> FlightTriggerSpec:
    if not topic.startswith("/") or len(topic) < 2:
        raise MappingError(file, topic, None, "a topic name is absolute: it starts with '/'")
    if not isinstance(raw, dict):
        raise MappingError(file, topic, None, "must be a table (e.g. { pre_s = 30, post_s = 10 })")
    for key in raw:
        if key not in FLIGHT_TRIGGER_KEYS:
            raise MappingError(file, topic, key, f"unknown key (expected {', '.join(FLIGHT_TRIGGER_KEYS)})")
    window = []
    for key, default in (("pre_s", DEFAULT_TRIGGER_PRE_S), ("post_s", DEFAULT_TRIGGER_POST_S)):
        value = float(_get(file, topic, raw, key, (int, float), default))
        if not 0.0 <= value <= MAX_TRIGGER_WINDOW_S:
            raise MappingError(file, topic, key, f"must be 0..={MAX_TRIGGER_WINDOW_S:g} seconds, got {value!r}")
        window.append(value)
    return FlightTriggerSpec(topic, window[0], window[1])


def _check_streams(file: str, mapping: BridgeMapping) -> None:
    """Topics sharing a stream share its clock, the header stamp: each needs
    ``time = "header"`` and its own prefix; one codec and rate per stream."""
    for stream, specs in mapping.streams().items():
        if len(specs) < 2:
            continue
        prefixes: Dict[str, str] = {}
        first: Optional[TopicSpec] = None
        for spec in specs:
            if spec.time != "header":
                raise MappingError(
                    file, spec.topic, "time", f"stream {stream!r} is shared: topics in it share a header stamp"
                )
            if not spec.prefix:
                raise MappingError(
                    file, spec.topic, "prefix", f"stream {stream!r} is shared: each topic needs a prefix"
                )
            if spec.prefix in prefixes:
                raise MappingError(
                    file, spec.topic, "prefix", f"{spec.prefix!r} is also the prefix of {prefixes[spec.prefix]!r}"
                )
            prefixes[spec.prefix] = spec.topic
            if first is not None and spec.tick_hz != first.tick_hz:
                raise MappingError(file, spec.topic, "tick_hz", f"differs from {first.topic!r} in stream {stream!r}")
            first = first or spec
