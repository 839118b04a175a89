"""Episode control over DDS: the topic ``/<node>/command`` (DDS ``rt/<node>/command``,
``std_msgs/String``) carries one JSON request per message, the same requests as the bridge
socket's (``{"cmd": "start", "episode_id": "ep1"}``, ``stop``, ``abort``, ``annotate``,
``status``, and the daemon's episode control ``stop_episode``, ``abort_episode``, ``keep``,
``split_episode``, ``flight_trigger``), plus an optional ``"id"`` echoed in the reply. Each reply (the bridge socket's
JSON reply, with ``"id"`` when the request had one) is published on ``/<node>/reply``
(``rt/<node>/reply``, ``std_msgs/String``, reliable, transient-local: a reader that joins
after the reply was written still gets the last ones)."""

import json
import logging
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from cyclonedds.core import DDSException, InstanceState, Policy, Qos, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.internal import InvalidSample
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from .errors import CommandError, DdsSetupError
from .idl import String_
from .names import dds_topic_name
from .participant import XCDR1, Participant, reader_qos

log = logging.getLogger(__name__)

#: ``handle(request) -> reply``: the bridge socket's request handler (never raises).
Handler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: Replies kept for readers that join late.
REPLY_HISTORY = 32
_WAIT_S = 1.0


def command_topic(node_name: str) -> str:
    """The ROS name of the command topic of node ``node_name``."""
    return f"/{node_name}/command"


def reply_topic(node_name: str) -> str:
    """The ROS name of the reply topic of node ``node_name``."""
    return f"/{node_name}/reply"


def reply_qos() -> Qos:
    """Reliable, transient-local, the last :data:`REPLY_HISTORY` replies, XCDR1 (writer and
    readers of the reply topic)."""
    return Qos(
        Policy.Reliability.Reliable(duration(seconds=1)),
        Policy.Durability.TransientLocal,
        Policy.History.KeepLast(REPLY_HISTORY),
        XCDR1,
    )


def bad_request(message: str) -> Dict[str, Any]:
    """The bridge socket's reply to a request it cannot parse."""
    return {"ok": False, "error": {"code": "BAD_REQUEST", "message": message}}


def parse_command(text: str) -> Tuple[Optional[Any], Dict[str, Any]]:
    """``(id or None, request)`` of one command message.

    Raises:
        CommandError: not a JSON object (the message says why).
    """
    try:
        request = json.loads(text)
    except json.JSONDecodeError as e:
        raise CommandError(f"not JSON: {e}") from None
    if not isinstance(request, dict):
        raise CommandError(f"a JSON object is expected, got {type(request).__name__}")
    return request.pop("id", None), request


class CommandTopic:
    """Reads the command topic in its own thread (a ``stop`` that drains the queues does not
    hold up the data readers), hands each request to ``handle`` and publishes the reply."""

    def __init__(self, participant: Participant, node_name: str, handle: Handler) -> None:
        """Raises:
        DdsSetupError: the topics, reader or writer cannot be created.
        """
        self.node_name = node_name
        self._handle = handle
        try:
            cmd = Topic(participant.dp, dds_topic_name(command_topic(node_name)), String_)
            rep = Topic(participant.dp, dds_topic_name(reply_topic(node_name)), String_)
            self._reader: "DataReader[String_]" = DataReader(participant.dp, cmd, qos=reader_qos(False))
            self._writer: "DataWriter[String_]" = DataWriter(participant.dp, rep, qos=reply_qos())
            self._cond = ReadCondition(self._reader, SampleState.Any | ViewState.Any | InstanceState.Any)
            self._waitset = WaitSet(participant.dp)
            self._waitset.attach(self._cond)
        except DDSException as e:
            raise DdsSetupError(f"command topic {command_topic(node_name)!r}: {e}") from e
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.handled = 0

    def start(self) -> None:
        """Start the command thread."""
        self._thread = threading.Thread(target=self._run, name="dds-commands", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread (after the command it is running) and wait for it."""
        self._stop.set()
        try:
            self._waitset.set_trigger(True)
        except DDSException:
            pass
        if self._thread is not None:
            self._thread.join(timeout)

    def handle_text(self, text: str) -> Dict[str, Any]:
        """The reply to one command message (never raises)."""
        try:
            req_id, request = parse_command(text)
        except ValueError as e:
            return bad_request(f"command on {command_topic(self.node_name)!r}: {e}")
        reply = dict(self._handle(request))
        if req_id is not None:
            reply["id"] = req_id
        return reply

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._waitset.wait(duration(seconds=_WAIT_S))
                for sample in self._reader.take(N=64):
                    if isinstance(sample, InvalidSample) or self._stop.is_set():
                        continue
                    reply = self.handle_text(sample.data)
                    self.handled += 1
                    if not reply.get("ok"):
                        log.warning("command %r refused: %s", sample.data, reply.get("error"))
                    self._writer.write(String_(data=json.dumps(reply)))
        except DDSException as e:
            log.error("DDS command topic stopped: %s", e)
