"""The ROS 2 front end put together: the recording core (:class:`wshard_ros.bridge.Bridge`)
fed by DDS readers of the mapping's topics, controlled by the bridge socket, the DDS
command topic and the mapped flight-trigger topics."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..bridge import Bridge, BridgeOptions, ControlServer, handle_request, serve_control
from ..mapping import BridgeMapping
from .command import CommandTopic, command_topic
from .flight_topics import FlightTriggerTopics
from .names import dds_topic_name, dds_type_for
from .participant import DdsOptions, Participant
from .subscriber import DdsSubscriber, make_readers


@dataclass(frozen=True)
class DdsBridgeOptions:
    """Where the daemon is, how to serve control, how to join DDS."""

    socket_path: str
    control_path: Optional[str] = None
    bridge_socket: Optional[str] = None
    client_name: str = "wshard-ros2-bridge"
    queue_steps: int = 4096
    node_name: str = "wshard_ros_bridge"
    dds: DdsOptions = field(default_factory=DdsOptions)


def subscriptions(mapping: BridgeMapping) -> List[Tuple[str, str]]:
    """``(topic, type)`` of every topic and event topic of ``mapping``, each checked.

    Raises:
        UnsupportedTopicType: a type this front end has no IDL struct for (names topic and type).
    """
    subs = [(t.topic, t.type) for t in mapping.topics] + [(e.topic, e.type) for e in mapping.events]
    for topic, msg_type in subs:
        dds_type_for(topic, msg_type)
    return subs


class DdsBridge:
    """One running front end. Construction checks every type, creates the recording core
    (not yet connected to the daemon) and the DDS readers; :meth:`start` starts taking
    samples and serving commands; :meth:`close` stops a recording episode and tears all
    down."""

    def __init__(self, mapping: BridgeMapping, opts: DdsBridgeOptions) -> None:
        """Raises:
        UnsupportedTopicType: a type of the mapping cannot be subscribed over DDS.
        DdsSetupError: the participant, a topic or a reader cannot be created.
        """
        subs = subscriptions(mapping)
        self.mapping = mapping
        self.opts = opts
        self.bridge = Bridge(
            mapping,
            BridgeOptions(
                socket_path=opts.socket_path,
                control_path=opts.control_path,
                client_name=opts.client_name,
                queue_steps=opts.queue_steps,
                bridge_socket=opts.bridge_socket,
            ),
        )
        self.participant = Participant(opts.dds)
        try:
            readers = make_readers(self.participant, subs, opts.dds.best_effort)
            self.subscriber = DdsSubscriber(self.participant, readers, self.bridge.on_message)
            self.commands = CommandTopic(self.participant, opts.node_name, self.handle_request)
            self.flight_triggers = FlightTriggerTopics(
                self.participant, mapping.flight_triggers, self.handle_request, opts.dds.best_effort
            )
        except BaseException:
            self.participant.close()
            self.bridge.close()
            raise
        self.command_topic_name = dds_topic_name(command_topic(opts.node_name))
        self.control: Optional[ControlServer] = None

    def handle_request(self, request: Any) -> Dict[str, Any]:
        """One control request (the bridge socket's JSON) -> its reply; never raises. The
        reply to ``status`` has ``dds`` too: the domain, samples taken per topic, and the
        mapped flight-trigger topics' counters (:meth:`FlightTriggerTopics.status`)."""
        reply = handle_request(self.bridge, request)
        if reply.get("ok") and isinstance(request, dict) and request.get("cmd") == "status":
            reply["result"] = dict(reply["result"])
            reply["result"]["dds"] = {
                "domain_id": self.opts.dds.domain_id,
                "taken": self.subscriber.taken(),
                "flight_triggers": self.flight_triggers.status(),
            }
        return reply

    def start(self) -> None:
        """Serve the bridge socket (if configured), start taking samples and serving the
        command topic.

        Raises:
            ControlSocketError: the bridge socket path is in use or cannot be bound.
        """
        if self.opts.bridge_socket:
            self.control = serve_control(self.bridge, self.opts.bridge_socket, handler=self.handle_request)
        self.subscriber.start()
        self.commands.start()
        self.flight_triggers.start()

    def close(self) -> None:
        """Stop commands and readers, stop a recording episode (completed), disconnect,
        leave DDS."""
        if self.control is not None:
            self.control.close()
        self.commands.close()
        self.flight_triggers.close()
        self.subscriber.close()
        try:
            self.bridge.close()
        finally:
            self.participant.close()
