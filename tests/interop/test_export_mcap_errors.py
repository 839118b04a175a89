"""``wshard export mcap`` exit codes on the recorded fixture: 1 when an episode cannot be read
(the others are still exported, nothing half-written is left), 2 for usage and I/O errors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import interop_episode as ie


def test_export_mcap_damaged_episode_exits_1_and_the_others_are_written(
    recorded: Path, wshard: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(recorded, data)
    bad = ie.EPISODES[1]
    chunks = sorted((data / bad / "streams" / "camera").glob("camera_chunk_*.wshard"))
    assert chunks
    raw = chunks[-1].read_bytes()
    chunks[-1].write_bytes(raw[: len(raw) - 64])
    out = tmp_path / "out"
    r = wshard("export", "mcap", data, "-o", out, check=False)
    assert r.returncode == 1, r.stderr
    assert bad in r.stderr
    assert sorted(p.name for p in out.iterdir()) == [".wshard-export.json", f"{ie.EPISODES[0]}.mcap"]


def test_export_mcap_usage_errors_exit_2(recorded: Path, wshard: Any, tmp_path: Path) -> None:
    r = wshard("export", "mcap", tmp_path / "missing", "-o", tmp_path / "out", check=False)
    assert r.returncode == 2 and "missing" in r.stderr
    r = wshard("export", "mcap", recorded, "-o", tmp_path / "out", "--images", "gif", check=False)
    assert r.returncode == 2
    r = wshard("export", "mcap", recorded, "-o", tmp_path / "out", "--jpeg-quality", "0", check=False)
    assert r.returncode == 2
    assert not (tmp_path / "out").exists()
