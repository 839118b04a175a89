"""Mapped flight-trigger topics (the mapping's ``[flight_triggers]``): every message on such
a topic, of any type, fires the daemon's flight trigger with the topic's window; the reason
is the topic name, followed by the text of a ``std_msgs/String``."""

import struct
from typing import Any, Dict

from ..mapping import FlightTriggerSpec

#: The one message type whose content goes into the reason.
STRING_TYPE = "std_msgs/String"
#: The longest text of a message taken into a reason (the rest is cut).
MAX_REASON_TEXT_BYTES = 1024
_LEN = struct.Struct("<I")


def reason_of(topic: str, msg_type: str, raw: bytes) -> str:
    """The reason of a trigger from a message of ``msg_type`` serialized as ``raw`` (ROS 1
    serialization: a ``std_msgs/String`` is ``u32 length | UTF-8 bytes``)."""
    if msg_type != STRING_TYPE or len(raw) < _LEN.size:
        return topic
    (n,) = _LEN.unpack_from(raw)
    text = raw[_LEN.size : _LEN.size + min(n, MAX_REASON_TEXT_BYTES)].decode("utf-8", "replace")
    return f"{topic}: {text}" if text else topic


def trigger_request(spec: FlightTriggerSpec, msg_type: str, raw: bytes) -> Dict[str, Any]:
    """The bridge-socket request (``flight_trigger``) a message on ``spec.topic`` makes."""
    return {
        "cmd": "flight_trigger",
        "pre_s": spec.pre_s,
        "post_s": spec.post_s,
        "reason": reason_of(spec.topic, msg_type, raw),
    }
