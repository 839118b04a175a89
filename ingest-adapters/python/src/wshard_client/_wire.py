"""Frame encoding and decoding, protocol versions 1 and 2 (docs/PROTOCOL.md):
little-endian ``struct`` packing of every client frame, and an incremental decoder of
server frames.

Layout of every frame: ``body_len u32 | frame_type u8 | payload`` with
``body_len = 1 + len(payload)``.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

from ._episode_spec import EpisodeSpec
from ._transport import Buffer
from .errors import ErrorCode, ProtocolError, SchemaError

__all__ = [
    "PROTOCOL_VERSION",
    "NEWEST_PROTOCOL_VERSION",
    "FrameType",
    "Outcome",
    "AcceptedWhat",
    "HelloOk",
    "Accepted",
    "Durable",
    "ErrorFrame",
    "ClientFrame",
    "Triggered",
    "ServerFrame",
    "FrameDecoder",
    "encode_hello",
    "encode_open",
    "encode_close",
    "encode_flush",
    "encode_shm_attach",
    "encode_episode_open",
    "encode_stream_open",
    "encode_event",
    "encode_trigger",
    "encode_episode_close",
    "encode_timestep",
    "encode_timestep_batch",
    "record_header",
    "batch_header",
]

#: Protocol version 1: what ``HELLO`` sends unless version 2 is asked for.
PROTOCOL_VERSION = 1
#: The newest protocol version this package speaks (multi-stream episodes, events).
NEWEST_PROTOCOL_VERSION = 2
#: The server's default ``limits.max_frame_bytes`` (64 MiB).
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: Bytes of the ``body_len`` field.
LEN_BYTES = 4
#: Bytes of a timestep record before its payload: seq 8 + t_ns 8 + reward 4 + done 1.
RECORD_HEADER_BYTES = 21
#: Bytes of ``body_len | frame_type | count`` before the first record of a batch.
BATCH_HEADER_BYTES = 9
#: Largest server frame the client accepts (server frames are small; the largest is an
#: ``ERROR`` with a 64 KiB message). Same as the Rust client.
MAX_SERVER_FRAME_BYTES = 1 << 20

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<IB")
#: ``seq u64 | t_ns i64 | reward f32 | done u8`` (21 bytes: '<' means no padding).
RECORD = struct.Struct("<QqfB")
#: ``body_len u32 | 0x04 | count u32``.
BATCH_HEADER = struct.Struct("<IBI")
_OPEN_TIMEBASE = struct.Struct("<BdBH")
_CHANNEL_HEAD = struct.Struct("<BBB")
_CHANNEL_CODEC = struct.Struct("<Bb")
_EVENT_HEAD = struct.Struct("<qB")
_I64 = struct.Struct("<q")
#: ``pre_ns i64 | post_ns i64`` of ``TRIGGER``.
_TRIGGER_WINDOW = struct.Struct("<qq")


class FrameType(enum.IntEnum):
    """The frame types of protocol versions 1 and 2; codes below 0x80 go client -> server."""

    HELLO = 0x01
    OPEN = 0x02
    TIMESTEP = 0x03
    TIMESTEP_BATCH = 0x04
    CLOSE = 0x05
    FLUSH = 0x06
    #: Shared-memory transport attach (docs/PROTOCOL.md); travels with 3 fds.
    SHM_ATTACH = 0x07
    #: Version 2: create a multi-stream episode.
    EPISODE_OPEN = 0x08
    #: Version 2: join an open multi-stream episode with one stream.
    STREAM_OPEN = 0x09
    #: Version 2: one event (text, JSON or binary) in the connection's episode.
    EVENT = 0x0A
    #: Version 2: the owner closes its multi-stream episode.
    EPISODE_CLOSE = 0x0B
    #: Version 2: the producer counters of the stream the connection records (no answer).
    COUNTERS = 0x0C
    #: Version 2: persist the flight recorder's window (answered by ``TRIGGERED``).
    TRIGGER = 0x0D
    HELLO_OK = 0x81
    ACCEPTED = 0x82
    DURABLE = 0x83
    ERROR = 0x84
    #: Version 2: the answer to ``TRIGGER``, naming the window episode.
    TRIGGERED = 0x85

    @property
    def is_client_to_server(self) -> bool:
        """``True`` for frames a client sends."""
        return self.value < 0x80


class Outcome(enum.IntEnum):
    """``CLOSE.outcome`` and ``EPISODE_CLOSE.outcome``."""

    COMPLETED = 0
    #: Data kept, the manifest says ``aborted``.
    ABORTED = 1

    @classmethod
    def parse(cls, value: Union["Outcome", str, int]) -> "Outcome":
        """From an :class:`Outcome`, a wire code or ``"completed"`` / ``"aborted"``."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"unknown outcome {value!r} (completed or aborted)") from None
        return cls(value)


