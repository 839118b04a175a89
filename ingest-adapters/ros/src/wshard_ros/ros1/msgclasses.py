"""The rospy message class of every topic of the mapping, found with
``roslib.message.get_message_class`` (whatever message packages are installed)."""

from typing import Any, Dict

import roslib.message

from ..mapping import BridgeMapping
from .errors import MessageClassMissing


def message_class(topic: str, msg_type: str) -> Any:
    """The rospy class of ``msg_type`` (``pkg/T``) for ``topic``.

    Raises:
        MessageClassMissing: no installed Python message package has that type.
    """
    cls = roslib.message.get_message_class(msg_type)
    if cls is None:
        raise MessageClassMissing(topic, msg_type)
    return cls


def message_classes(mapping: BridgeMapping) -> Dict[str, Any]:
    """Topic -> rospy class of every ``[topics]`` and ``[events]`` entry, in file order.

    Raises:
        MessageClassMissing: the first topic whose type is not installed (nothing subscribed).
    """
    out: Dict[str, Any] = {}
    for spec in mapping.topics:
        out[spec.topic] = message_class(spec.topic, spec.type)
    for ev in mapping.events:
        out[ev.topic] = message_class(ev.topic, ev.type)
    return out
