"""Converters of numeric messages: JointState, Imu, the stamped geometry messages,
Float64MultiArray and the scalar std_msgs types. Every float64 of a message becomes an
f64 element, bit for bit."""

import math
import struct
from typing import Any, Dict, List, Tuple

from ._base import Converter, Field, f64_payload, field_of, vector_payload
from .errors import MessageError
from .msgtypes import SCALAR_TYPES

XYZ = ("x", "y", "z")
XYZW = ("x", "y", "z", "w")
COVARIANCE_LEN = 9
IMU_MODALITY = "imu"


def _f64_field(topic: str, msg: Any, name: str, modality: str = "") -> Field:
    n, payload = field_of(topic, name, lambda: f64_payload(getattr(msg, name)))
    return Field(name, "f64", (n,), payload, modality or None)


def _vector_field(topic: str, obj: Any, path: str, name: str, axes: Tuple[str, ...], modality: str = "") -> Field:
    def read() -> bytes:
        target = obj
        for part in path.split("."):
            target = getattr(target, part)
        return vector_payload(target, axes)

    return Field(name, "f64", (len(axes),), field_of(topic, path, read), modality or None)


class JointStateConverter(Converter):
    """``position``, ``velocity``, ``effort`` as f64[n]; a field empty in the first
    message (ROS allows it) has no channel. The joint names are kept in the metadata and
    must not change."""

    FIELDS = ("position", "velocity", "effort")

    def identity(self, msg: Any) -> Dict[str, Any]:
        return {"name": field_of(self.spec.topic, "name", lambda: [str(n) for n in msg.name])}

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        out = [_f64_field(topic, msg, name, "proprioception") for name in self.FIELDS]
        if self._layout is None:
            return [f for f in out if f.shape != (0,)]
        learned = {name for name, _, _ in self._layout}
        # An empty field the first message had too stays absent; any other change is a mismatch.
        return [f for f in out if f.name in learned or f.shape != (0,)]


class ImuConverter(Converter):
    """``orientation`` f64[4] (x, y, z, w), ``angular_velocity`` and
    ``linear_acceleration`` f64[3], each with its ``*_covariance`` f64[9]."""

    def identity(self, msg: Any) -> Dict[str, Any]:
        return {"frame_id": field_of(self.spec.topic, "header.frame_id", lambda: str(msg.header.frame_id))}

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        out = []
        for name, axes in (("orientation", XYZW), ("angular_velocity", XYZ), ("linear_acceleration", XYZ)):
            out.append(_vector_field(topic, msg, name, name, axes, IMU_MODALITY))
            cov = _f64_field(topic, msg, f"{name}_covariance", IMU_MODALITY)
            if cov.shape != (COVARIANCE_LEN,):
                raise MessageError(topic, cov.name, f"{cov.shape[0]} values, a covariance has {COVARIANCE_LEN}")
            out.append(cov)
        return out


class StampedVectorsConverter(Converter):
    """A stamped geometry message as f64 vectors: ``PARTS`` lists (message path, channel,
    axes)."""

    PARTS: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = ()

    def identity(self, msg: Any) -> Dict[str, Any]:
        return {"frame_id": field_of(self.spec.topic, "header.frame_id", lambda: str(msg.header.frame_id))}

    def fields(self, msg: Any) -> List[Field]:
        return [_vector_field(self.spec.topic, msg, path, name, axes) for path, name, axes in self.PARTS]


class WrenchStampedConverter(StampedVectorsConverter):
    """``force``, ``torque`` f64[3]."""

    PARTS = (("wrench.force", "force", XYZ), ("wrench.torque", "torque", XYZ))


class PoseStampedConverter(StampedVectorsConverter):
    """``position`` f64[3], ``orientation`` f64[4] (x, y, z, w)."""

    PARTS = (("pose.position", "position", XYZ), ("pose.orientation", "orientation", XYZW))


class TwistStampedConverter(StampedVectorsConverter):
    """``linear``, ``angular`` f64[3]."""

    PARTS = (("twist.linear", "linear", XYZ), ("twist.angular", "angular", XYZ))


class Float64MultiArrayConverter(Converter):
    """``data`` as f64 shaped by ``layout.dim`` sizes when they multiply to its length
    (and ``data_offset`` is 0), else flat f64[n]."""

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        n, payload = field_of(topic, "data", lambda: f64_payload(msg.data))
        dims = field_of(topic, "layout.dim", lambda: tuple(int(d.size) for d in msg.layout.dim))
        offset = field_of(topic, "layout.data_offset", lambda: int(msg.layout.data_offset))
        shape = dims if dims and offset == 0 and math.prod(dims) == n else (n,)
        return [Field("data", "f64", shape, payload)]


class ScalarConverter(Converter):
    """A scalar std_msgs number as the scalar channel ``data`` of its own dtype."""

    def fields(self, msg: Any) -> List[Field]:
        dtype, code = SCALAR_TYPES[self.spec.type]
        payload = field_of(self.spec.topic, "data", lambda: struct.pack(f"<{code}", msg.data))
        return [Field("data", dtype, (), payload)]
