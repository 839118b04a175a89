"""The ROS 1 node of the bridge: one ``rospy.Subscriber`` per topic of the mapping, whose
callback hands the message to :meth:`~wshard_ros.bridge.Bridge.on_message` with the receive
time ``rospy.get_rostime()`` (ROS time: ``/clock`` under ``use_sim_time``), the services of
:mod:`~wshard_ros.ros1.services`, the ``~trigger`` topic, and the mapped flight-trigger topics
(:mod:`~wshard_ros.ros1.flight_topics`)."""

import logging
import threading
import time
from typing import Any, Dict, List, Optional

import rospy
from std_msgs.msg import String

from ..bridge import Bridge, handle_request
from ..mapping import BridgeMapping
from .errors import BadTrigger
from .flight_topics import trigger_request
from .msgclasses import message_classes
from .services import register_services
from .trigger import parse_trigger

#: A bridge-socket reply: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {...}}``.
Reply = Dict[str, Any]

log = logging.getLogger("wshard_ros.ros1")

NODE_NAME = "wshard_ros_bridge"
#: rospy's recv size per read for image topics (several 640x480 rgb8 frames per read) and
#: for the others (hundreds of JointState / Imu messages per read at 1 kHz).
IMAGE_BUFF_BYTES = 1 << 24
DEFAULT_BUFF_BYTES = 1 << 20
_IMAGE_TYPES = ("sensor_msgs/Image", "sensor_msgs/CompressedImage")


def subscriber_sizes(msg_type: str) -> Dict[str, Any]:
    """``queue_size`` and ``buff_size`` of a topic's subscriber.

    ``queue_size=None``: rospy keeps every message of a read (it drops the oldest of a read
    beyond ``queue_size`` otherwise, uncounted); a read holds at most ``buff_size`` bytes, so
    memory stays bounded, and a slow bridge back-pressures the publisher's TCP connection
    (where the publisher's own queue drops). The bridge's callback only converts and enqueues.
    """
    buff = IMAGE_BUFF_BYTES if msg_type in _IMAGE_TYPES else DEFAULT_BUFF_BYTES
    return {"queue_size": None, "buff_size": buff, "tcp_nodelay": True}


def ros_now_ns() -> int:
    """ROS time in ns (the simulated ``/clock`` under ``use_sim_time``, else the wall
    clock, read as integer ns rather than through rospy's float seconds)."""
    if rospy.rostime.is_wallclock():
        return time.time_ns()
    return int(rospy.get_rostime().to_nsec())


class Ros1Node:
    """Subscriptions, services and trigger of one bridge (after ``rospy.init_node``).

    Raises (constructor):
        MessageClassMissing: a topic's type has no installed message class (nothing is
            subscribed then).
    """

    def __init__(self, bridge: Bridge, mapping: BridgeMapping) -> None:
        self.bridge = bridge
        self.mapping = mapping
        self._control = threading.Lock()  # one episode operation at a time
        self._trigger_lock = threading.Lock()
        self._trigger: Dict[str, Any] = {"received": 0, "refused": 0, "last": None, "last_reply": None}
        classes = message_classes(mapping)  # every type first: refuse before subscribing
        types = {s.topic: s.type for s in mapping.topics}
        types.update({e.topic: e.type for e in mapping.events})
        self._subs: List[Any] = []
        for topic, cls in classes.items():
            self._subs.append(
                rospy.Subscriber(topic, cls, self._on_message, callback_args=topic, **subscriber_sizes(types[topic]))
            )
        self._services = register_services(self.run, self.status)
        self._trigger_sub = rospy.Subscriber("~trigger", String, self._on_trigger, queue_size=10)
        # Mapped flight-trigger topics: any type (rospy.AnyMsg: the raw bytes and the type).
        self._flight: Dict[str, Any] = {"received": 0, "refused": 0, "last_reply": None}
        for spec in mapping.flight_triggers:
            self._subs.append(
                rospy.Subscriber(spec.topic, rospy.AnyMsg, self._on_flight_topic, callback_args=spec, queue_size=10)
            )

    # -- callbacks ------------------------------------------------------------------------
    def _on_message(self, msg: Any, topic: str) -> None:
        self.bridge.on_message(topic, msg, ros_now_ns())

    def _on_trigger(self, msg: Any) -> None:
        with self._trigger_lock:
            self._trigger["received"] += 1
            self._trigger["last"] = msg.data
        try:
            request = parse_trigger(msg.data)
        except BadTrigger as e:
            reply: Reply = {"ok": False, "error": {"code": "BAD_REQUEST", "message": f"~trigger: {e}"}}
        else:
            reply = self.run(request)
        if reply.get("ok"):
            if request.get("cmd") == "status":
                rospy.loginfo("~trigger status: %s", reply.get("result"))
        else:
            rospy.logwarn("~trigger %r refused: %s", msg.data, reply.get("error"))
        with self._trigger_lock:
            if not reply.get("ok"):
                self._trigger["refused"] += 1
            self._trigger["last_reply"] = {k: v for k, v in reply.items() if k != "result"}

    def _on_flight_topic(self, msg: Any, spec: Any) -> None:
        msg_type = str(getattr(msg, "_connection_header", {}).get("type", ""))
        reply = self.run(trigger_request(spec, msg_type, bytes(getattr(msg, "_buff", b"") or b"")))
        if reply.get("ok"):
            rospy.loginfo("flight trigger from %s: episode %s", spec.topic, reply.get("result", {}).get("episode"))
        else:
            rospy.logwarn("flight trigger from %s refused: %s", spec.topic, reply.get("error"))
        with self._trigger_lock:
            self._flight["received"] += 1
            if not reply.get("ok"):
                self._flight["refused"] += 1
            self._flight["last_reply"] = reply

    # -- operations ---------------------------------------------------------------------
    def run(self, request: Dict[str, Any]) -> Reply:
        """Execute one bridge-socket request (services, trigger), one at a time."""
        if request.get("cmd") == "status":
            return {"ok": True, "result": self.status()}
        with self._control:
            return handle_request(self.bridge, request)

    def status(self) -> Dict[str, Any]:
        """:meth:`Bridge.status` plus ``ros``: node name, ROS time, ``use_sim_time``, the
        publishers connected per topic and the trigger's counters."""
        out = dict(self.bridge.status())
        with self._trigger_lock:
            trigger = dict(self._trigger)
            flight = dict(self._flight)
        out["ros"] = {
            "node": rospy.get_name(),
            "ros_time_ns": ros_now_ns(),
            "use_sim_time": bool(rospy.get_param("/use_sim_time", False)),
            "publishers": {s.resolved_name: s.get_num_connections() for s in self._subs},
            "trigger": trigger,
            "flight_triggers": flight,
        }
        return out

    def shutdown(self) -> None:
        """Unsubscribe, remove the services (the bridge is closed by the caller)."""
        for sub in self._subs + [self._trigger_sub]:
            sub.unregister()
        for srv in self._services:
            srv.shutdown("bridge shutting down")


def init_node(name: Optional[str] = None, argv: Optional[List[str]] = None) -> None:
    """``rospy.init_node`` (anonymous off, rospy's SIGINT/SIGTERM handling on); ``argv``
    carries the ROS remappings (default ``sys.argv``)."""
    rospy.init_node(name or NODE_NAME, argv=argv)
