"""The ROS 2 front end of the bridge, over DDS without a ROS install (Cyclone DDS's Python
binding): subscribes to the mapping's topics as ROS 2 nodes publish them (DDS topic ``rt/x``,
type ``pkg::msg::dds_::T_``, plain CDR) and records them through the recording core
(:mod:`wshard_ros.bridge`); the mapped flight-trigger topics are found by DDS discovery
(:mod:`.flight_topics`). Run it as ``python3 -m wshard_ros.ros2dds`` or
``wshard-ros2-bridge`` (:mod:`.cli`)."""

from .errors import BadDomainId, CommandError, DdsSetupError, Ros2DdsError, UnsupportedTopicType
from .names import DDS_TYPES, dds_topic_name, dds_type_for, dds_type_name
from .participant import LOOPBACK_CONFIG, DdsOptions
from .runner import DdsBridge, DdsBridgeOptions

__all__ = [
    "BadDomainId",
    "CommandError",
    "DDS_TYPES",
    "DdsBridge",
    "DdsBridgeOptions",
    "DdsOptions",
    "DdsSetupError",
    "LOOPBACK_CONFIG",
    "Ros2DdsError",
    "UnsupportedTopicType",
    "dds_topic_name",
    "dds_type_for",
    "dds_type_name",
]
