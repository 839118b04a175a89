"""Protocol version 2 in the Python client at the wire level, against a scripted FAKE
server on a socketpair (no daemon: the server's behaviour is the daemon's to test): the
HELLO negotiation, multi-stream episodes (owner, streams on the socket and with a ring),
events and their answers, the bytes of every new frame, what a version 1 connection
refuses client-side."""

from __future__ import annotations

import re
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pytest
from conftest import REPO

from wshard_client import (
    Channel,
    ClientOptions,
    EpisodeSpec,
    ErrorCode,
    EventKind,
    NeedsVersion,
    ProtocolError,
    Recorder,
    SchemaError,
    ServerError,
    UnixSocketTransport,
)
from wshard_client import _wire as wire
from wshard_client._shm import shm_supported
from wshard_client.errors import EpisodeFailed

Frame = Tuple[int, bytes]  # (frame type, payload)


def _frame(ty: int, payload: bytes) -> bytes:
    return struct.pack("<IB", len(payload) + 1, ty) + payload


def hello_ok(version: int) -> bytes:
    return _frame(0x81, struct.pack("<HH", version, 4) + b"fake" + struct.pack("<I", 1 << 20))


def accepted(what: int, up_to_seq: int = 0) -> bytes:
    return _frame(0x82, struct.pack("<BQ", what, up_to_seq))


def durable(up_to_seq: int) -> bytes:
    return _frame(0x83, struct.pack("<Q", up_to_seq))


def error(code: ErrorCode, message: str) -> bytes:
    raw = message.encode()
    return _frame(0x84, struct.pack("<HH", code, len(raw)) + raw)


def _str16(payload: bytes, at: int) -> Tuple[str, int]:
    (n,) = struct.unpack_from("<H", payload, at)
    return payload[at + 2 : at + 2 + n].decode(), at + 2 + n


@dataclass
class Fake:
    """A well-behaved version 2 server unless told otherwise."""

    hello_version: Optional[int] = None
    refuse_streams: Dict[str, ErrorCode] = field(default_factory=dict)
    refuse_label: Optional[str] = None
    reject_first_batch: bool = False
    still_recording: int = 0
    events: int = 0
    expected: int = 0
    held: Optional[bytes] = None

    def reply(self, ty: int, p: bytes) -> List[bytes]:
        if ty == 0x01:
            (v,) = struct.unpack_from("<H", p)
            return [hello_ok(self.hello_version if self.hello_version is not None else min(v, 2))]
        if ty == 0x02:
            self.expected = 0
            return [accepted(2)]
        if ty == 0x08:
            return [accepted(8)]
        if ty == 0x09:
            _, at = _str16(p, 0)
            stream, _ = _str16(p, at)
            if stream in self.refuse_streams:
                return [error(self.refuse_streams[stream], f"STREAM_OPEN: stream {stream!r}")]
            self.expected = 0
            return [accepted(9)]
        if ty == 0x0A:
            label, _ = _str16(p, 9)
            if label == self.refuse_label:
                (n,) = struct.unpack_from("<I", p, 9 + 2 + len(label))
                return [error(ErrorCode.LIMIT, f"EVENT: data is {n} bytes, over limits.max_event_bytes 4")]
            self.events += 1
            out = [accepted(10, self.events - 1)]
            if self.held is not None:
                out.insert(0, self.held)
                self.held = None
            return out
        if ty == 0x04:
            count, first = struct.unpack_from("<IQ", p)
            if self.reject_first_batch:
                self.reject_first_batch = False
                self.held = error(ErrorCode.SEQUENCE, f"TIMESTEP_BATCH seq {first}: refused by the fake")
                return []
            self.expected = first + count
            return []
        if ty == 0x06:
            return [durable(self.expected)]
        if ty == 0x07:
            return [accepted(7, self.expected)]
        if ty == 0x05:
            return [durable(self.expected), accepted(5, self.expected)]
        if ty == 0x0B:
            return [accepted(11, self.still_recording)]
        raise AssertionError(f"the fake does not expect frame type 0x{ty:02x}")


