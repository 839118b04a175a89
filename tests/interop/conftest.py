"""Fixtures of the export and import tests (``test_export_*``, ``test_import_*``): the real
``wshardd`` of the Python client's harness (ingest-adapters/python/tests/daemon_harness.py),
the ``wshard`` binary, and small multi-rate episodes recorded through the real daemon
(``interop_episode.py``).

Third-party readers (webdataset, mcap, pyarrow, av, h5py, ...) are imported by the tests that
need them; a missing one fails the test with how to install it (never a silent skip): the
test command ``tests/all.sh`` installs nothing and checks them first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "ingest-adapters" / "python" / "tests"))  # daemon_harness
sys.path.insert(0, str(REPO / "ingest-adapters" / "python" / "src"))  # wshard_client

from daemon_harness import Daemon, binaries, daemon, start_daemon  # noqa: E402,F401

import interop_episode  # noqa: E402


def need(module: str, pip_name: str) -> Any:
    """Import ``module`` or fail saying how to install it."""
    try:
        return __import__(module)
    except ImportError as e:
        pytest.fail(f"python3 module {module} is missing ({e}): python3 -m pip install {pip_name}", pytrace=False)


@pytest.fixture(scope="session")
def recorded(binaries: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the episodes of ``interop_episode.EPISODES``, each recorded by
    a real wshardd (then stopped with SIGTERM, exit 0): the same bytes for every test of
    the session. Read only: a test that changes files copies the directory first."""
    workdir = tmp_path_factory.mktemp("recorded")
    d = Daemon(binaries["wshardd"], binaries["wshard"], workdir, {"rotation": {"max_timesteps": 100}})
    try:
        for episode in interop_episode.EPISODES:
            interop_episode.record(d.socket, episode)
    finally:
        code = d.stop()
    assert code == 0, f"wshardd exited with {code}:\n{d.log()}"
    d.assert_verified()
    return d.data_dir


@pytest.fixture
def wshard(binaries: Dict[str, Path]) -> Any:
    """Run ``wshard ARGS...``: returns the CompletedProcess (text)."""

    def run(*args: Any, check: bool = True, timeout: float = 300) -> "subprocess.CompletedProcess[str]":
        argv: List[str] = [str(binaries["wshard"]), *[str(a) for a in args]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            pytest.fail(f"{' '.join(argv)} exited {r.returncode}\n{r.stdout}\n{r.stderr}", pytrace=False)
        return r

    return run
