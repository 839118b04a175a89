"""What every stream converter shares: learning the channels from the first message,
refusing a later message that differs, the two clocks."""

import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from wshard_client import Channel

from .errors import MessageError, MessageTypeMismatch, NotLearned, ShapeMismatch
from .mapping import TopicSpec
from .msgtypes import message_type_of, stamp_ns

#: The extra channel that keeps the clock not used as the step's time (both are i64 ns).
RECEIVE_T_CHANNEL = "receive_t_ns"
HEADER_T_CHANNEL = "header_t_ns"
_CONVERSION_ERRORS = (AttributeError, TypeError, ValueError, IndexError, KeyError, struct.error)


@dataclass(frozen=True)
class Field:
    """One channel's value in one message: ``payload`` is its little-endian bytes."""

    name: str
    dtype: str
    shape: Tuple[int, ...]
    payload: bytes
    modality: Optional[str] = None


@dataclass(frozen=True)
class Sample:
    """One converted message: the step time and one payload per channel, in the order of
    :meth:`Converter.channels`."""

    t_ns: int
    payloads: List[bytes]


def field_of(topic: str, name: str, read: Callable[[], Any]) -> Any:
    """``read()``, with any failure turned into a :class:`MessageError` naming ``name``."""
    try:
        return read()
    except MessageError:
        raise
    except _CONVERSION_ERRORS as e:
        raise MessageError(topic, name, f"cannot be read: {e}") from e


def f64_payload(values: Any) -> Tuple[int, bytes]:
    """``(n, bytes)`` of a sequence of numbers as little-endian f64: numpy arrays (rosbags)
    by a cast, lists and tuples (rospy) by ``struct``; bit-exact for f64 input."""
    if hasattr(values, "astype") and hasattr(values, "tobytes"):
        arr = values.astype("<f8", copy=False).reshape(-1)
        return int(arr.shape[0]), bytes(arr.tobytes())
    seq = list(values)
    return len(seq), struct.pack(f"<{len(seq)}d", *seq)


def vector_payload(obj: Any, names: Sequence[str]) -> bytes:
    """f64 fields ``names`` of ``obj`` (``x``, ``y``, ``z``[, ``w``]) as little-endian bytes."""
    return struct.pack(f"<{len(names)}d", *(float(getattr(obj, n)) for n in names))


class Converter:
    """Turns the messages of one topic into channel payloads.

    Channels are learned from the first message (:meth:`convert` or :meth:`learn`); every
    later message must give the same channels with the same shapes and the same identity
    (joint names, image encoding), else :class:`ShapeMismatch`. Subclasses implement
    :meth:`fields` (and :meth:`identity` when something else must not change).
    """

    def __init__(self, spec: TopicSpec) -> None:
        self.spec = spec
        self._layout: Optional[List[Tuple[str, str, Tuple[int, ...]]]] = None
        self._identity: Dict[str, Any] = {}
        self._channels: List[Channel] = []

    # -- for subclasses --------------------------------------------------------------
    def fields(self, msg: Any) -> List[Field]:
        """The message's channels, each with its payload."""
        raise NotImplementedError

    def identity(self, msg: Any) -> Dict[str, Any]:
        """Values (by message field) that must stay what the first message had."""
        return {}

    # -- public -----------------------------------------------------------------------
    @property
    def learned(self) -> bool:
        """Whether the first message has been seen."""
        return self._layout is not None

    def channels(self) -> List[Channel]:
        """The stream's channels for this topic (names with the topic's prefix), the time
        channel last. Raises :class:`NotLearned` before the first message."""
        if self._layout is None:
            raise NotLearned(f"topic {self.spec.topic!r}: no message seen yet")
        return list(self._channels)

    def metadata(self) -> Dict[str, Any]:
        """What the stream's metadata keeps for this topic: topic, type, time source and
        the first message's identity (joint names, encoding, frame id)."""
        return {"topic": self.spec.topic, "type": self.spec.type, "time": self.spec.time, **self._identity}

    def learn(self, msg: Any) -> List[Channel]:
        """Fix the channels from ``msg`` (if not yet fixed) and return them."""
        if self._layout is None:
            self.convert(msg, 0)
        return self.channels()

    def convert(self, msg: Any, receive_t_ns: int) -> Sample:
        """Convert one message received at ``receive_t_ns`` (ns, the bridge's clock).

        Raises:
            MessageTypeMismatch: the message says it is of another type.
            MessageError: a field cannot be read, or the stamp is out of range.
            ShapeMismatch: a field differs from the first message's.
        """
        topic = self.spec.topic
        got_type = message_type_of(msg)
        if got_type is not None and got_type != self.spec.type:
            raise MessageTypeMismatch(topic, self.spec.type, got_type)
        identity = self.identity(msg)
        fields = self.fields(msg)
        layout = [(f.name, f.dtype, f.shape) for f in fields]
        if self._layout is None:
            self._learn(fields, layout, identity)
        else:
            self._check(layout, identity)
        t_ns, other = self._times(msg, receive_t_ns)
        payloads = [f.payload for f in fields]
        if other is not None:
            payloads.append(struct.pack("<q", other))
        return Sample(t_ns, payloads)

    # -- internals --------------------------------------------------------------------
    def _name(self, name: str) -> str:
        return f"{self.spec.prefix}/{name}" if self.spec.prefix else name

    def _learn(
        self, fields: List[Field], layout: List[Tuple[str, str, Tuple[int, ...]]], identity: Dict[str, Any]
    ) -> None:
        codec = self.spec.codec
        channels = [Channel(self._name(f.name), f.dtype, f.shape, codec=codec, modality=f.modality) for f in fields]
        if self.spec.has_header:
            other = RECEIVE_T_CHANNEL if self.spec.time == "header" else HEADER_T_CHANNEL
            channels.append(Channel(self._name(other), "i64", ()))
        self._channels = channels
        self._identity = identity
        self._layout = layout

    def _check(self, layout: List[Tuple[str, str, Tuple[int, ...]]], identity: Dict[str, Any]) -> None:
        assert self._layout is not None
        topic = self.spec.topic
        for key, value in self._identity.items():
            if identity.get(key) != value:
                raise ShapeMismatch(topic, key, value, identity.get(key))
        expected = {name: (dtype, shape) for name, dtype, shape in self._layout}
        got = {name: (dtype, shape) for name, dtype, shape in layout}
        for name in list(expected) + [n for n in got if n not in expected]:
            if expected.get(name) != got.get(name):
                raise ShapeMismatch(topic, name, _describe(expected.get(name)), _describe(got.get(name)))

    def _times(self, msg: Any, receive_t_ns: int) -> Tuple[int, Optional[int]]:
        """``(step time, the other clock or None)``."""
        if not self.spec.has_header:
            return receive_t_ns, None
        header_t = field_of(self.spec.topic, "header.stamp", lambda: stamp_ns(msg.header.stamp))
        if self.spec.time == "header":
            return header_t, receive_t_ns
        return receive_t_ns, header_t


def _describe(layout: Optional[Tuple[str, Tuple[int, ...]]]) -> str:
    if layout is None:
        return "absent"
    dtype, shape = layout
    return f"{dtype}{list(shape)}"
