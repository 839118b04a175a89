"""Errors of the ROS 1 front end (all :class:`~wshard_ros.errors.RosBridgeError`)."""

from ..errors import RosBridgeError


class Ros1Error(RosBridgeError):
    """Base of the ROS 1 front end's errors."""


class MessageClassMissing(Ros1Error):
    """A mapping's topic whose message type has no installed ROS 1 message class (refused at
    start). Attributes: ``topic``, ``msg_type`` (ROS 1 spelling ``pkg/T``)."""

    def __init__(self, topic: str, msg_type: str) -> None:
        self.topic = topic
        self.msg_type = msg_type
        pkg = msg_type.split("/", 1)[0]
        super().__init__(
            f"topic {topic!r}: message type {msg_type!r} is not installed for rospy "
            f"(no Python module {pkg}.msg; Debian: apt-get install python3-{pkg.replace('_', '-')})"
        )


class MasterUnreachable(Ros1Error):
    """The ROS master (``ROS_MASTER_URI``) did not answer at start."""


class BadTrigger(Ros1Error, ValueError):
    """A ``~trigger`` message that is not a command (the text says which part is wrong)."""
