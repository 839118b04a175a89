"""A multi-stream episode recorded by the real wshardd, opened with the REFERENCE WShard
Python package: every stream's manifest through ``ChunkedEpisodeReader`` (``iter_chunks``
verifies each chunk's SHA-256) and ``validate_chunk_continuity``, every chunk through
``load_wshard``, the values compared with what was sent, and one chunk re-saved with
``save_wshard`` once ``total_chunks`` is taken from the manifest (docs/FORMAT-NOTES.md,
"total_chunks"; the re-saved file passes ``wshard verify``).

The reference package is not published on any package registry, so CI cannot install it:
the test runs only when ``WSHARD_REFERENCE_PY`` names a checkout's ``py/`` folder (the one
holding the ``wshard`` package), and is skipped otherwise, saying so. The reference runs in
a child process (``reference_check.py``) with that folder on ``PYTHONPATH``, under
``WSHARD_REFERENCE_PYTHON`` (an interpreter with its dependencies: numpy, crc32c, xxhash,
zstandard, lz4) or else this interpreter::

    WSHARD_REFERENCE_PY=/path/to/wshard/py WSHARD_REFERENCE_PYTHON=/path/to/venv/bin/python \\
        python3 -m pytest ingest-adapters/python/tests -k reference_readers
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import multirate_workload as mw
import pytest
from conftest import HERE, Daemon

from wshard_client import Recorder

EP = "ref-multi"
ENV_ID = "ref-env"
REFERENCE_ENV = "WSHARD_REFERENCE_PY"
INTERPRETER_ENV = "WSHARD_REFERENCE_PYTHON"
SKIP_WHY = (
    f"{REFERENCE_ENV} is not set: the reference WShard Python package is not published on any "
    "package registry (not on PyPI), so it cannot be installed here; set "
    f"{REFERENCE_ENV} to a checkout's py/ folder (and {INTERPRETER_ENV} to a python with its "
    "dependencies) to run this check"
)
#: Steps per stream: several chunks each at 100 steps (the cameras rotate by bytes).
STEPS = {"joints": 350, "imu": 220, "cameras": 6}
SHM = {"joints": False, "imu": False, "cameras": True}


def record(d: Daemon) -> Dict[str, int]:
    """Record the episode: the owner and one producer connection per stream (the cameras
    over shared memory); returns each stream's chunk count from the index."""
    with Recorder.connect(d.socket, "pytest-owner", protocol_version=2) as owner:
        ep = owner.open_multistream_episode(EP, ENV_ID, {"purpose": "reference readers"})
        ep.send_event(mw.T0_NS, "instruction", "pick up the red cube")
        for kind, steps in STEPS.items():
            with Recorder.connect(d.socket, f"pytest-{kind}", protocol_version=2) as rec:
                w = mw.join(rec, EP, kind, SHM[kind])
                mw.record(w, kind, mw.T0_NS, 0, steps)
                summary = w.close()
                assert (summary.timesteps, summary.durable_up_to) == (steps, steps)
        assert ep.close() == 0
    index = json.loads((d.data_dir / EP / f"{EP}_index.json").read_text())
    assert index["status"] == "complete"
    return {s["name"]: s["chunks"] for s in index["streams"]}


def check_stream(np: Any, out: Path, seen: Dict[str, Any], chunks: int) -> None:
    kind = seen["name"]
    steps = STEPS[kind]
    assert seen["manifest"] == {
        "episode_id": kind,
        "total_timesteps": steps,
        "chunks": chunks,
        "num_chunks": chunks,
    }
    first = 0
    for i, c in enumerate(seen["chunks"]):
        assert (c["chunk_index"], c["id"], c["env_id"]) == (i, kind, ENV_ID)
        # The decision of docs/FORMAT-NOTES.md: the count is the manifest's, not the chunk's.
        assert c["total_chunks"] is None
        assert c["timestep_range"] == [first, first + c["length"] - 1]
        assert c["rewards"] == c["done"] == c["length"]
        assert c["timebase"] == mw.TIMEBASE[kind]
        if mw.TIMEBASE[kind] == "ticks":
            assert c["tick_hz"] == mw.HZ[kind]
        first += c["length"]
    assert first == steps
    specs = mw.CHANNELS[kind]
    assert sorted(seen["channels"]) == sorted(name for name, *_ in specs)
    for ci, (name, lane, dtype, shape, _) in enumerate(specs):
        assert seen["channels"][name] == {"lane": lane, "dtype": {"f32": "float32", "u8": "uint8"}[dtype]}
        got = np.load(out / f"{kind}.{name}.npy")
        assert got.shape == (steps, *shape)
        want = b"".join(mw.value(kind, ci, s) for s in range(steps))
        assert got.tobytes() == want, f"{kind}/{name}: the reference reads other values than were sent"


def test_multirate_reference_readers(start_daemon: Any, np: Any, tmp_path: Path) -> None:
    reference = os.environ.get(REFERENCE_ENV)
    if not reference:
        pytest.skip(SKIP_WHY)
    assert (Path(reference) / "wshard" / "__init__.py").is_file(), f"{REFERENCE_ENV}={reference}: no wshard package there"
    d = start_daemon(rotation={"max_timesteps": 100, "max_bytes": 4 << 20})
    chunks = record(d)
    assert all(n >= 2 for n in chunks.values()), chunks
    d.assert_verified()

    out = tmp_path / "reference"
    python = os.environ.get(INTERPRETER_ENV) or sys.executable
    env = dict(os.environ, PYTHONPATH=reference)
    r = subprocess.run(
        [python, str(HERE / "reference_check.py"), str(d.data_dir / EP), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, f"the reference reader failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}"
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(s["name"] for s in summary["streams"]) == sorted(STEPS)
    for seen in summary["streams"]:
        check_stream(np, out, seen, chunks[seen["name"]])

    resaved = summary["resave"]
    assert "total_chunks required when chunk_index is set" in (resaved["refused_without_total_chunks"] or "")
    assert (resaved["chunk_index"], resaved["total_chunks"]) == (1, chunks[resaved["stream"]])
    assert resaved["same_values"] is True
    # What the reference wrote, our verifier reads.
    d.assert_verified(Path(resaved["path"]))