class AcceptedWhat(enum.IntEnum):
    """``ACCEPTED.what``: the type code of the frame acknowledged."""

    OPEN = 0x02
    CLOSE = 0x05
    SHM_ATTACH = 0x07
    EPISODE_OPEN = 0x08
    STREAM_OPEN = 0x09
    #: ``up_to_seq`` = the event's seq in its episode.
    EVENT = 0x0A
    #: ``up_to_seq`` = the streams still recording (0: the episode is finalized).
    EPISODE_CLOSE = 0x0B


#: What a decoder expects of ``ACCEPTED.what`` (as ``AcceptedWhat::EXPECTED`` in Rust).
_ACCEPTED_EXPECTED = (
    "2 (OPEN), 5 (CLOSE), 7 (SHM_ATTACH), 8 (EPISODE_OPEN), 9 (STREAM_OPEN), 10 (EVENT) or 11 (EPISODE_CLOSE)"
)


@dataclass(frozen=True)
class HelloOk:
    """``HELLO_OK``: what the server announced."""

    version: int
    server_name: str
    max_frame_bytes: int


@dataclass(frozen=True)
class Accepted:
    """``ACCEPTED``: OPEN (``up_to_seq`` 0), CLOSE (``up_to_seq`` = timesteps recorded) or
    SHM_ATTACH (``up_to_seq`` = the next expected seq)."""

    what: AcceptedWhat
    up_to_seq: int


@dataclass(frozen=True)
class Durable:
    """``DURABLE``: every timestep with ``seq < up_to_seq`` is on stable storage."""

    up_to_seq: int


@dataclass(frozen=True)
class ErrorFrame:
    """``ERROR``: code and message."""

    code: ErrorCode
    message: str


@dataclass(frozen=True)
class ClientFrame:
    """A client-to-server frame type seen on the receive side (a client drops the
    connection on it); the payload is not parsed."""

    frame_type: FrameType
    payload: bytes


@dataclass(frozen=True)
class Triggered:
    """``TRIGGERED`` (version 2): the window episode of a ``TRIGGER``."""

    episode: str
    merged: bool
    window_start_ns: int
    window_end_ns: int


ServerFrame = Union[HelloOk, Accepted, Durable, ErrorFrame, ClientFrame, Triggered]


# ---------------------------------------------------------------------------- encoding


def _str(out: bytearray, text: str, width: "struct.Struct", field: str) -> None:
    data = text.encode("utf-8")
    limit = (1 << (8 * width.size)) - 1
    if len(data) > limit:
        raise SchemaError(f"field {field} is {len(data)} bytes, the wire allows at most {limit}")
    out += width.pack(len(data))
    out += data


def _finish(out: bytearray) -> bytes:
    _U32.pack_into(out, 0, len(out) - LEN_BYTES)
    return bytes(out)


def _start(frame_type: FrameType) -> bytearray:
    return bytearray(_HEADER.pack(0, frame_type))


