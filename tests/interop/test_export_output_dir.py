"""``wshard export webdataset|lerobot|mcap -o DIR --overwrite`` on the recorded fixture: every
export leaves ``.wshard-export.json`` naming the files it wrote; ``--overwrite`` replaces an
export's own output and never removes a file no export wrote (a directory without the marker,
or with a file it does not list, is refused with exit 2 and left as it was)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

MARKER = ".wshard-export.json"
FORMATS = ["webdataset", "lerobot", "mcap"]


def files(d: Path) -> Dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def export(wshard: Any, fmt: str, recorded: Path, out: Path, *extra: str) -> Any:
    return wshard("export", fmt, recorded, "-o", out, "--quiet", *extra, check=False)


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_output_dir_overwrite_keeps_what_no_export_wrote(
    wshard: Any, recorded: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / "out"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "plan.txt").write_text("mine")
    (out / "keep.txt").write_text("also mine")
    before = files(out)
    r = export(wshard, fmt, recorded, out, "--overwrite")
    assert r.returncode == 2, r.stderr
    assert MARKER in r.stderr and str(out) in r.stderr, r.stderr
    assert files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_output_dir_overwrite_replaces_its_own_output(
    wshard: Any, recorded: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / "out"
    r = export(wshard, fmt, recorded, out)
    assert r.returncode == 0, r.stderr
    written = files(out)
    marker = json.loads(written.pop(MARKER))
    assert marker == {"export": fmt, "files": sorted(written)}
    r = export(wshard, fmt, recorded, out, "--overwrite")
    assert r.returncode == 0, r.stderr
    assert {k for k in files(out) if k != MARKER} == set(written)
    # A file added by hand: refused, named, nothing removed.
    (out / "README.txt").write_text("added")
    before = files(out)
    r = export(wshard, fmt, recorded, out, "--overwrite")
    assert r.returncode == 2, r.stderr
    assert "README.txt" in r.stderr, r.stderr
    assert files(out) == before
