"""Fixtures: a REAL ``wshardd`` per test (no mocks), with its own config, data dir and
socket, stopped with SIGTERM at teardown (exit code 0 asserted).

The binary: ``$WSHARDD_BIN``, else ``target/debug/wshardd`` of the repository this package
lives in (build it with ``cargo build -p wshard-recorder -p wshard-cli --bins``). ``wshard`` (for
``wshard verify``) is ``$WSHARD_BIN`` or the binary next to ``wshardd``. When the binary is
missing the tests fail (never skip silently): the test command `tests/all.sh` builds it first.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
REPO = PACKAGE.parent.parent
sys.path.insert(0, str(HERE))  # shard_parse, daemon_harness

from daemon_harness import Daemon, binaries, daemon, start_daemon  # noqa: E402,F401


@pytest.fixture
def np() -> Any:
    """numpy, or skip the test."""
    return pytest.importorskip("numpy")


def pytest_report_header(config: pytest.Config) -> Optional[str]:
    try:
        import numpy as np

        have = f"numpy {np.__version__}"
    except ImportError:
        have = "numpy not installed (numpy tests skipped)"
    return f"wshard-client tests: {have}"
