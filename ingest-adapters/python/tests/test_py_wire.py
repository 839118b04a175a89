"""The tables of this package against the Rust sources they mirror (dtype sizes and codes,
error codes, frame type codes), and frame encoding / decoding byte by byte as
docs/PROTOCOL.md lays them out. No daemon needed."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Dict

import pytest
from conftest import REPO

from wshard_client import DTYPES, Channel, DType, EpisodeSpec, ErrorCode, ProtocolError
from wshard_client import _wire as wire


def _rust(path: str) -> str:
    p = REPO / path
    if not p.is_file():
        pytest.skip(f"{p} not found (tests run outside the wshard-recorder repository)")
    return p.read_text()


def _rust_match_arms(body: str) -> Dict[str, int]:
    """``Self::A | Self::B => 4,`` arms of a Rust ``match`` as ``{"A": 4, "B": 4}``."""
    out = {}
    for names, value in re.findall(r"((?:Self::\w+\s*\|\s*)*Self::\w+)\s*=>\s*(\d+)", body):
        for name in re.findall(r"Self::(\w+)", names):
            out[name] = int(value)
    return out


def test_py_dtype_table_matches_rust() -> None:
    src = _rust("wshard/src/episode/dtype.rs")
    all_block = re.search(r"pub const ALL: \[DType; 13\] = \[(.*?)\];", src, re.S)
    assert all_block, "DType::ALL not found"
    order = re.findall(r"Self::(\w+)", all_block.group(1))
    size_fn = re.search(r"pub fn size\(self\) -> usize \{(.*?)\n    \}", src, re.S)
    assert size_fn, "DType::size not found"
    sizes = _rust_match_arms(size_fn.group(1))
    code_fn = re.search(r"pub fn code\(self\) -> &'static str \{(.*?)\n    \}", src, re.S)
    assert code_fn
    names = dict(re.findall(r"Self::(\w+)\s*=>\s*\"(\w+)\"", code_fn.group(1)))
    assert len(order) == len(DTYPES) == 13
    # The wire code is the index in DType::ALL (proto schema.rs dtype_code).
    for code, rust_name in enumerate(order):
        d = DType(code)
        assert d.name.replace("_", "") == rust_name.upper(), (code, rust_name)
        assert d.size == sizes[rust_name], rust_name
        assert DTYPES[d].name == names[rust_name]
        assert DType.parse(names[rust_name]) is d


def test_py_error_codes_match_rust() -> None:
    src = _rust("ingest-adapters/proto/src/error.rs")
    enum = re.search(r"pub enum ErrorCode \{(.*?)\}", src, re.S)
    assert enum
    rust = {re.sub(r"(?<!^)([A-Z])", r"_\1", n).upper(): int(v) for n, v in re.findall(r"(\w+) = (\d+)", enum.group(1))}
    assert rust == {c.name: c.value for c in ErrorCode}


def test_py_frame_codes_match_rust() -> None:
    src = _rust("ingest-adapters/proto/src/frame_header.rs")
    rust = {n: int(v, 16) for n, v in re.findall(r"pub const (\w+): u8 = 0x([0-9a-fA-F]+);", src)}
    for t in wire.FrameType:
        assert rust[t.name] == t.value, t.name


def test_py_encode_client_frames() -> None:
    assert wire.encode_hello("ab") == struct.pack("<IBHH", 7, 0x01, 1, 2) + b"ab"
    assert wire.encode_flush() == b"\x01\x00\x00\x00\x06"
    assert wire.encode_close("aborted") == b"\x02\x00\x00\x00\x05\x01"
    rec = wire.record_header(3, -5, 0.5, True)
    assert len(rec) == wire.RECORD_HEADER_BYTES == 21
    assert rec == struct.pack("<Q", 3) + struct.pack("<q", -5) + struct.pack("<f", 0.5) + b"\x01"
    frame = wire.encode_timestep_batch([rec + b"xy", rec + b"zw"])
    assert frame[:9] == struct.pack("<IBI", 5 + 46, 0x04, 2)


def test_py_encode_open_layout() -> None:
    spec = EpisodeSpec(
        "ep-1",
        [
            Channel("cam/rgb", "u8", (2, 3), codec="zstd-9", modality="rgb"),
            Channel("g", "bool", lane="action", codec="lz4"),
        ],
        env_id="E",
        tick_hz=30.0,
        durability="chunk",
        metadata={"k": 1},
    )
    want = b"".join(
        [
            struct.pack("<H", 4), b"ep-1", struct.pack("<H", 1), b"E",
            struct.pack("<BdBH", 0, 30.0, 1, 2),
            struct.pack("<H", 7), b"cam/rgb", bytes([0, 11, 2]), struct.pack("<II", 2, 3), struct.pack("<Bb", 3, 9),
            struct.pack("<H", 3), b"rgb",
            struct.pack("<H", 1), b"g", bytes([1, 12, 0]), struct.pack("<Bb", 2, 0), struct.pack("<H", 0),
            struct.pack("<I", 7), b'{"k":1}',
        ]
    )  # fmt: skip
    frame = wire.encode_open(spec)
    assert frame == struct.pack("<IB", len(want) + 1, 0x02) + want
    assert spec.step_bytes == 7


def test_py_decode_server_frames() -> None:
    dec = wire.FrameDecoder()
    hello_ok = struct.pack("<IBHH", 5 + 4 + 4, 0x81, 1, 4) + b"srv1" + struct.pack("<I", 1 << 20)
    accepted = struct.pack("<IBBQ", 10, 0x82, 5, 42)
    durable = struct.pack("<IBQ", 9, 0x83, 17)
    error = struct.pack("<IBHH", 5 + 4, 0x84, 8, 4) + b"boom"
    stream = hello_ok + accepted + durable + error
    frames = []
    for i in range(len(stream)):  # byte by byte: frames split anywhere
        dec.feed(stream[i : i + 1])
        f = dec.next_frame()
        if f is not None:
            frames.append(f)
    assert frames == [
        wire.HelloOk(1, "srv1", 1 << 20),
        wire.Accepted(wire.AcceptedWhat.CLOSE, 42),
        wire.Durable(17),
        wire.ErrorFrame(ErrorCode.EPISODE_EXISTS, "boom"),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack("<IB", 1, 0x99),  # unknown type
        struct.pack("<I", 0),  # zero length
        struct.pack("<I", (1 << 20) + 1),  # over the client's limit
        struct.pack("<IBQB", 10, 0x83, 1, 0),  # trailing byte
        struct.pack("<IBH", 3, 0x84, 99),  # unknown error code (and truncated)
        struct.pack("<IBBQ", 10, 0x82, 3, 0),  # bad ACCEPTED.what
        struct.pack("<IBHH", 5 + 2, 0x84, 1, 2) + b"\xff\xfe",  # bad UTF-8
    ],
)
def test_py_decode_refuses_bad_frames(raw: bytes) -> None:
    dec = wire.FrameDecoder()
    dec.feed(raw)
    with pytest.raises(ProtocolError):
        dec.next_frame()


def test_py_decode_every_error_code() -> None:
    for code in ErrorCode:
        dec = wire.FrameDecoder()
        dec.feed(struct.pack("<IBHH", 5 + 2, 0x84, code.value, 2) + b"hi")
        assert dec.next_frame() == wire.ErrorFrame(code, "hi")
    last = max(ErrorCode).value
    dec = wire.FrameDecoder()
    dec.feed(struct.pack("<IBHH", 5, 0x84, last + 1, 0))
    with pytest.raises(ProtocolError) as ei:
        dec.next_frame()
    assert f"has value {last + 1}, expected an error code 1..={last}" in str(ei.value)


def test_py_error_codes_match_protocol_md() -> None:
    doc = _rust("docs/PROTOCOL.md")
    rows = re.findall(r"^\| (\d+) \| ([A-Z_]+) \| ([^|]*) \|$", doc, re.M)
    assert {name: int(code) for code, name, _ in rows} == {c.name: c.value for c in ErrorCode}
    for code, name, connection in rows:
        assert connection.strip().startswith("closed") == ErrorCode[name].closes_connection, name


def test_py_client_frame_type_is_reported_not_parsed() -> None:
    dec = wire.FrameDecoder()
    dec.feed(wire.encode_flush())
    assert dec.next_frame() == wire.ClientFrame(wire.FrameType.FLUSH, b"")


def test_py_package_is_typed() -> None:
    import wshard_client

    assert (Path(wshard_client.__file__).parent / "py.typed").is_file()
