"""Multi-stream episode directories: the listing, every stream bit-exact, events and
annotations, and the typed errors of bad index, events, streams."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import wshard_reader

from conftest import Chan, Multi, Stream, make_multi, mapped, same_bits
from multirate_fixture import MS, T0, make


def test_multirate_reader_multi_stream_listing(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    assert (ep.episode_id, ep.layout, ep.status, ep.closed) == ("ep-multi", "multi", "complete", True)
    assert ep.env_id == "" and ep.metadata == {} and ep.created_unix_ns == 1_700_000_000_000_000_000
    assert list(ep.streams) == ["joints", "imu", "camera"]
    for name, s in m.streams.items():
        info = ep.streams[name]
        assert info.timebase == "timestamps_ns" and info.status == "complete"
        assert info.steps == s.steps and info.producer == s.producer
        assert info.chunks == -(-s.steps // (s.chunk_steps or s.steps))
        assert (info.first_t_ns, info.last_t_ns) == (int(s.t_ns[0]), int(s.t_ns[-1]))
        assert [c.name for c in info.channels] == list(s.channels)
        for spec, c in zip(info.channels, s.channels.values()):
            assert spec.shape == c.values.shape[1:] and spec.lane == c.lane
            assert spec.numpy_dtype == c.values.dtype
        assert info.manifest == str(folder / "streams" / name / f"{name}_manifest.wshard")
    assert ep.streams["joints"].channels[3].lane == "action"


def test_multirate_reader_multi_stream_values_bit_exact(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    for name, s in m.streams.items():
        data = ep.stream(name)
        assert same_bits(data.timestamps_ns, s.t_ns.astype("<i8")), name
        for c, ch in s.channels.items():
            assert same_bits(data[c], ch.values), f"{name}/{c}"
    # One chunk, stored raw: in place. Several chunks: joined (one copy).
    assert mapped(ep.stream("camera")["rgb"]) and mapped(ep.stream("imu")["acc"])
    assert not mapped(ep.stream("joints")["q"])


def test_multirate_reader_events_and_annotations(tmp_path: Path) -> None:
    folder, _ = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    ev = ep.events()
    assert [(e.t_ns, e.label, e.origin) for e in ev] == [
        (T0 + 5 * MS, "instruction", "producer"),
        (T0 + 120 * MS, "button", "producer"),
        (T0 + 120 * MS, "blob", "producer"),
        (T0 + 120 * MS, "success", "operator"),
    ]
    assert (ev[0].kind, ev[0].data, ev[0].source, ev[0].seq) == ("text", "pick up the red cube", "teleop", 0)
    assert (ev[1].kind, ev[1].data) == ("json", {"id": 3, "pressed": True})
    assert (ev[2].kind, ev[2].data, ev[2].source) == ("binary", b"\x00\x01\xfe\xff", "camera")
    a = ev[3]
    assert a.is_annotation and (a.author, a.created_unix_ns, a.data, a.source) == (
        "uid 1000",
        1_800_000_000_000_000_000,
        "grasp ok",
        None,
    )
    # The torn last line is never an event.
    assert ep.torn_event_bytes == len(b'{"data": "half a line')


def test_multirate_reader_single_stream_events(tmp_path: Path) -> None:
    from conftest import make_single

    folder = make_single(tmp_path, "ep1", Stream({"x": Chan(np.zeros(3, np.float32))}, t_ns=np.arange(3) + T0))
    (folder / "ep1_events.jsonl").write_text(
        json.dumps({"data": "go", "kind": "text", "label": "instruction", "seq": 0, "source": "c", "t_ns": T0})
        + "\n"
    )
    ep = wshard_reader.open_episode(folder)
    assert ep.layout == "single" and ep.closed is None
    assert [(e.label, e.data) for e in ep.events()] == [("instruction", "go")]


def test_multirate_reader_stream_without_chunks_reads_empty(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    index_path = folder / "ep-multi_index.json"
    index = json.loads(index_path.read_text())
    index["streams"].append(
        {
            "channels": [{"dtype": "f32", "lane": "signal", "name": "force", "shape": [6]}],
            "chunks": 0,
            "first_t_ns": None,
            "last_t_ns": None,
            "manifest": "streams/ft/ft_manifest.wshard",
            "name": "ft",
            "producer": "ft-sensor",
            "status": "recording",
            "steps": 0,
            "tick_hz": 0.0,
            "timebase": "timestamps_ns",
        }
    )
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    ep = wshard_reader.open_episode(folder)
    assert ep.streams["ft"].steps == 0 and ep.streams["ft"].status == "recording"
    ft = ep.stream("ft")
    assert ft["force"].shape == (0, 6) and ft["force"].dtype == np.float32
    assert ft.timestamps_ns.shape == (0,)
    view = ep.aligned(clock="camera")
    assert not view["ft/force.valid"].any() and view["ft/force"].shape == (12, 6)


def test_multirate_reader_bad_index_names_file_and_field(tmp_path: Path) -> None:
    folder, _ = make(tmp_path)
    index_path = folder / "ep-multi_index.json"
    index = json.loads(index_path.read_text())
    index["streams"][1]["status"] = "sleeping"
    index_path.write_text(json.dumps(index))
    with pytest.raises(wshard_reader.InvalidEpisodeError) as e:
        wshard_reader.open_episode(folder)
    assert e.value.path == str(index_path) and "streams[1].status" in (e.value.field or "")
    assert str(index_path) in str(e.value)
    index_path.write_text("{not json")
    with pytest.raises(wshard_reader.InvalidEpisodeError) as e:
        wshard_reader.open_episode(folder)
    assert e.value.path == str(index_path) and "line 1" in str(e.value)


def test_multirate_reader_bad_events_line_names_file_and_line(tmp_path: Path) -> None:
    folder, _ = make(tmp_path)
    events = folder / "ep-multi_events.jsonl"
    lines = events.read_bytes().split(b"\n")
    lines[1] = b'{"data": 1, "kind": "text", "label": "x", "seq": 1, "source": "s", "t_ns": 5}'
    events.write_bytes(b"\n".join(lines))
    with pytest.raises(wshard_reader.InvalidEpisodeError) as e:
        wshard_reader.open_episode(folder)
    assert e.value.path == str(events) and e.value.field is not None and e.value.field.startswith("line 2")
    assert "line 2" in str(e.value)


def test_multirate_reader_missing_stream_manifest(tmp_path: Path) -> None:
    folder, _ = make(tmp_path)
    gone = folder / "streams" / "imu" / "imu_manifest.wshard"
    gone.unlink()
    with pytest.raises(wshard_reader.EpisodeNotFoundError) as e:
        wshard_reader.open_episode(folder)
    assert e.value.stream == "imu" and e.value.path == str(gone)
    assert isinstance(e.value, FileNotFoundError)


def test_multirate_reader_not_an_episode_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(wshard_reader.EpisodeNotFoundError) as e:
        wshard_reader.open_episode(tmp_path / "empty")
    assert e.value.path == str(tmp_path / "empty") and "not an episode directory" in str(e.value)


def test_multirate_reader_timestamps_going_backwards(tmp_path: Path) -> None:
    t = T0 + np.arange(10, dtype=np.int64) * MS
    t[6] = t[5] - 1
    m = Multi(streams={"arm": Stream({"x": Chan(np.arange(10, dtype=np.float32))}, t_ns=t)})
    folder = make_multi(tmp_path, "ep-back", m)
    ep = wshard_reader.open_episode(folder)
    with pytest.raises(wshard_reader.InvalidEpisodeError) as e:
        ep.stream("arm")
    assert (e.value.stream, e.value.field) == ("arm", "time/timestamps_ns")
    assert "step 6" in str(e.value)
    with pytest.raises(wshard_reader.InvalidEpisodeError) as e:
        ep.aligned(rate_hz=100.0)
    assert (e.value.stream, e.value.field) == ("arm", "time/timestamps_ns")
    assert "step 6" in str(e.value)
