"""wshard_ros: the ROS-independent core of the wshardd ROS bridge.

It reads the mapping file (:func:`load_mapping`) and turns ROS messages (anything with the
ROS field attributes: rospy messages, rosbags' deserialized dataclasses, ROS 2 messages)
into the channels and payloads of the Python client (:class:`~wshard_ros.Converter`) or
into events (:class:`~wshard_ros.EventConverter`). No rospy, no DDS here: the live front
ends and the bag import are thin layers over it.
"""

from ._base import HEADER_T_CHANNEL, RECEIVE_T_CHANNEL, Converter, Sample
from .convert import CONVERTERS, converter_for, event_converter_for
from .errors import (
    MappingError,
    MessageError,
    MessageTypeMismatch,
    MissingDependency,
    NotLearned,
    RosBridgeError,
    ShapeMismatch,
    UnknownMessageType,
)
from .events import Event, EventConverter
from .mapping import BridgeMapping, EventSpec, TopicSpec, load_mapping, loads_mapping, parse_mapping
from .msgtypes import EVENT_TYPES, STREAM_TYPES, canonical_type

__all__ = [
    "BridgeMapping",
    "CONVERTERS",
    "Converter",
    "EVENT_TYPES",
    "Event",
    "EventConverter",
    "EventSpec",
    "HEADER_T_CHANNEL",
    "MappingError",
    "MessageError",
    "MessageTypeMismatch",
    "MissingDependency",
    "NotLearned",
    "RECEIVE_T_CHANNEL",
    "RosBridgeError",
    "STREAM_TYPES",
    "Sample",
    "ShapeMismatch",
    "TopicSpec",
    "UnknownMessageType",
    "canonical_type",
    "converter_for",
    "event_converter_for",
    "load_mapping",
    "loads_mapping",
    "parse_mapping",
]
