"""``compressed = "decode"``: CompressedImage JPEG / PNG decoded with Pillow into an rgb8 or
mono8 ``image`` channel; images encoded in the test with Pillow; PNG bit-exact, JPEG equal
to what Pillow decodes; recorded through a real wshardd."""

import io
import subprocess
import sys
from pathlib import Path

import bridgekit as K
import numpy as np
import pytest
import rosmsgs as R
from PIL import Image

from wshard_ros import MessageError, ShapeMismatch, converter_for, loads_mapping

DECODE = """
[topics."/cam/compressed"]
type = "sensor_msgs/CompressedImage"
compressed = "decode"
"""


def spec():
    return loads_mapping(DECODE).topics[0]


def encode(arr: np.ndarray, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def compressed(data: bytes, fmt: str, t_ns: int = K.stamp(0), frame: str = "cam"):
    return R.T["sensor_msgs/msg/CompressedImage"](
        header=K.hdr(t_ns, frame), format=fmt, data=np.frombuffer(data, dtype=np.uint8).copy()
    )


def rgb_arr(seed: int, h: int = 9, w: int = 13) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def test_ros_bridge_decode_png_is_bit_exact() -> None:
    conv = converter_for(spec())
    arr = rgb_arr(1)
    sample = conv.convert(compressed(encode(arr, "PNG"), "png"), 77)
    ch = conv.channels()
    assert [(c.name, c.dtype.name, tuple(c.shape)) for c in ch] == [
        ("image", "U8", (9, 13, 3)),
        ("receive_t_ns", "I64", ()),
    ]
    assert sample.payloads[0] == arr.tobytes()
    assert conv.metadata()["decoded"] == "rgb8" and conv.metadata()["format"] == "png"
    grey = np.arange(9 * 13, dtype=np.uint8).reshape(9, 13)
    mono = converter_for(spec())
    assert mono.convert(compressed(encode(grey, "PNG"), "png"), 1).payloads[0] == grey.tobytes()
    assert mono.channels()[0].shape == (9, 13) and mono.metadata()["decoded"] == "mono8"
    # a palette PNG decodes to its RGB colours, exactly
    pal = Image.fromarray(arr).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    buf = io.BytesIO()
    pal.save(buf, format="PNG")
    p = converter_for(spec()).convert(compressed(buf.getvalue(), "png"), 1)
    assert p.payloads[0] == np.asarray(pal.convert("RGB")).tobytes()


def test_ros_bridge_decode_jpeg_equals_pillow_decode() -> None:
    conv = converter_for(spec())
    y, x = np.mgrid[0:16, 0:24]
    arr = np.stack([x * 10, y * 15, (x + y) * 5], axis=-1).astype(np.uint8)  # smooth: JPEG keeps it close
    data = encode(arr, "JPEG", quality=90)
    sample = conv.convert(compressed(data, "rgb8; jpeg compressed bgr8"), 5)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert sample.payloads[0] == want.tobytes()
    assert np.abs(want.astype(int) - arr.astype(int)).mean() < 20  # it is the picture


def test_ros_bridge_decode_refusals() -> None:
    conv = converter_for(spec())
    conv.convert(compressed(encode(rgb_arr(3), "PNG"), "png"), 1)
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(compressed(encode(rgb_arr(4, 10, 13), "PNG"), "png"), 2)
    assert e.value.field == "image"
    with pytest.raises(ShapeMismatch) as e:
        conv.convert(compressed(encode(rgb_arr(4), "JPEG"), "jpeg"), 2)
    assert e.value.field == "format"
    with pytest.raises(MessageError) as e:
        conv.convert(compressed(b"\x89PNG\r\n\x1a\n garbage", "png"), 3)
    assert e.value.field == "data" and "cannot be decoded" in str(e.value)
    rgba = np.zeros((4, 4, 4), dtype=np.uint8)
    with pytest.raises(MessageError, match="mode 'RGBA'"):
        converter_for(spec()).convert(compressed(encode(rgba, "PNG"), "png"), 1)


def test_ros_bridge_decode_without_pillow(tmp_path) -> None:
    """Without Pillow the Bridge refuses the mapping at construction (MissingDependency)."""
    block = tmp_path / "PIL"
    block.mkdir()
    (block / "__init__.py").write_text("raise ImportError('no PIL here')\n")
    src = Path(__file__).resolve().parents[1] / "src"
    client = Path(__file__).resolve().parents[2] / "python" / "src"
    code = f"""
import sys
sys.path[:0] = [{str(tmp_path)!r}, {str(src)!r}, {str(client)!r}]
from wshard_ros import loads_mapping, MissingDependency
from wshard_ros.bridge import Bridge, BridgeOptions
try:
    Bridge(loads_mapping({DECODE!r}), BridgeOptions(socket_path="x"))
except MissingDependency as e:
    print("refused:", e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert 'refused: compressed = "decode" needs Pillow' in r.stdout


def test_ros_bridge_decode_recorded(daemon) -> None:
    bridge = K.make_bridge(daemon, DECODE)
    bridge.start("dec")
    arrs = [rgb_arr(10 + i) for i in range(5)]
    for i, a in enumerate(arrs):
        bridge.on_message("/cam/compressed", compressed(encode(a, "PNG"), "png", K.stamp(i)), i)
    bridge.on_message("/cam/compressed", compressed(b"not an image", "png", K.stamp(9)), 9)
    bridge.stop()
    st = bridge.status()["topics"]["/cam/compressed"]
    assert (st["recorded"], st["drop_reasons"]["error"]) == (5, 1)
    ep = K.stream_of(daemon, "dec", "cam.compressed")
    assert ep.channel("signal/image") == b"".join(a.tobytes() for a in arrs)
    assert ep.timestamps == [K.stamp(i) for i in range(5)]
