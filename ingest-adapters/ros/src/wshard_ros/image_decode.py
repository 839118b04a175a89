"""``sensor_msgs/CompressedImage`` with ``compressed = "decode"``: the JPEG or PNG is
decoded with Pillow (imported here only: the rest of the core does not need it) into an
``image`` channel, u8[h, w, 3] (rgb8) or u8[h, w] (mono8), shape learned from the first
message."""

import io
from typing import Any, Dict, List, Tuple

from ._base import Converter, Field, field_of
from .errors import MessageError, MissingDependency
from .image import as_bytes
from .mapping import TopicSpec

#: Pillow mode -> (mode to convert to, encoding recorded, channels). Palette and the JPEG
#: colour spaces become RGB; 1-bit becomes 8-bit grey. Modes with alpha or more than 8 bits
#: per sample are refused (never silently cut).
MODES: Dict[str, Tuple[str, str, int]] = {
    "RGB": ("RGB", "rgb8", 3),
    "L": ("L", "mono8", 1),
    "1": ("L", "mono8", 1),
    "P": ("RGB", "rgb8", 3),
    "YCbCr": ("RGB", "rgb8", 3),
    "CMYK": ("RGB", "rgb8", 3),
}


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError as e:
        raise MissingDependency(
            'compressed = "decode" needs Pillow: `apt install python3-pil` (Debian) or `pip install pillow`'
        ) from e
    return Image


class CompressedImageDecodeConverter(Converter):
    """``image``: the decoded picture, rgb8 u8[h, w, 3] or mono8 u8[h, w] (modality
    ``rgb`` / ``mono``). The ``format`` string, the decoded ``encoding`` and the frame id
    are kept in the metadata and must not change, nor the shape.

    Raises (constructor):
        MissingDependency: Pillow is not installed.
    """

    def __init__(self, spec: TopicSpec) -> None:
        super().__init__(spec)
        self._image = _pillow()
        self._encoding = ""

    def identity(self, msg: Any) -> Dict[str, Any]:
        topic = self.spec.topic
        return {
            "format": field_of(topic, "format", lambda: str(msg.format)),
            "frame_id": field_of(topic, "header.frame_id", lambda: str(msg.header.frame_id)),
        }

    def _decode(self, data: bytes, fmt: str) -> Tuple[bytes, Tuple[int, ...], str]:
        topic = self.spec.topic
        image = self._image
        try:
            with image.open(io.BytesIO(data)) as img:
                img.load()
                mode = img.mode
                if mode not in MODES:
                    raise MessageError(
                        topic, "data", f"decoded {fmt!r} has mode {mode!r}: only {', '.join(MODES)} are recorded"
                    )
                target, encoding, channels = MODES[mode]
                out = img if mode == target else img.convert(target)
                width, height = out.size
                pixels = out.tobytes()
        except MessageError:
            raise
        except (OSError, SyntaxError, ValueError, image.DecompressionBombError) as e:
            raise MessageError(topic, "data", f"cannot be decoded ({fmt!r}, {len(data)} bytes): {e}") from e
        shape = (height, width, channels) if channels > 1 else (height, width)
        return pixels, shape, encoding

    def fields(self, msg: Any) -> List[Field]:
        topic = self.spec.topic
        data = field_of(topic, "data", lambda: as_bytes(msg.data))
        fmt = str(field_of(topic, "format", lambda: msg.format))
        pixels, shape, encoding = self._decode(data, fmt)
        if not self.learned:
            self._encoding = encoding  # a later mono/rgb change differs in shape: ShapeMismatch
        return [Field("image", "u8", shape, pixels, "rgb" if encoding == "rgb8" else "mono")]

    def metadata(self) -> Dict[str, Any]:
        """The base metadata plus ``decoded``: ``rgb8`` or ``mono8``."""
        return {**super().metadata(), "decoded": self._encoding}
