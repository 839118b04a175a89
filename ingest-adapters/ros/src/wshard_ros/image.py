"""Converters of images: ``sensor_msgs/Image`` (row padding dropped, big-endian pixels
swapped to little-endian) and ``sensor_msgs/CompressedImage`` kept as bytes."""

import struct
from typing import Any, Dict, List, Tuple

from ._base import Converter, Field, field_of
from .errors import MessageError

#: encoding -> (dtype, channels per pixel, bytes per element, modality)
ENCODINGS: Dict[str, Tuple[str, int, int, str]] = {
    "rgb8": ("u8", 3, 1, "rgb"),
    "bgr8": ("u8", 3, 1, "bgr"),
    "mono8": ("u8", 1, 1, "mono"),
    "mono16": ("u16", 1, 2, "mono"),
    "16UC1": ("u16", 1, 2, "depth"),
    "32FC1": ("f32", 1, 4, "depth"),
}


def as_bytes(data: Any) -> bytes:
    """The bytes of a ``uint8[]`` field: ``bytes`` (rospy), a numpy ``uint8`` array
    (rosbags) or a list of ints."""
    if isinstance(data, bytes):
        return data
    try:
        view = memoryview(data)
    except TypeError:
        return bytes(data)
    if view.itemsize != 1:
        raise TypeError(f"{view.itemsize}-byte elements, not bytes")
    return view.tobytes()


def swap_bytes(data: bytes, width: int) -> bytes:
    """``data`` with every ``width``-byte element's byte order reversed (exact: no number
    conversion)."""
    out = bytearray(len(data))
    for i in range(width):
        out[i::width] = data[width - 1 - i :: width]
    return bytes(out)


class ImageConverter(Converter):
    """``image``: u8[h, w, 3] (rgb8, bgr8, kept in the published channel order), u8[h, w]
    (mono8), u16[h, w] (mono16, 16UC1) or f32[h, w] (32FC1), little-endian, rows without
    their padding. The encoding must not change."""

    def identity(self, msg: Any) -> Dict[str, Any]:
        topic = self.spec.topic
        return {
            "encoding": field_of(topic, "encoding", lambda: str(msg.encoding)),
            "frame_id": field_of(topic, "header.frame_id", lambda: str(msg.header.frame_id)),
        }

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        encoding = str(field_of(topic, "encoding", lambda: msg.encoding))
        if encoding not in ENCODINGS:
            raise MessageError(topic, "encoding", f"{encoding!r} not supported (supported: {', '.join(ENCODINGS)})")
        dtype, per_pixel, elem, modality = ENCODINGS[encoding]
        height = int(field_of(topic, "height", lambda: msg.height))
        width = int(field_of(topic, "width", lambda: msg.width))
        step = int(field_of(topic, "step", lambda: msg.step))
        bigendian = bool(field_of(topic, "is_bigendian", lambda: msg.is_bigendian))
        data = field_of(topic, "data", lambda: as_bytes(msg.data))
        row = width * per_pixel * elem
        if step < row:
            raise MessageError(topic, "step", f"{step} < {row} bytes of a {width}-pixel {encoding} row")
        if len(data) != step * height:
            raise MessageError(topic, "data", f"{len(data)} bytes, step {step} x height {height} = {step * height}")
        pixels = data if step == row else b"".join(data[r * step : r * step + row] for r in range(height))
        if bigendian and elem > 1:
            pixels = swap_bytes(pixels, elem)
        shape = (height, width, per_pixel) if per_pixel > 1 else (height, width)
        return [Field("image", dtype, shape, pixels, modality)]


class CompressedImageBytesConverter(Converter):
    """``data``: u8[max_bytes] (the compressed image, zero-padded) and ``size`` u32 (its
    length). The format (``jpeg``, ``png``, ...) is kept in the metadata and must not
    change."""

    def identity(self, msg: Any) -> Dict[str, Any]:
        topic = self.spec.topic
        return {
            "format": field_of(topic, "format", lambda: str(msg.format)),
            "frame_id": field_of(topic, "header.frame_id", lambda: str(msg.header.frame_id)),
        }

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        data = field_of(topic, "data", lambda: as_bytes(msg.data))
        limit = self.spec.max_bytes
        if len(data) > limit:
            raise MessageError(topic, "data", f"{len(data)} bytes, more than max_bytes = {limit}")
        padded = data + bytes(limit - len(data))
        return [
            Field("data", "u8", (limit,), padded, "compressed_image"),
            Field("size", "u32", (), struct.pack("<I", len(data))),
        ]
