"""The DDS readers of the mapping's topics and the one thread that takes their samples and
hands each to the recording core with its receive time (``time.time_ns()``)."""

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from cyclonedds.core import DDSException, InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.idl import IdlStruct
from cyclonedds.internal import InvalidSample
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from .errors import DdsSetupError
from .names import dds_topic_name, dds_type_for
from .participant import Participant, reader_qos

log = logging.getLogger(__name__)

#: ``sink(ros_topic, message, receive_t_ns)``: the recording core's ``on_message``.
Sink = Callable[[str, Any, int], None]
#: Samples taken from one reader per call (then the next reader gets its turn).
TAKE_BATCH = 256
#: How long the thread waits for data before checking whether it should stop (it is also
#: woken at once by :meth:`DdsSubscriber.close`).
WAIT_TIMEOUT_S = 1.0
_ANY_STATE = SampleState.Any | ViewState.Any | InstanceState.Any


@dataclass
class TopicReader:
    """One subscribed topic: ROS name, DDS topic name, its reader and the count taken."""

    ros_topic: str
    dds_topic: str
    reader: "DataReader[Any]"
    condition: ReadCondition
    taken: int = 0


def make_readers(participant: Participant, topics: Sequence[Tuple[str, str]], best_effort: bool) -> List[TopicReader]:
    """One reader per ``(ros_topic, canonical_type)``.

    Raises:
        UnsupportedTopicType: a type has no IDL struct here (names topic and type).
        DdsSetupError: Cyclone DDS refused a topic or reader (names the topic).
    """
    types: Dict[str, Type[IdlStruct]] = {topic: dds_type_for(topic, msg_type) for topic, msg_type in topics}
    qos = reader_qos(best_effort)
    out = []
    for ros_topic, _ in topics:
        name = dds_topic_name(ros_topic)
        try:
            topic: "Topic[Any]" = Topic(participant.dp, name, types[ros_topic])
            reader: "DataReader[Any]" = DataReader(participant.dp, topic, qos=qos)
            cond = ReadCondition(reader, _ANY_STATE)
        except DDSException as e:
            raise DdsSetupError(f"topic {ros_topic!r} (DDS {name!r}): cannot create its reader: {e}") from e
        out.append(TopicReader(ros_topic, name, reader, cond))
    return out


class DdsSubscriber:
    """Takes every sample of ``readers`` in one thread and calls ``sink`` with it. The
    sink must not raise (the recording core's ``on_message`` never does); if it does, the
    error is logged and the thread goes on."""

    def __init__(self, participant: Participant, readers: List[TopicReader], sink: Sink) -> None:
        self.readers = readers
        self._sink = sink
        self._stop = threading.Event()
        self._waitset = WaitSet(participant.dp)
        for r in readers:
            self._waitset.attach(r.condition)
        self._thread: Optional[threading.Thread] = None
        self.error: Optional[str] = None

    def start(self) -> None:
        """Start the taking thread."""
        self._thread = threading.Thread(target=self._run, name="dds-subscriber", daemon=True)
        self._thread.start()

    def taken(self) -> Dict[str, int]:
        """Samples taken so far, per ROS topic."""
        return {r.ros_topic: r.taken for r in self.readers}

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (after the batch it is handing over) and wait for it."""
        self._stop.set()
        try:
            self._waitset.set_trigger(True)
        except DDSException:
            pass
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        wait_ns = duration(seconds=WAIT_TIMEOUT_S)
        try:
            while not self._stop.is_set():
                self._waitset.wait(wait_ns)
                while not self._stop.is_set() and self._take_round():
                    pass
        except DDSException as e:  # the participant went away under us: say so, stop
            self.error = f"DDS subscriber stopped: {e}"
            log.error("%s", self.error)

    def _take_round(self) -> bool:
        """Take one batch from every reader; whether any had samples."""
        got = False
        for r in self.readers:
            samples = r.reader.take(N=TAKE_BATCH)
            if not samples:
                continue
            got = True
            for sample in samples:
                t_ns = time.time_ns()
                if isinstance(sample, InvalidSample):  # a writer gone or disposed: no data
                    continue
                r.taken += 1
                try:
                    self._sink(r.ros_topic, sample, t_ns)
                except Exception:  # noqa: BLE001 - a faulty sink must not stop the subscription
                    log.exception("topic %r: recording core raised", r.ros_topic)
        return got
