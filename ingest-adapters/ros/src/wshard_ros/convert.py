"""The converter for each known message type."""

from typing import Dict, Type

from ._base import Converter
from .events import EventConverter
from .image import CompressedImageBytesConverter, ImageConverter
from .image_decode import CompressedImageDecodeConverter
from .mapping import EventSpec, TopicSpec
from .msgtypes import SCALAR_TYPES, STREAM_TYPES
from .numeric import (
    Float64MultiArrayConverter,
    ImuConverter,
    JointStateConverter,
    PoseStampedConverter,
    ScalarConverter,
    TwistStampedConverter,
    WrenchStampedConverter,
)

CONVERTERS: Dict[str, Type[Converter]] = {
    "sensor_msgs/JointState": JointStateConverter,
    "sensor_msgs/Image": ImageConverter,
    "sensor_msgs/CompressedImage": CompressedImageBytesConverter,
    "sensor_msgs/Imu": ImuConverter,
    "geometry_msgs/WrenchStamped": WrenchStampedConverter,
    "geometry_msgs/PoseStamped": PoseStampedConverter,
    "geometry_msgs/TwistStamped": TwistStampedConverter,
    "std_msgs/Float64MultiArray": Float64MultiArrayConverter,
    **{name: ScalarConverter for name in SCALAR_TYPES},
}
assert set(CONVERTERS) == set(STREAM_TYPES), "msgtypes.STREAM_TYPES and CONVERTERS list the same types"


def converter_for(spec: TopicSpec) -> Converter:
    """The converter of a mapping's topic (its type was checked when the mapping loaded).

    Raises:
        MissingDependency: ``compressed = "decode"`` without Pillow installed.
    """
    if spec.type == "sensor_msgs/CompressedImage" and spec.compressed == "decode":
        return CompressedImageDecodeConverter(spec)
    return CONVERTERS[spec.type](spec)


def event_converter_for(spec: EventSpec) -> EventConverter:
    """The converter of a mapping's event topic."""
    return EventConverter(spec)
