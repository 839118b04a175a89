"""Mapped flight-trigger topics over DDS (the mapping's ``[flight_triggers]``, as the ROS 1
front end reads them): every message on such a topic, of any type, fires the daemon's
flight trigger with the topic's window; the reason is the topic name, followed by
``: TEXT`` for a ``std_msgs/String``.

DDS has no "any type" reader: a reader needs the writer's type. So the topics are found by
**discovery**: a reader of the built-in ``DCPSPublication`` topic sees every writer on the
domain with its DDS topic and type name; for each new type name written on a mapped
trigger topic a reader of that type is created, with this package's IDL struct when the
type is one it knows (:data:`~wshard_ros.ros2dds.names.DDS_TYPES`), else with the type the
writer describes (XTypes type lookup, Cyclone DDS's ``get_types_for_typeid``: writers that
send type information, as Cyclone DDS's do). A writer whose type can be neither known nor
looked up is logged and listed under ``unresolved`` with the reason; it fires nothing.
A message published before the bridge has discovered its writer is not seen (a reader
that joins later gets no history of a volatile writer), as for any DDS reader.
"""

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
from cyclonedds.core import DDSException, InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.dynamic import get_types_for_typeid
from cyclonedds.idl import IdlStruct
from cyclonedds.internal import InvalidSample
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from ..mapping import FlightTriggerSpec
from ..ros1.flight_topics import MAX_REASON_TEXT_BYTES  # the same cut as ROS 1 (imports no rospy)
from .errors import DdsSetupError
from .names import DDS_TYPES, dds_topic_name, dds_type_name
from .participant import Participant, reader_qos

log = logging.getLogger(__name__)

#: ``handle(request) -> reply``: the bridge socket's request handler (never raises).
Handler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: The DDS type whose text goes into the reason.
STRING_TYPE = dds_type_name("std_msgs/String")
#: How long the discovery thread waits for a writer's type description (XTypes type lookup).
TYPE_LOOKUP_TIMEOUT_S = 5.0
#: How long the thread waits for discovery or data before checking whether it should stop.
WAIT_TIMEOUT_S = 1.0
#: Samples (and discovered writers) taken from one reader per call.
TAKE_BATCH = 64
_ANY_STATE = SampleState.Any | ViewState.Any | InstanceState.Any
_NS_PER_S = 1_000_000_000
#: The IDL struct of each known type, by its DDS type name.
KNOWN_TYPES: Dict[str, Type[IdlStruct]] = {dds_type_name(name): cls for name, cls in DDS_TYPES.items()}


def reason_of(topic: str, type_name: str, sample: Any) -> str:
    """The reason of a trigger from ``sample`` of DDS type ``type_name`` on ``topic``."""
    text = getattr(sample, "data", None) if type_name == STRING_TYPE else None
    if not isinstance(text, str) or not text:
        return topic
    cut = text.encode("utf-8")[:MAX_REASON_TEXT_BYTES].decode("utf-8", "ignore")
    return f"{topic}: {cut}"


def trigger_request(spec: FlightTriggerSpec, type_name: str, sample: Any) -> Dict[str, Any]:
    """The bridge-socket request (``flight_trigger``) a message on ``spec.topic`` makes."""
    return {
        "cmd": "flight_trigger",
        "pre_s": spec.pre_s,
        "post_s": spec.post_s,
        "reason": reason_of(spec.topic, type_name, sample),
    }


def resolve_type(participant: Participant, type_name: str, type_id: Any) -> Type[IdlStruct]:
    """The IDL struct to read ``type_name`` with: a known one, else the writer's own
    description (``type_id``, looked up over DDS).

    Raises:
        DdsSetupError: unknown type without a usable type description (names the type).
    """
    known = KNOWN_TYPES.get(type_name)
    if known is not None:
        return known
    if type_id is None:
        raise DdsSetupError(f"type {type_name!r}: not known here and its writer sends no type information")
    try:
        # annotated as instances, returned as classes: checked below
        cls: Any = get_types_for_typeid(participant.dp, type_id, int(TYPE_LOOKUP_TIMEOUT_S * _NS_PER_S))[0]
    except (DDSException, ValueError, TypeError, KeyError) as e:
        raise DdsSetupError(f"type {type_name!r}: its type information cannot be looked up: {e}") from e
    if not isinstance(cls, type) or not issubclass(cls, IdlStruct):
        raise DdsSetupError(f"type {type_name!r}: not a struct")
    return cls


@dataclass
class _TriggerReader:
    spec: FlightTriggerSpec
    type_name: str
    reader: "DataReader[Any]"
    condition: ReadCondition