def encode_hello(client_name: str, version: int = PROTOCOL_VERSION) -> bytes:
    """``HELLO``: ``protocol_version u16 | client_name str16``."""
    out = _start(FrameType.HELLO)
    out += _U16.pack(version)
    _str(out, client_name, _U16, "client_name")
    return _finish(out)


def encode_open(spec: EpisodeSpec) -> bytes:
    """``OPEN`` for ``spec`` (channels in schema order). The spec is not validated here."""
    out = _start(FrameType.OPEN)
    _str(out, spec.episode_id, _U16, "episode_id")
    _str(out, spec.env_id, _U16, "env_id")
    _schema_fields(out, spec)
    return _finish(out)


def encode_stream_open(episode_id: str, spec: EpisodeSpec) -> bytes:
    """``STREAM_OPEN`` (version 2): join episode ``episode_id`` with the stream
    ``spec.episode_id`` (the stream name; ``spec.env_id`` is not on the wire). The fields
    after the stream name are ``OPEN``'s after ``env_id``. Not validated here."""
    out = _start(FrameType.STREAM_OPEN)
    _str(out, episode_id, _U16, "episode_id")
    _str(out, spec.episode_id, _U16, "stream")
    _schema_fields(out, spec)
    return _finish(out)


def _schema_fields(out: bytearray, spec: EpisodeSpec) -> None:
    """The schema fields ``OPEN`` and ``STREAM_OPEN`` share, ``timebase_kind`` to
    ``metadata_json``."""
    if len(spec.channels) > 0xFFFF:
        raise SchemaError(f"channel_count {len(spec.channels)} exceeds 65535")
    out += _OPEN_TIMEBASE.pack(spec.timebase, spec.tick_hz, spec.durability, len(spec.channels))
    for i, c in enumerate(spec.channels):
        _str(out, c.name, _U16, f"channels[{i}].name")
        if len(c.shape) > 0xFF:
            raise SchemaError(f"channels[{i}].ndim {len(c.shape)} exceeds 255")
        out += _CHANNEL_HEAD.pack(c.lane, c.dtype, len(c.shape))
        out += struct.pack(f"<{len(c.shape)}I", *c.shape)
        level = c.codec_level  # 0 unless zstd (Channel normalizes it)
        if not -128 <= level <= 127:
            raise SchemaError(f"channels[{i}].codec_level {level} does not fit an i8")
        out += _CHANNEL_CODEC.pack(c.codec, level)
        _str(out, c.modality or "", _U16, f"channels[{i}].modality")
    _str(out, spec.metadata_json, _U32, "metadata_json")


def encode_episode_open(episode_id: str, env_id: str = "", metadata_json: str = "") -> bytes:
    """``EPISODE_OPEN`` (version 2): ``episode_id str16 | env_id str16 | metadata_json
    str32``."""
    out = _start(FrameType.EPISODE_OPEN)
    _str(out, episode_id, _U16, "episode_id")
    _str(out, env_id, _U16, "env_id")
    _str(out, metadata_json, _U32, "metadata_json")
    return _finish(out)


def encode_event(t_ns: int, kind: int, label: str, data: Buffer) -> bytes:
    """``EVENT`` (version 2): ``t_ns i64 | kind u8 | label str16 | data bytes32``; no
    check of ``data`` against ``kind`` here."""
    out = _start(FrameType.EVENT)
    out += _EVENT_HEAD.pack(t_ns, kind)
    _str(out, label, _U16, "label")
    out += _U32.pack(len(data))
    out += data
    return _finish(out)


