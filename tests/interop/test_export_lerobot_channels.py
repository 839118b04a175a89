"""``wshard export lerobot`` of two episodes recorded by the real ``wshardd`` the way the ROS
bridge records them: every stream ends with an int64 ``receive_t_ns`` channel, and the streams
join in the order their first messages come (another order in each episode). The dataset is
read back with pyarrow: features in canonical order (streams by name) for both episodes,
element names unique (they carry the stream), the receive times left out and said, values
equal to what was recorded."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Dict, List

from conftest import need

import interop_episode as ie

STEPS = 40
RECEIVE_T0_NS = 1_800_000_000_000_000_000
# (stream, [(channel, elements)]), each stream's channels then receive_t_ns.
STREAMS = {"arm": [("position", 2)], "gripper": [("position", 1)]}


def value(stream: str, step: int, j: int) -> float:
    return (10.0 if stream == "arm" else 20.0) + step * 0.25 + j


def record(socket: Path, episode: str, order: List[str]) -> None:
    from wshard_client import Channel, Recorder, Step

    with Recorder.connect(socket, f"{episode}-owner", protocol_version=2) as owner:
        handle = owner.open_multistream_episode(episode, ie.ENV_ID, {})
        for stream in order:
            (name, n), = STREAMS[stream]
            with Recorder.connect(socket, f"{episode}-{stream}", protocol_version=2) as rec:
                w = rec.join_stream(episode, stream,
                                    [Channel(name, "f64", (n,)), Channel("receive_t_ns", "i64", ())],
                                    100.0, timebase="timestamps_ns", durability="ack")
                w.push_batch([
                    Step(ie.T0_NS + s * 10_000_000, 0.0, False,
                         [struct.pack(f"<{n}d", *[value(stream, s, j) for j in range(n)]),
                          struct.pack("<q", RECEIVE_T0_NS + s * 10_000_000 + 777)])
                    for s in range(STEPS)
                ])
                assert w.close().durable_up_to == STEPS
        assert handle.close() == 0


def test_export_lerobot_channels_bridge_recordings_in_any_stream_order(
    wshard: Any, daemon: Any, tmp_path: Path
) -> None:
    pq = need("pyarrow.parquet", "pyarrow==26.0.1").parquet
    record(daemon.socket, "bridge-a", ["arm", "gripper"])
    record(daemon.socket, "bridge-b", ["gripper", "arm"])
    out = tmp_path / "lerobot"
    r = wshard("export", "lerobot", daemon.data_dir, "-o", out, "--fps", "100")
    for channel in ("arm/receive_t_ns", "gripper/receive_t_ns"):
        assert f"left out {channel}: " in r.stderr and "float32" in r.stderr, r.stderr
    info: Dict[str, Any] = json.loads((out / "meta" / "info.json").read_text())
    names = ["arm/position_0", "arm/position_1", "gripper/position"]
    assert info["features"]["observation.state"]["names"] == names
    table = pq.read_table(out / "data" / "chunk-000" / "file-000.parquet")
    rows = table.to_pydict()
    for i, (ep, frame) in enumerate(zip(rows["episode_index"], rows["frame_index"])):
        want = [value("arm", frame, 0), value("arm", frame, 1), value("gripper", frame, 0)]
        assert rows["observation.state"][i] == [float(struct.unpack("<f", struct.pack("<f", v))[0]) for v in want], (ep, frame)
    assert sorted(set(rows["episode_index"])) == [0, 1]
    # Chosen by name, the receive times are refused rather than rounded (exit 1).
    r = wshard("export", "lerobot", daemon.data_dir, "-o", tmp_path / "o2", "--fps", "100",
               "--state", "arm/receive_t_ns", check=False)
    assert r.returncode == 1 and "arm/receive_t_ns" in r.stderr and "float32" in r.stderr, r.stderr
    # --exclude leaves channels out; a pattern matching nothing is refused (exit 2).
    r = wshard("export", "lerobot", daemon.data_dir, "-o", tmp_path / "o3", "--fps", "100",
               "--exclude", "*/receive_t_ns,gripper/*")
    info = json.loads((tmp_path / "o3" / "meta" / "info.json").read_text())
    assert info["features"]["observation.state"]["names"] == names[:2]
    assert "left out" not in r.stderr, r.stderr
    r = wshard("export", "lerobot", daemon.data_dir, "-o", tmp_path / "o4", "--exclude", "*/recieve_t_ns",
               check=False)
    assert r.returncode == 2 and "*/recieve_t_ns" in r.stderr, r.stderr
