"""Helpers of the import tests (``test_import_*``): read what ``wshard import`` wrote back
through the project's Python reader and through ``wshard cat`` (the ``reward`` and ``done``
blocks, which the reader's streams do not carry), and check it with ``wshard verify``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List


def episode_ids(data_dir: Path) -> List[str]:
    """The episode directories of a data directory (hidden entries skipped), sorted."""
    return sorted(p.name for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def block(wshard: Any, np: Any, episode_dir: Path, name: str, dtype: str) -> Any:
    """Block ``name`` of every chunk of ``episode_dir`` in order, concatenated, as
    ``wshard cat --format raw`` writes it."""
    parts = []
    for chunk in sorted(episode_dir.glob("*_chunk_*.wshard")):
        out = chunk.with_suffix(f".{name}.raw")
        wshard("cat", chunk, name, "--format", "raw", "-o", out)
        parts.append(np.frombuffer(out.read_bytes(), dtype=dtype))
        out.unlink()
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def verify(wshard: Any, data_dir: Path) -> None:
    """``wshard verify --deep`` passes on every file of the data directory."""
    r = wshard("verify", "--deep", data_dir)
    assert "FAIL" not in r.stdout, r.stdout


def last_only(np: Any, t: int) -> Any:
    """The ``done`` of an imported episode: true on its last step only."""
    d = np.zeros(t, dtype=np.uint8)
    d[-1] = 1
    return d