class FlightTriggerTopics:
    """Discovers the writers of the mapped trigger topics, reads them, and hands each
    message's ``flight_trigger`` request to ``handle`` (in its own thread: a trigger never
    waits for a data reader, nor the data for a trigger)."""

    def __init__(
        self, participant: Participant, specs: Sequence[FlightTriggerSpec], handle: Handler, best_effort: bool
    ) -> None:
        """Raises:
        DdsSetupError: the discovery reader cannot be created.
        """
        self._participant = participant
        self._handle = handle
        self._qos = reader_qos(best_effort)
        self._specs = {dds_topic_name(s.topic): s for s in specs}
        self._readers: Dict[Tuple[str, str], _TriggerReader] = {}
        self._lock = threading.Lock()
        self._counters: Dict[str, Any] = {"received": 0, "refused": 0, "last_reply": None}
        self._subscribed: Dict[str, List[str]] = {s.topic: [] for s in specs}
        self._unresolved: Dict[str, Dict[str, str]] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if not self._specs:
            return
        try:
            self._discovery = BuiltinDataReader(participant.dp, BuiltinTopicDcpsPublication)
            self._waitset = WaitSet(participant.dp)
            self._waitset.attach(ReadCondition(self._discovery, _ANY_STATE))
        except DDSException as e:
            raise DdsSetupError(f"flight trigger topics: cannot read DDS discovery: {e}") from e

    def start(self) -> None:
        """Start the discovery and trigger thread (none when no topic is mapped)."""
        if self._specs:
            self._thread = threading.Thread(target=self._run, name="dds-flight-triggers", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (after the trigger it is sending) and wait for it."""
        self._stop.set()
        if self._thread is None:
            return
        try:
            self._waitset.set_trigger(True)
        except DDSException:
            pass
        self._thread.join(timeout)

    def status(self) -> Dict[str, Any]:
        """``received``, ``refused``, ``last_reply`` (the daemon's answer naming the window
        episode, or the refusal), ``subscribed`` (per topic the DDS type names read) and
        ``unresolved`` (per topic the writers' type names that could not be read, why)."""
        with self._lock:
            out = dict(self._counters)
            out["subscribed"] = {t: list(v) for t, v in self._subscribed.items()}
            out["unresolved"] = {t: dict(v) for t, v in self._unresolved.items()}
        return out

    # -- the thread ----------------------------------------------------------------------
    def _run(self) -> None:
        wait_ns = duration(seconds=WAIT_TIMEOUT_S)
        try:
            while not self._stop.is_set():
                self._waitset.wait(wait_ns)
                self._discover()
                while not self._stop.is_set() and self._take_round():
                    pass
        except DDSException as e:  # the participant went away under us: say so, stop
            log.error("DDS flight trigger topics stopped: %s", e)

    def _discover(self) -> None:
        for pub in self._discovery.take(N=TAKE_BATCH):
            if isinstance(pub, InvalidSample):
                continue
            spec = self._specs.get(str(getattr(pub, "topic_name", "")))
            type_name = str(getattr(pub, "type_name", ""))
            if spec is None or (spec.topic, type_name) in self._readers:
                continue
            try:
                self._subscribe(spec, type_name, getattr(pub, "type_id", None))
            except DdsSetupError as e:
                log.warning("flight trigger topic %r: a writer of %s", spec.topic, e)
                with self._lock:
                    self._unresolved.setdefault(spec.topic, {})[type_name] = str(e)

    def _subscribe(self, spec: FlightTriggerSpec, type_name: str, type_id: Any) -> None:
        cls = resolve_type(self._participant, type_name, type_id)
        name = dds_topic_name(spec.topic)
        try:
            topic: "Topic[Any]" = Topic(self._participant.dp, name, cls)
            reader: "DataReader[Any]" = DataReader(self._participant.dp, topic, qos=self._qos)
            cond = ReadCondition(reader, _ANY_STATE)
            self._waitset.attach(cond)
        except DDSException as e:
            raise DdsSetupError(f"type {type_name!r}: cannot create its reader of {name!r}: {e}") from e
        self._readers[(spec.topic, type_name)] = _TriggerReader(spec, type_name, reader, cond)
        with self._lock:
            self._subscribed[spec.topic].append(type_name)
            self._unresolved.get(spec.topic, {}).pop(type_name, None)
        log.info("flight trigger topic %r: reading %s", spec.topic, type_name)

    def _take_round(self) -> bool:
        """Take one batch from every trigger reader and fire a trigger per message; whether
        any had samples."""
        got = False
        for r in list(self._readers.values()):
            samples = r.reader.take(N=TAKE_BATCH)
            got = got or bool(samples)
            for sample in samples:
                if isinstance(sample, InvalidSample) or self._stop.is_set():
                    continue
                self._fire(r, sample)
        return got

    def _fire(self, r: _TriggerReader, sample: Any) -> None:
        reply = self._handle(trigger_request(r.spec, r.type_name, sample))
        if reply.get("ok"):
            log.info("flight trigger from %s: episode %s", r.spec.topic, reply.get("result", {}).get("episode"))
        else:
            log.warning("flight trigger from %s refused: %s", r.spec.topic, reply.get("error"))
        with self._lock:
            self._counters["received"] += 1
            if not reply.get("ok"):
                self._counters["refused"] += 1
            self._counters["last_reply"] = reply