def encode_trigger(
    pre_ns: int, post_ns: int, reason: str, streams: Sequence[str], at_ns: Optional[int] = None
) -> bytes:
    """``TRIGGER`` (version 2): ``pre_ns i64 | post_ns i64 | reason str16 | count u16 |
    count x stream str16 | has_at u8 | at_ns i64 (when has_at = 1)``."""
    out = _start(FrameType.TRIGGER)
    out += _TRIGGER_WINDOW.pack(pre_ns, post_ns)
    _str(out, reason, _U16, "reason")
    out += _U16.pack(len(streams))
    for i, name in enumerate(streams):
        _str(out, name, _U16, f"streams[{i}]")
    if at_ns is None:
        out += _U8.pack(0)
    else:
        out += _U8.pack(1) + _I64.pack(at_ns)
    return _finish(out)


def encode_episode_close(outcome: Union[Outcome, str, int]) -> bytes:
    """``EPISODE_CLOSE`` (version 2): ``outcome u8``."""
    return _HEADER.pack(2, FrameType.EPISODE_CLOSE) + bytes([Outcome.parse(outcome)])


def encode_close(outcome: Union[Outcome, str, int]) -> bytes:
    """``CLOSE``: ``outcome u8``."""
    return _HEADER.pack(2, FrameType.CLOSE) + bytes([Outcome.parse(outcome)])


def encode_flush() -> bytes:
    """``FLUSH``: no payload."""
    return _HEADER.pack(1, FrameType.FLUSH)


def encode_shm_attach(slot_size: int, slot_count: int, policy: Optional[int] = None) -> bytes:
    """``SHM_ATTACH``: ``slot_size u32 | slot_count u32`` and, when ``policy`` is given,
    the optional trailing ``policy u8`` (0 block, 1 drop_newest, 2 drop_oldest; without
    it the server takes ``block``). The 3 fds travel beside it (``SCM_RIGHTS``)."""
    out = _start(FrameType.SHM_ATTACH)
    out += _U32.pack(slot_size)
    out += _U32.pack(slot_count)
    if policy is not None:
        out += _U8.pack(policy)
    return _finish(out)


def record_header(seq: int, t_ns: int, reward: float, done: bool) -> bytes:
    """The 21-byte record header ``seq | t_ns | reward | done``."""
    return RECORD.pack(seq, t_ns, reward, 1 if done else 0)


def batch_header(body_records_bytes: int, count: int) -> bytes:
    """The 9-byte ``TIMESTEP_BATCH`` header for ``count`` records of
    ``body_records_bytes`` bytes in all."""
    return BATCH_HEADER.pack(body_records_bytes + 5, FrameType.TIMESTEP_BATCH, count)


def encode_timestep(seq: int, t_ns: int, reward: float, done: bool, payload: bytes) -> bytes:
    """A single ``TIMESTEP`` frame (all channels' payloads back to back in ``payload``).
    The client itself always sends ``TIMESTEP_BATCH``; this is for tools and tests."""
    body = record_header(seq, t_ns, reward, done) + bytes(payload)
    return _HEADER.pack(len(body) + 1, FrameType.TIMESTEP) + body


def encode_timestep_batch(records: List[bytes]) -> bytes:
    """A ``TIMESTEP_BATCH`` frame from whole records (header + payload each), for tools
    and tests; no checks (seqs and sizes are the caller's business)."""
    if not records:
        raise ValueError("a TIMESTEP_BATCH needs at least one record")
    body = b"".join(records)
    return batch_header(len(body), len(records)) + body


# ---------------------------------------------------------------------------- decoding


class _Cursor:
    """Reads the fields of one payload; every read names its field for the message."""

    def __init__(self, payload: bytes, frame: str) -> None:
        self.buf = payload
        self.pos = 0
        self.frame = frame

    def take(self, n: int, field: str) -> bytes:
        have = len(self.buf) - self.pos
        if n > have:
            raise ProtocolError(f"{self.frame}: field {field} truncated: needs {n} bytes, {have} left")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, st: "struct.Struct", field: str) -> int:
        return int(st.unpack(self.take(st.size, field))[0])

    def string16(self, field: str) -> str:
        raw = self.take(self.unpack(_U16, field), field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"{self.frame}: field {field} is not valid UTF-8") from None

    def finish(self) -> None:
        extra = len(self.buf) - self.pos
        if extra:
            raise ProtocolError(f"{self.frame}: {extra} trailing bytes after the last field")


