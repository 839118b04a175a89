"""``wshard export mcap`` read back by the official ``mcap`` Python reader (pip ``mcap``):
every message of every channel, the values and pictures equal to what the episode holds
(``interop_episode.expected_streams`` and the project's Python reader ``wshard_reader``),
log and publish times equal to the stream timestamps, the events, the episode's metadata
record, and every CRC checked (chunks, data section, summary) by both the indexed reader and
the streaming one.

The ``mcap`` command-line tool (``mcap doctor``) is not run: it is a Go program published on
no package registry reachable here (not PyPI, npm, crates.io nor Debian; the Go module proxy
is not reachable), see docs/EXPORT.md, "MCAP".
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import interop_episode as ie
from conftest import need

JOINT_CHANNELS = ("q", "gripper", "action")


def _read(path: Path) -> Tuple[Any, Dict[str, List[Tuple[int, int, int, Dict[str, Any]]]], Any]:
    """(summary, {topic: [(log_time, publish_time, sequence, message)]}, metadata records),
    with every CRC checked; the streaming reader must see the same messages."""
    need("mcap.stream_reader", "mcap==1.2.2")
    from mcap.reader import make_reader
    from mcap.records import Message
    from mcap.stream_reader import StreamReader

    by_topic: Dict[str, List[Tuple[int, int, int, Dict[str, Any]]]] = {}
    with open(path, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        summary = reader.get_summary()
        assert summary is not None, f"{path}: no summary section"
        metadata = list(reader.iter_metadata())
        last = -1
        for schema, channel, message in reader.iter_messages(log_time_order=True):
            assert schema is not None and schema.encoding == "jsonschema"
            assert channel.message_encoding == "json"
            json.loads(schema.data)  # the schema is JSON
            assert message.log_time >= last
            last = message.log_time
            by_topic.setdefault(channel.topic, []).append(
                (message.log_time, message.publish_time, message.sequence, json.loads(message.data))
            )
    streamed = 0
    with open(path, "rb") as f:
        for record in StreamReader(f, validate_crcs=True).records:
            streamed += isinstance(record, Message)
    assert streamed == sum(len(v) for v in by_topic.values())
    return summary, by_topic, metadata


def _stamp(t_ns: int) -> Dict[str, int]:
    return {"sec": t_ns // 1_000_000_000, "nsec": t_ns % 1_000_000_000}


def _export(wshard: Any, out: Path, *args: Any) -> None:
    r = wshard("export", "mcap", *args, "-o", out)
    assert r.returncode == 0, r.stderr


def test_export_mcap_every_message_equals_the_episode(recorded: Path, wshard: Any, tmp_path: Path) -> None:
    np = need("numpy", "numpy")
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    out = tmp_path / "mcap"
    r = wshard("export", "mcap", recorded, "-o", out)
    assert sorted(p.name for p in out.iterdir()) == [".wshard-export.json"] + [f"{e}.mcap" for e in ie.EPISODES]
    for e in ie.EPISODES:
        assert f"{e}: {out / (e + '.mcap')}" in r.stdout
    for episode in ie.EPISODES:
        ep_index = ie.EPISODES.index(episode)
        summary, by_topic, metadata = _read(out / f"{episode}.mcap")
        # zstd chunks (the default), one channel per stream channel, plus the events.
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        topics = {c.topic: c for c in summary.channels.values()}
        assert set(topics) == {
            "/joints/q",
            "/joints/gripper",
            "/joints/action",
            "/camera/rgb",
            "/camera/depth",
            "/events",
        }
        schema_of = {t: summary.schemas[c.schema_id].name for t, c in topics.items()}
        assert schema_of["/camera/rgb"] == schema_of["/camera/depth"] == "foxglove.RawImage"
        assert schema_of["/joints/q"] == "wshard.Vector" and schema_of["/events"] == "wshard.Event"
        assert topics["/joints/action"].metadata["lane"] == "action"
        assert topics["/camera/depth"].metadata["dtype"] == "u16"

        ep = reader.open_episode(recorded / episode)
        for stream, (ts, channels) in ie.expected_streams(episode).items():
            s = ep.stream(stream)
            assert list(np.asarray(s.timestamps_ns)) == ts
            for name, steps in channels.items():
                msgs = by_topic[f"/{stream}/{name}"]
                assert len(msgs) == len(steps) == len(ts)
                assert summary.statistics.channel_message_counts[topics[f"/{stream}/{name}"].id] == len(ts)
                assert [m[0] for m in msgs] == ts, f"{episode} /{stream}/{name}: log times"
                assert [m[1] for m in msgs] == ts, f"{episode} /{stream}/{name}: publish times"
                assert [m[2] for m in msgs] == list(range(len(ts)))
                from_reader = np.ascontiguousarray(s[name])
                for i, (t, _, _, msg) in enumerate(msgs):
                    assert msg["timestamp"] == _stamp(t)
                    if stream == "joints":
                        got = np.asarray(msg["values"], dtype=np.float32)
                        assert got.tobytes() == steps[i], f"{episode} /{stream}/{name} step {i}"
                        assert got.tobytes() == from_reader[i].tobytes()
                    else:
                        raw = base64.b64decode(msg["data"])
                        assert raw == steps[i] == from_reader[i].tobytes(), f"{episode} /{stream}/{name} step {i}"
                        assert (msg["width"], msg["height"], msg["frame_id"]) == (ie.WIDTH, ie.HEIGHT, "camera")
                        enc, step = ("rgb8", ie.WIDTH * 3) if name == "rgb" else ("16UC1", ie.WIDTH * 2)
                        assert (msg["encoding"], msg["step"]) == (enc, step)

        events = by_topic["/events"]
        assert [(t, m["label"], m["kind"], m["data"]) for t, _, _, m in events] == [
            (ie.T0_NS, "instruction", "text", ie.INSTRUCTION[episode]),
            (ie.joint_t_ns(ie.JOINT_STEPS // 2), "phase", "json", {"phase": "grasp", "episode": ep_index}),
        ]
        assert events[1][3]["source"] == "joints"
        assert events[0][3]["timestamp"] == _stamp(ie.T0_NS)

        [meta] = metadata
        assert meta.name == "wshard.episode"
        assert meta.metadata["episode_id"] == episode
        assert meta.metadata["env_id"] == ie.ENV_ID
        assert meta.metadata["status"] == "complete"
        assert json.loads(meta.metadata["metadata"]) == {"operator": "interop-tests"}
        assert meta.metadata["streams"] == "joints,camera"


def test_export_mcap_png_is_exact_and_jpeg_close(recorded: Path, wshard: Any, tmp_path: Path) -> None:
    np = need("numpy", "numpy")
    Image = need("PIL.Image", "pillow").Image
    episode = ie.EPISODES[1]
    _, (_, expected) = list(ie.expected_streams(episode).items())[1]
    for images, compression in (("png", "none"), ("jpeg", "lz4")):
        out = tmp_path / images
        _export(wshard, out, recorded / episode, "--images", images, "--compression", compression)
        summary, by_topic, _ = _read(out / f"{episode}.mcap")
        assert {c.compression for c in summary.chunk_indexes} == ({""} if compression == "none" else {"lz4"})
        schemas = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
        assert schemas["/camera/rgb"] == schemas["/camera/depth"] == "foxglove.CompressedImage"
        rgb, depth = by_topic["/camera/rgb"], by_topic["/camera/depth"]
        assert len(rgb) == len(depth) == ie.CAMERA_STEPS
        for i in range(ie.CAMERA_STEPS):
            msg = rgb[i][3]
            assert msg["format"] == images
            with Image.open(io.BytesIO(base64.b64decode(msg["data"]))) as im:
                assert im.format == images.upper() and im.size == (ie.WIDTH, ie.HEIGHT)
                got = np.asarray(im.convert("RGB"), dtype=np.int16)
            want = np.frombuffer(expected["rgb"][i], np.uint8).reshape(ie.HEIGHT, ie.WIDTH, 3).astype(np.int16)
            if images == "png":
                assert np.array_equal(got, want), f"rgb step {i}"
            else:
                assert np.abs(got - want).mean() < 4.0, f"rgb step {i}: mean error {np.abs(got - want).mean()}"
            # Depth is lossless in both: a 16-bit PNG in millimetres.
            msg = depth[i][3]
            assert msg["format"] == "png"
            with Image.open(io.BytesIO(base64.b64decode(msg["data"]))) as im:
                got = np.asarray(im).astype(np.uint16)
            want = np.frombuffer(expected["depth"][i], "<u2").reshape(ie.HEIGHT, ie.WIDTH)
            assert np.array_equal(got, want), f"depth step {i}"


def test_export_mcap_same_bytes_every_run_and_refuses_a_non_empty_output(
    recorded: Path, wshard: Any, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _export(wshard, a, recorded, "--workers", "2")
    _export(wshard, b, recorded, "--workers", "1")
    for episode in ie.EPISODES:
        assert (a / f"{episode}.mcap").read_bytes() == (b / f"{episode}.mcap").read_bytes()
    assert (a / ".wshard-export.json").read_bytes() == (b / ".wshard-export.json").read_bytes()
    r = wshard("export", "mcap", recorded, "-o", a, check=False)
    assert r.returncode == 2 and "not empty" in r.stderr
    _export(wshard, a, recorded, "--overwrite", "--quiet")
    assert not list(a.glob("*.partial"))