class Server:
    """Serves one client over a socketpair; records every frame (type, payload)."""

    def __init__(self, fake: Fake) -> None:
        self.fake = fake
        self.frames: List[Frame] = []
        self.client_sock, self._sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        buf = b""
        while True:
            data = self._sock.recv(1 << 16)
            if not data:
                self._sock.close()
                return
            buf += data
            while len(buf) >= 5:
                (n,) = struct.unpack_from("<I", buf)
                if len(buf) < 4 + n:
                    break
                ty, payload, buf = buf[4], buf[5 : 4 + n], buf[4 + n :]
                self.frames.append((ty, payload))
                out = b"".join(self.fake.reply(ty, payload))
                if out:
                    self._sock.sendall(out)

    def connect(self, **options: object) -> Recorder:
        opts = ClientOptions(batch_delay=None, timeout=10.0, **options)  # type: ignore[arg-type]
        return Recorder(UnixSocketTransport(self.client_sock, opts.timeout), "multirate-test/1", opts)

    def join(self) -> List[Frame]:
        self._thread.join(10)
        assert not self._thread.is_alive()
        return self.frames


def types(frames: List[Frame]) -> List[int]:
    return [ty for ty, _ in frames]


CHANNELS = [Channel("joints", "f32", (7,)), Channel("gripper", "f32", lane="action")]


def step(i: int) -> List[bytes]:
    return [struct.pack("<7f", *([float(i)] * 7)), struct.pack("<f", i % 2)]


def test_multirate_wire_hello_asks_for_the_version_chosen() -> None:
    server = Server(Fake())
    with server.connect() as rec:
        assert rec.protocol_version == 1
    assert server.join()[0] == (0x01, struct.pack("<HH", 1, 16) + b"multirate-test/1")
    server = Server(Fake())
    with server.connect(protocol_version=2) as rec:
        assert rec.protocol_version == rec.server_info.version == 2
    assert server.join()[0][1][:2] == struct.pack("<H", 2)
    server = Server(Fake(hello_version=3))
    with pytest.raises(ProtocolError, match=r"HELLO_OK protocol_version 3 \(this client asked for 2\)"):
        server.connect(protocol_version=2)
    server.join()
    with pytest.raises(ValueError, match="protocol_version 3"):
        Server(Fake()).connect(protocol_version=3)


def test_multirate_wire_version_1_connection_refuses_v2_calls_before_sending() -> None:
    server = Server(Fake(hello_version=1))
    with server.connect(protocol_version=2) as rec:
        assert rec.protocol_version == 1
        with pytest.raises(NeedsVersion, match="EPISODE_OPEN needs protocol version 2; this connection speaks version"):
            rec.open_multistream_episode("ep")
        with pytest.raises(NeedsVersion, match="STREAM_OPEN"):
            rec.join_stream("ep", "joints", CHANNELS, 100.0)
        with rec.episode("v1-ep", CHANNELS, tick_hz=100.0) as ep:
            with pytest.raises(NeedsVersion, match="EVENT") as ei:
                ep.send_event(0, "l", "x")
            assert (ei.value.frame, ei.value.needs, ei.value.speaks) == ("EVENT", 2, 1)
            ep.push(0, 0.0, True, step(0))
    assert types(server.join()) == [0x01, 0x02, 0x04, 0x05]


def test_multirate_wire_owner_opens_sends_events_and_closes() -> None:
    server = Server(Fake(still_recording=2))
    with server.connect(protocol_version=2) as rec:
        ep = rec.open_multistream_episode("ep-multi", "Franka", {"task": "pick"})
        assert ep.episode_id == "ep-multi"
        assert ep.send_event(5, "instruction", "pick up the red cube") == 0
        assert ep.send_event(6, "score", {"ok": True, "n": [1, 2]}) == 1
        assert ep.send_event(7, "button", b"\x01\x00\xff") == 2
        assert ep.send_event(8, "raw", '{"a": 1}', kind="json") == 3
        assert ep.close("aborted") == 2
        assert ep.close() == 2  # the first answer again
    frames = server.join()
    meta = b'{"task":"pick"}'
    assert frames[1] == (0x08, b"\x08\x00ep-multi\x06\x00Franka" + struct.pack("<I", len(meta)) + meta)

    def event(t: int, kind: int, label: bytes, data: bytes) -> Frame:
        return (0x0A, struct.pack("<qBH", t, kind, len(label)) + label + struct.pack("<I", len(data)) + data)

    assert frames[2:6] == [
        event(5, 0, b"instruction", b"pick up the red cube"),
        event(6, 1, b"score", b'{"ok":true,"n":[1,2]}'),
        event(7, 2, b"button", b"\x01\x00\xff"),
        event(8, 1, b"raw", b'{"a": 1}'),
    ]
    assert frames[6] == (0x0B, b"\x01")


