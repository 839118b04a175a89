"""``EpisodeWriter.send_counters`` (protocol version 2, ``COUNTERS``) against a real
``wshardd``: the counters show in the daemon's ``status`` and metrics per stream, bad
counters are refused client-side naming the counter (nothing sent, the stream carries on),
a version 1 connection refuses the call, and the frame's bytes are the documented ones."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import Daemon

from wshard_client import Channel, ErrorCode, NeedsVersion, Recorder, SchemaError
from wshard_client._counters import counters_items, encode_counters

CHANNELS = [Channel("joints", "f32", (3,), codec="none")]
STEP = [struct.pack("<3f", 1.0, 2.0, 3.0)]


def _control(d: Daemon, verb: str) -> bytes:
    path = Path(d.config).parent / "wshardd-control.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10.0)
        s.connect(str(path))
        s.sendall(json.dumps({"verb": verb}).encode() + b"\n")
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks)


def _open_counters(d: Daemon) -> Dict[str, Any]:
    doc = json.loads(_control(d, "status"))
    assert doc["ok"], doc
    return {e["episode"]: e["producer_counters"] for e in doc["result"]["episodes"]}


def test_py_counters_frame_bytes() -> None:
    frame = encode_counters(counters_items({"rx": 258, "a_1": 2**64 - 1}))
    # The byte-by-byte example of docs/PROTOCOL.md, "COUNTERS".
    assert frame == bytes.fromhex("1c0000000c0200" + "02007278" + "0201000000000000" + "0300615f31" + "ff" * 8)
    assert encode_counters(counters_items({})) == b"\x03\x00\x00\x00\x0c\x00\x00"


def test_py_counters_status_and_metrics(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "py-owner", protocol_version=2) as owner:
        ep = owner.open_multistream_episode("py-run")
        with Recorder.connect(daemon.socket, "py-cam", protocol_version=2) as rec:
            w = rec.join_stream("py-run", "cam", CHANNELS, 30.0)
            for i in range(4):
                w.push(i * 1000, 0.0, False, STEP)
            w.send_counters({"received": 7, "dropped": 1})
            w.send_counters({"received": 9, "late": 2**64 - 1})
            # Frames are read in order: once the FLUSH is answered the counters are in.
            w.flush()
            assert _open_counters(daemon)["py-run/cam"] == {"dropped": 1, "late": 2**64 - 1, "received": 9}
            metrics = _control(daemon, "metrics").decode()
            assert (
                'wshardd_producer_counter{episode="py-run",stream="cam",counter="received"} 9' in metrics.splitlines()
            )
            assert w.close().timesteps == 4
            assert "py-run/cam" not in _open_counters(daemon)
        ep.close()
    daemon.assert_verified(daemon.data_dir / "py-run")


def test_py_counters_refused_client_side_naming_the_counter(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "py-bad", protocol_version=2) as rec:
        with rec.episode("py-bad", CHANNELS, "", 10.0) as w:
            w.push(0, 0.0, False, STEP)
            cases = [
                ({"rx": 1, "Rx": 2}, "COUNTERS: counter 1 'Rx' has 'R' at byte 0 (allowed: a-z, 0-9, _)"),
                ({"": 1}, "counter 0 '' is empty"),
                ({"a" * 33: 1}, "is 33 bytes (must be 1..=32 bytes)"),
                ({"rx": -1}, "counter 0 'rx' has value -1, expected 0..=18446744073709551615 (u64)"),
                ({"rx": 2**64}, "has value 18446744073709551616"),
                ({"rx": True}, "of type bool, expected an int"),
                ({"rx": 1.5}, "of type float, expected an int"),
                ({f"c{i}": i for i in range(33)}, "33 counters, at most 32 per frame"),
            ]
            for bad, needle in cases:
                with pytest.raises(SchemaError) as ei:
                    w.send_counters(bad)
                assert ei.value.code == ErrorCode.MALFORMED_FRAME
                assert needle in str(ei.value), str(ei.value)
            # Nothing was sent: the episode records on, and the daemon kept nothing.
            w.push(1, 0.0, False, STEP)
            w.flush()
            assert _open_counters(daemon)["py-bad"] == {}
            w.send_counters({"ok": 1})
            w.flush()
            assert _open_counters(daemon)["py-bad"] == {"ok": 1}
        assert w.close().timesteps == 2
    assert daemon.episode("py-bad").timesteps == 2


def test_py_counters_need_protocol_version_2(daemon: Daemon) -> None:
    with Recorder.connect(daemon.socket, "py-v1") as rec:
        with rec.episode("py-v1", CHANNELS, "", 10.0) as w:
            with pytest.raises(NeedsVersion):
                w.send_counters({"rx": 1})
            w.push(0, 0.0, False, STEP)
        assert w.close().timesteps == 1
