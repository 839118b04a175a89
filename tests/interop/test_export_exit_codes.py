"""The exit codes of ``wshard export webdataset|lerobot|mcap`` (the real binary): one rule for
the three. Inputs that name nothing to export (a path that does not exist, a data directory
with no finished episode, an episode still being recorded named directly) are usage errors,
exit 2, and say why each episode was left out; an episode whose files are bad is exit 1,
named. Nothing is written in either case (the MCAP export still writes the other episodes)."""

from __future__ import annotations

import json
import shutil
import struct
import time
from pathlib import Path
from typing import Any, List

import pytest

import interop_episode as ie

FORMATS = ["webdataset", "lerobot", "mcap"]


def export(wshard: Any, fmt: str, inputs: List[Path], out: Path) -> Any:
    return wshard("export", fmt, *inputs, "-o", out, check=False)


def set_status(episode_dir: Path, status: str) -> None:
    index = episode_dir / f"{episode_dir.name}_index.json"
    doc = json.loads(index.read_text())
    doc["status"] = status
    index.write_text(json.dumps(doc))


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_exit_codes_missing_input_is_2(wshard: Any, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out"
    r = export(wshard, fmt, [tmp_path / "missing"], out)
    assert r.returncode == 2, r.stderr
    assert "missing" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_exit_codes_no_finished_episode_is_2_and_says_why(
    wshard: Any, recorded: Path, tmp_path: Path, fmt: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(recorded, data)
    set_status(data / ie.EPISODES[0], "recording")
    set_status(data / ie.EPISODES[1], "aborted")
    (data / "junk").mkdir()
    out = tmp_path / "out"
    r = export(wshard, fmt, [data], out)
    assert r.returncode == 2, r.stderr
    for said in ("no finished episode", f"{ie.EPISODES[0]}: status recording",
                 f"{ie.EPISODES[1]}: status aborted", "junk: not an episode directory"):
        assert said in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_exit_codes_bad_episode_data_is_1(
    wshard: Any, recorded: Path, tmp_path: Path, fmt: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(recorded, data)
    bad = ie.EPISODES[1]
    chunks = sorted((data / bad / "streams" / "joints").glob("joints_chunk_*.wshard"))
    raw = chunks[-1].read_bytes()
    chunks[-1].write_bytes(raw[: len(raw) - 64])
    r = export(wshard, fmt, [data], tmp_path / "out")
    assert r.returncode == 1, r.stderr
    assert bad in r.stderr


def test_export_exit_codes_open_episode_named_directly_is_refused_by_every_export(
    wshard: Any, start_daemon: Any, tmp_path: Path
) -> None:
    """An episode the real wshardd is still recording (chunks sealed, more to come), named
    directly: every export refuses it, exit 2, saying it is still recording; nothing is
    written."""
    from wshard_client import Channel, Recorder, Step

    daemon = start_daemon(rotation={"max_timesteps": 20})
    with Recorder.connect(daemon.socket, "open-owner", protocol_version=2) as owner:
        handle = owner.open_multistream_episode("live", ie.ENV_ID, {})
        with Recorder.connect(daemon.socket, "open-joints", protocol_version=2) as rec:
            w = rec.join_stream("live", "joints", [Channel("q", "f32", (2,))], ie.JOINT_HZ,
                                timebase="ticks", durability="ack")
            w.push_batch([Step(ie.joint_t_ns(s), 0.0, False, [struct.pack("<2f", s, -s)]) for s in range(50)])
            with Recorder.connect(daemon.socket, "open-camera", protocol_version=2) as cam:
                c = cam.join_stream("live", "camera", [Channel("rgb", "u8", (16, 16, 3))], 10.0,
                                    timebase="timestamps_ns", durability="ack")
                c.push_batch([Step(ie.camera_t_ns(s), 0.0, False, [bytes(16 * 16 * 3)]) for s in range(5)])
                deadline = time.monotonic() + 10
                while not list((daemon.data_dir / "live" / "streams" / "joints").glob("joints_chunk_*.wshard")):
                    assert time.monotonic() < deadline, "no chunk sealed"
                    time.sleep(0.05)
                for fmt in FORMATS:
                    out = tmp_path / fmt
                    r = export(wshard, fmt, [daemon.data_dir / "live"], out)
                    assert r.returncode == 2, (fmt, r.stdout, r.stderr)
                    assert "live" in r.stderr and "still recording" in r.stderr, (fmt, r.stderr)
                    assert not out.exists() or not any(out.iterdir()), fmt
                c.close()
            w.close()
        assert handle.close() == 0