def test_multirate_wire_join_stream_records_like_an_episode() -> None:
    server = Server(Fake())
    with server.connect(protocol_version=2) as rec:
        w = rec.join_stream("ep-multi", "joints", CHANNELS, 1000.0, timebase="timestamps_ns", metadata={"hz": 1000})
        for i in range(5):
            assert w.push(i * 1_000_000, 0.0, False, step(i)) == i
        assert w.send_event(2_500_000, "note", "half way") == 0
        assert w.flush() == 5
        summary = w.close()
        assert (summary.timesteps, summary.durable_up_to) == (5, 5)
        # The connection may join again: seqs and DURABLE start from 0 for the new stream.
        with rec.join_stream("ep-multi", "imu", [Channel("acc", "f32", (10,))], 200.0) as w2:
            assert w2.durable_seq == 0
            assert w2.push(1, 0.0, True, [bytes(40)]) == 0
    frames = server.join()
    # An event does not send the pending steps: it has its own t_ns and ack.
    assert types(frames) == [0x01, 0x09, 0x0A, 0x04, 0x06, 0x05, 0x09, 0x04, 0x05]
    # STREAM_OPEN is OPEN with the stream name in env_id's place.
    spec = EpisodeSpec("joints", CHANNELS, "", 1000.0, "timestamps_ns", metadata={"hz": 1000})
    stream_open = wire.encode_stream_open("ep-multi", spec)
    assert frames[1] == (0x09, stream_open[5:])
    as_open = EpisodeSpec("ep-multi", CHANNELS, "joints", 1000.0, "timestamps_ns", metadata={"hz": 1000})
    assert stream_open[5:] == wire.encode_open(as_open)[5:]


def test_multirate_wire_owner_records_a_stream_of_its_own_episode() -> None:
    server = Server(Fake())
    with server.connect(protocol_version=2) as rec:
        with rec.open_multistream_episode("ep-own") as ep:
            with ep.join_stream("joints", CHANNELS, 100.0) as w:
                w.push(0, 0.0, False, step(0))
            assert ep.send_event(1, "done", "") == 0
    assert types(server.join()) == [0x01, 0x08, 0x09, 0x04, 0x05, 0x0A, 0x0B]


def test_multirate_wire_event_refusal_leaves_the_stream_recording() -> None:
    server = Server(Fake(refuse_label="huge"))
    with server.connect(protocol_version=2) as rec:
        with rec.join_stream("ep", "joints", CHANNELS, 100.0) as w:
            w.push(0, 0.0, False, step(0))
            with pytest.raises(ServerError) as ei:
                w.send_event(1, "huge", bytes(10))
            assert ei.value.code == ErrorCode.LIMIT
            assert ei.value.message.startswith("EVENT: data is 10 bytes")
            # Reported once; the stream and further events carry on.
            assert not w.failed
            assert w.send_event(2, "ok", "fine") == 0
            w.push(3, 0.0, True, step(1))
        assert w.close().timesteps == 2
    server.join()


def test_multirate_wire_timestep_refusal_before_an_event_fails_the_stream_not_the_event() -> None:
    # The server refuses a batch sent before the event, and answers the event in the same
    # write: the refusal is the stream's (reported once, then EpisodeFailed), the
    # acknowledgement the event's.
    server = Server(Fake(reject_first_batch=True))
    with server.connect(protocol_version=2) as rec:
        w = rec.join_stream("ep", "joints", CHANNELS, 100.0)
        w.push_batch([(0, 0.0, False, step(0))])
        try:
            assert w.send_event(1, "note", "x") == 0
        except ServerError as e:  # the refusal was read before the event's answer
            assert e.code == ErrorCode.SEQUENCE
        else:  # both were read together: the refusal comes with the next call
            with pytest.raises(ServerError) as ei:
                w.push(1, 0.0, False, step(1))
            assert ei.value.code == ErrorCode.SEQUENCE
        with pytest.raises(EpisodeFailed):
            w.push(2, 0.0, False, step(2))
        w.close("aborted")
    server.join()


