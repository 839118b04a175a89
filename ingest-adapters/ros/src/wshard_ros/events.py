"""Event topics: ``std_msgs/String`` (a text event) and ``std_msgs/Bool`` (a JSON
``true``/``false`` event), at receive time (neither has a header)."""

from dataclasses import dataclass
from typing import Any, Union

from ._base import field_of
from .errors import MessageError, MessageTypeMismatch
from .mapping import EventSpec
from .msgtypes import message_type_of


@dataclass(frozen=True)
class Event:
    """What ``send_event(t_ns, label, data)`` takes: ``data`` a ``str`` (text) or a
    ``bool`` (JSON)."""

    t_ns: int
    label: str
    data: Union[str, bool]


class EventConverter:
    """Turns the messages of an event topic into :class:`Event`."""

    def __init__(self, spec: EventSpec) -> None:
        self.spec = spec

    def convert(self, msg: Any, receive_t_ns: int) -> Event:
        """Raises :class:`MessageTypeMismatch` or :class:`MessageError` (field ``data``)."""
        topic = self.spec.topic
        got_type = message_type_of(msg)
        if got_type is not None and got_type != self.spec.type:
            raise MessageTypeMismatch(topic, self.spec.type, got_type)
        value = field_of(topic, "data", lambda: msg.data)
        if self.spec.type == "std_msgs/String":
            if not isinstance(value, str):
                raise MessageError(topic, "data", f"{type(value).__name__}, not a string")
            return Event(receive_t_ns, self.spec.label, value)
        # a numpy bool scalar is not a bool; accept it by its dtype kind, never ints.
        if not (isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"):
            raise MessageError(topic, "data", f"{type(value).__name__}, not a bool")
        return Event(receive_t_ns, self.spec.label, bool(value))
