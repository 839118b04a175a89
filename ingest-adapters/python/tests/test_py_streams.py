"""Streams of a multi-stream episode from the Python client against a real ``wshardd``:
one connection records one stream at a time (a second join is refused client-side,
naming the stream and saying what to do), a refused join aborts nothing, and the json
data of events is checked as the server checks it and stored as sent."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import Daemon

from wshard_client import Channel, ErrorCode, JoinRefused, Recorder, SchemaError, ServerError
from wshard_client._events import MAX_EVENT_JSON_DEPTH, event_data

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
STEP = [struct.pack("<3f", 1.0, 2.0, 3.0)]


def _index(d: Daemon, episode: str) -> Dict[str, Any]:
    return json.loads((d.data_dir / episode / f"{episode}_index.json").read_text())


def _event_lines(d: Daemon, episode: str) -> List[str]:
    return (d.data_dir / episode / f"{episode}_events.jsonl").read_text().splitlines()


def _statuses(d: Daemon, episode: str) -> Dict[str, str]:
    ix = _index(d, episode)
    return {"": ix["status"], **{s["name"]: s["status"] for s in ix["streams"]}}


def test_py_second_stream_on_one_connection_is_refused_naming_the_stream(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as rec:
        ep = rec.open_multistream_episode("two")
        joints = ep.join_stream("joints", CHANNELS, 100.0)
        joints.push(0, 0.0, False, STEP)
        with pytest.raises(JoinRefused) as ei:
            ep.join_stream("cam", CHANNELS, 30.0)
        msg = str(ei.value)
        want = "STREAM_OPEN 'cam': stream 'joints' of episode 'two' is still recording on this connection"
        assert msg.startswith(want), msg
        assert "a connection records one stream at a time" in msg, msg
        assert "join 'cam' from a connection of its own" in msg, msg
        # Nothing was sent: the stream and the episode carry on; 'cam' joins from its own
        # connection.
        joints.push(1, 0.0, False, STEP)
        with Recorder.connect(daemon.socket, "py-cam", protocol_version=2) as cam_rec:
            with cam_rec.join_stream("two", "cam", CHANNELS, 30.0) as cam:
                cam.push(0, 0.0, True, STEP)
        assert joints.close().timesteps == 2
        assert ep.close() == 0
    assert _statuses(daemon, "two") == {"": "complete", "joints": "complete", "cam": "complete"}


def test_py_refused_join_aborts_nothing(daemon: Daemon) -> None:
    # The refusal leaves every `with` block: the episode and the stream recording end as on
    # a normal exit, `complete`, not `aborted`.
    with pytest.raises(JoinRefused):
        with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as rec:
            with rec.open_multistream_episode("kept") as ep:
                with ep.join_stream("joints", CHANNELS, 100.0) as joints:
                    joints.push(0, 0.0, False, STEP)
                    ep.join_stream("cam", CHANNELS, 30.0)
    assert _statuses(daemon, "kept") == {"": "complete", "joints": "complete"}
    # A join the server refuses (the name is taken) aborts nothing either; it is still a
    # ServerError with its code.
    with pytest.raises(ServerError) as ei:
        with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as rec:
            with rec.open_multistream_episode("kept-2") as ep:
                with Recorder.connect(daemon.socket, "py-a", protocol_version=2) as a:
                    with a.join_stream("kept-2", "joints", CHANNELS, 100.0) as joints:
                        joints.push(0, 0.0, False, STEP)
                        ep.join_stream("joints", CHANNELS, 100.0)
    assert isinstance(ei.value, JoinRefused)
    assert ei.value.code == ErrorCode.STREAM_EXISTS
    assert _statuses(daemon, "kept-2") == {"": "complete", "joints": "complete"}
    # Any other exception still aborts.
    with pytest.raises(RuntimeError):
        with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as rec:
            with rec.open_multistream_episode("boom") as ep:
                raise RuntimeError("boom")
    assert _statuses(daemon, "boom") == {"": "aborted"}


def test_py_event_json_stored_as_sent_and_limits_checked_client_side(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as rec:
        with rec.open_multistream_episode("big") as ep:
            assert ep.send_event(1, "n", {"big": 18446744073709551617}) == 0
            assert ep.send_event(2, "n", "12345678901234567890123", kind="json") == 1
            assert ep.send_event(3, "n", -9223372036854775809) == 2
            assert ep.send_event(4, "n", '{ "b" : [1.50, 2] }', kind="json") == 3
            deep = "[" * MAX_EVENT_JSON_DEPTH + "]" * MAX_EVENT_JSON_DEPTH
            assert ep.send_event(5, "n", deep, kind="json") == 4
            # Refused before sending, with the server's message and code.
            too_deep = "[" * 200 + "]" * 200
            with pytest.raises(SchemaError) as ei:
                ep.send_event(6, "n", too_deep, kind="json")
            assert ei.value.code == ErrorCode.LIMIT
            assert str(ei.value) == (
                "EVENT: field data of kind json nests arrays and objects 200 deep (past the limit at "
                f"byte {MAX_EVENT_JSON_DEPTH}); an event's JSON may nest at most {MAX_EVENT_JSON_DEPTH} "
                "deep (MAX_EVENT_JSON_DEPTH)"
            )
            for data in ("1e400", "[" + "9" * 400 + "]"):
                with pytest.raises(SchemaError) as ei:
                    ep.send_event(6, "n", data, kind="json")
                assert ei.value.code == ErrorCode.LIMIT
                assert "out of the range of a 64-bit float (magnitude at most 1.7976931348623157e308)" in str(
                    ei.value
                )
            with pytest.raises(SchemaError) as ei:
                ep.send_event(6, "n", 10**400)
            assert ei.value.code == ErrorCode.LIMIT
            assert ep.send_event(6, "n", "ok") == 5
    data = [json.loads(line)["data"] for line in _event_lines(daemon, "big")]
    # Python's json reads the integers exactly as they were sent.
    assert data[:4] == [{"big": 18446744073709551617}, 12345678901234567890123, -9223372036854775809, {"b": [1.5, 2]}]
    assert '"data":{"b":[1.50,2]}' in _event_lines(daemon, "big")[3]


def test_py_event_json_checks_match_the_rust_client() -> None:
    # The same rules as wshard_ingest_proto::event_json (the Rust client and the server); its
    # depth limit is defined in payload_limits.rs.
    assert event_data('{"a": 1}', "json")[1] == b'{"a": 1}'
    with pytest.raises(SchemaError, match="the number 1e400 at byte 5"):
        event_data('{"a":1e400}', "json")
    with pytest.raises(SchemaError, match="is not valid JSON"):
        event_data("[1,", "json")
    root = Path(__file__).resolve().parents[3]
    rust = (root / "ingest-adapters/proto/src/payload_limits.rs").read_text()
    assert f"pub const MAX_EVENT_JSON_DEPTH: usize = {MAX_EVENT_JSON_DEPTH};" in rust
