"""Typed errors of the converter core. Every one names what was wrong: the mapping file,
the topic, the key or the message field."""

from typing import Any, Optional


class RosBridgeError(Exception):
    """Base of every error of :mod:`wshard_ros`."""


class MappingError(RosBridgeError, ValueError):
    """A bad mapping file: it cannot be read or parsed, or an entry is wrong.

    Attributes:
        file: the mapping file's path (``"<string>"`` when parsed from text).
        topic: the topic of the bad entry, or ``None`` (top level, parse errors).
        key: the bad key, or ``None``.
    """

    def __init__(self, file: str, topic: Optional[str], key: Optional[str], what: str) -> None:
        self.file = file
        self.topic = topic
        self.key = key
        self.what = what
        where = file
        if topic is not None:
            where += f": topic {topic!r}"
        if key is not None:
            where += f": key {key!r}"
        super().__init__(f"{where}: {what}")


class UnknownMessageType(MappingError):
    """The mapping names a message type no converter handles (refused at start)."""

    def __init__(self, file: str, topic: str, msg_type: str, known: str) -> None:
        self.msg_type = msg_type
        super().__init__(file, topic, "type", f"unknown message type {msg_type!r} (known: {known})")


class MessageError(RosBridgeError, ValueError):
    """A message that cannot be converted: a field missing or of the wrong kind, image
    geometry that does not add up, a stamp out of range.

    Attributes:
        topic: the topic the message came from.
        field: the message field at fault (``"header.stamp"``, ``"step"``, ``"position"``).
    """

    def __init__(self, topic: str, field: str, what: str) -> None:
        self.topic = topic
        self.field = field
        self.what = what
        super().__init__(f"topic {topic!r}: field {field!r}: {what}")


class ShapeMismatch(MessageError):
    """A message whose field differs from what the first message of the topic fixed (its
    shape, dtype, joint names, image encoding): never reshaped.

    Attributes:
        expected: what the first message fixed.
        got: what this message has.
    """

    def __init__(self, topic: str, field: str, expected: Any, got: Any) -> None:
        self.expected = expected
        self.got = got
        super().__init__(topic, field, f"differs from the first message: expected {expected!r}, got {got!r}")


class MessageTypeMismatch(MessageError):
    """A message whose own type name (``__msgtype__`` of rosbags, ``_type`` of rospy) is not
    the type the mapping gives for its topic."""

    def __init__(self, topic: str, expected: str, got: str) -> None:
        self.expected = expected
        self.got = got
        super().__init__(topic, "<type>", f"message of type {got!r}, the mapping says {expected!r}")


class NotLearned(RosBridgeError, RuntimeError):
    """:meth:`~wshard_ros.Converter.channels` read before the first message was seen."""


class MissingDependency(RosBridgeError, ImportError):
    """A mapping option needs a package that is not installed (the text says which and
    how to install it), e.g. Pillow for ``compressed = "decode"``."""