def test_multirate_wire_join_refusals_and_client_side_checks() -> None:
    refused = {"ghost": ErrorCode.UNKNOWN_EPISODE, "late": ErrorCode.EPISODE_CLOSED, "twice": ErrorCode.STREAM_EXISTS}
    server = Server(Fake(refuse_streams=refused))
    with server.connect(protocol_version=2) as rec:
        for name, code in refused.items():
            with pytest.raises(ServerError) as ei:
                rec.join_stream("ep", name, CHANNELS, 100.0)
            assert ei.value.code == code
            assert rec.episode_open is None
        # Refused client-side, nothing sent.
        with pytest.raises(SchemaError, match=r"STREAM_OPEN: stream name 'cam/rgb' contains '/'") as se:
            rec.join_stream("ep", "cam/rgb", CHANNELS, 100.0)
        assert se.value.code == ErrorCode.BAD_EPISODE_ID
        with pytest.raises(SchemaError, match="stream name 'x{65}' is 65 bytes"):
            rec.join_stream("ep", "x" * 65, CHANNELS, 100.0)
        with pytest.raises(SchemaError, match=r"STREAM_OPEN: stream 'empty': channel_count 0 must be 1..=65535"):
            rec.join_stream("ep", "empty", [], 100.0)
        with pytest.raises(SchemaError, match="STREAM_OPEN: episode_id '.x' starts with '.'"):
            rec.join_stream(".x", "joints", CHANNELS, 100.0)
        with pytest.raises(SchemaError, match="EPISODE_OPEN: metadata_json is not a JSON object"):
            rec.open_multistream_episode("ep", metadata="[]")
        with rec.join_stream("ep", "joints", CHANNELS, 100.0) as w:
            bad = [
                ("{nope", "json", "of kind json is not valid JSON"),
                ("NaN", "json", "of kind json is not valid JSON"),
                ({"x": float("nan")}, None, "of kind json is not JSON-serializable"),
                (b"\xff", "text", "of kind text is not valid UTF-8"),
                ("str", "binary", "of kind binary must be bytes-like"),
                (object(), None, "of kind json is not JSON-serializable"),
            ]
            for data, kind, what in bad:
                with pytest.raises(SchemaError, match=f"EVENT: field data {what}") as se:
                    w.send_event(0, "e", data, kind)
                assert se.value.code == ErrorCode.MALFORMED_FRAME
            with pytest.raises(ValueError, match="unknown event kind"):
                w.send_event(0, "e", "x", "yaml")
    frames = server.join()
    assert types(frames).count(0x09) == 4, "three refused by the server, one joined"
    assert 0x0A not in types(frames) and 0x08 not in types(frames)


def test_multirate_wire_owner_closed_aborted_on_exception_and_by_the_recorder() -> None:
    server = Server(Fake())
    with server.connect(protocol_version=2) as rec:
        with pytest.raises(RuntimeError):
            with rec.open_multistream_episode("ep-1"):
                raise RuntimeError("boom")
        rec.open_multistream_episode("ep-2")  # left open: the recorder's close aborts it
    frames = server.join()
    assert [f for f in frames if f[0] == 0x0B] == [(0x0B, b"\x01"), (0x0B, b"\x01")]


@pytest.mark.skipif(shm_supported() is not None, reason=str(shm_supported()))
def test_multirate_wire_join_stream_over_shm_attaches_a_ring() -> None:
    server = Server(Fake())
    with server.connect(protocol_version=2) as rec:
        w = rec.join_stream("ep", "cams", [Channel("rgb", "u8", (48, 64, 3))], 30.0, transport="shm", slots=4)
        assert w.transport == "shm" and w.shm is not None and w.shm.slots == 4
        assert w.close().timesteps == 0
    assert types(server.join()) == [0x01, 0x09, 0x07, 0x05]


def _rust(path: str) -> str:
    p = REPO / path
    if not p.is_file():
        pytest.skip(f"{p} not found (tests run outside the wshard-recorder repository)")
    return p.read_text()


def test_multirate_wire_codes_match_rust() -> None:
    frame_rs = _rust("ingest-adapters/proto/src/frame.rs")
    expected = re.search(r'pub const EXPECTED: &\'static str = "(.*?)";', frame_rs, re.S)
    assert expected
    assert re.sub(r"\\\n\s*", "", expected.group(1)) == wire._ACCEPTED_EXPECTED
    assert {w.name: w.value for w in wire.AcceptedWhat} == {
        "OPEN": 2,
        "CLOSE": 5,
        "SHM_ATTACH": 7,
        "EPISODE_OPEN": 8,
        "STREAM_OPEN": 9,
        "EVENT": 10,
        "EPISODE_CLOSE": 11,
    }
    event_rs = _rust("wshard/src/episode_dir/events.rs")  # the wire's EventKind is the files' one
    rust_kinds = dict(re.findall(r"Self::(\w+) => (\d),", event_rs))
    assert {k.name.title(): k.value for k in EventKind} == {k: int(v) for k, v in rust_kinds.items()}
    assert "pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 * 1024;" in _rust("ingest-adapters/proto/src/event.rs")
    version_rs = _rust("ingest-adapters/proto/src/version.rs")
    assert f"pub const NEWEST_PROTOCOL_VERSION: u16 = {wire.NEWEST_PROTOCOL_VERSION};" in version_rs