def parse_server_frame(frame_type: int, payload: bytes) -> ServerFrame:
    """Parse the payload of one frame (the body without its type byte).

    Raises:
        ProtocolError: unknown type, truncated or trailing bytes, bad UTF-8, a value the
            protocol does not define.
    """
    try:
        ty = FrameType(frame_type)
    except ValueError:
        raise ProtocolError(f"unknown frame type 0x{frame_type:02x}") from None
    if ty.is_client_to_server:
        return ClientFrame(ty, bytes(payload))
    r = _Cursor(payload, ty.name)
    frame: ServerFrame
    if ty == FrameType.HELLO_OK:
        frame = HelloOk(
            r.unpack(_U16, "protocol_version"), r.string16("server_name"), r.unpack(_U32, "max_frame_bytes")
        )
    elif ty == FrameType.ACCEPTED:
        what = r.unpack(_U8, "what")
        if what not in _ACCEPTED_WHAT:
            raise ProtocolError(f"ACCEPTED: field what has value {what}, expected {_ACCEPTED_EXPECTED}")
        frame = Accepted(AcceptedWhat(what), r.unpack(_U64, "up_to_seq"))
    elif ty == FrameType.DURABLE:
        frame = Durable(r.unpack(_U64, "up_to_seq"))
    elif ty == FrameType.TRIGGERED:
        episode = r.string16("episode")
        merged = r.unpack(_U8, "merged")
        if merged > 1:
            raise ProtocolError(f"TRIGGERED: field merged has value {merged}, expected 0 or 1")
        frame = Triggered(episode, bool(merged), r.unpack(_I64, "window_start_ns"), r.unpack(_I64, "window_end_ns"))
    else:
        code = r.unpack(_U16, "code")
        try:
            ecode = ErrorCode(code)
        except ValueError:
            last = max(ErrorCode)
            expected = f"expected an error code 1..={last.value}"
            raise ProtocolError(f"ERROR: field code has value {code}, {expected}") from None
        frame = ErrorFrame(ecode, r.string16("message"))
    r.finish()
    return frame


class FrameDecoder:
    """Incremental decoder: :meth:`feed` bytes as they arrive, then call
    :meth:`next_frame` until it returns ``None``. The size limit and the type are checked
    from the header, before the body is buffered."""

    def __init__(self, max_frame_bytes: int = MAX_SERVER_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame_bytes

    def feed(self, data: bytes) -> None:
        """Append received bytes."""
        self._buf += data

    def next_frame(self) -> Optional[ServerFrame]:
        """The next whole frame, or ``None`` when more bytes are needed.

        Raises:
            ProtocolError: a zero ``body_len``, a frame over the limit, an unknown type or a
                payload that does not parse; the stream cannot be trusted afterwards.
        """
        buf = self._buf
        if len(buf) < LEN_BYTES:
            return None
        (body_len,) = _U32.unpack_from(buf, 0)
        if body_len == 0:
            raise ProtocolError("frame body_len is 0 (must be >= 1)")
        if body_len > self._max:
            raise ProtocolError(f"frame body_len {body_len} exceeds the client's limit {self._max}")
        if len(buf) > LEN_BYTES and buf[LEN_BYTES] not in _KNOWN_TYPES:
            raise ProtocolError(f"unknown frame type 0x{buf[LEN_BYTES]:02x}")
        total = LEN_BYTES + body_len
        if len(buf) < total:
            return None
        frame_type = buf[LEN_BYTES]
        payload = bytes(buf[LEN_BYTES + 1 : total])
        del buf[:total]
        return parse_server_frame(frame_type, payload)


_KNOWN_TYPES = frozenset(int(t) for t in FrameType)
_ACCEPTED_WHAT = frozenset(int(w) for w in AcceptedWhat)
