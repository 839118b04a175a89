"""Typed errors of the ROS 2 (DDS) front end."""

from typing import Sequence

from ..errors import RosBridgeError


class Ros2DdsError(RosBridgeError):
    """Base of the DDS front end's errors."""


class UnsupportedTopicType(Ros2DdsError, ValueError):
    """A mapping's topic has a type this front end cannot subscribe (refused at start).

    Attributes:
        topic: the ROS topic.
        msg_type: its type, as the mapping gives it.
    """

    def __init__(self, topic: str, msg_type: str, known: Sequence[str]) -> None:
        self.topic = topic
        self.msg_type = msg_type
        super().__init__(
            f"topic {topic!r}: type {msg_type!r} cannot be subscribed over DDS (supported: {', '.join(known)})"
        )


class DdsSetupError(Ros2DdsError):
    """The DDS domain, participant, topics or readers could not be created (a bad Cyclone
    DDS configuration, a domain id out of range): the message says which and why."""


class BadDomainId(DdsSetupError, ValueError):
    """A DDS domain id outside 0..232, or a ``ROS_DOMAIN_ID`` that is not a number (a bad
    option: the command line exits 2)."""


class CommandError(Ros2DdsError, ValueError):
    """A command (bridge socket or DDS command topic) that is not a valid request."""
