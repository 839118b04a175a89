"""Fixtures of the ROS bridge's tests: a REAL ``wshardd`` (``start_daemon``, ``daemon``)
from the Python client's test harness (ingest-adapters/python/tests/daemon_harness.py), and
its episode parser ``shard_parse``. Tests of the converter core alone need neither."""

import sys
from pathlib import Path

CLIENT_TESTS = Path(__file__).resolve().parents[2] / "python" / "tests"
sys.path.insert(0, str(CLIENT_TESTS))  # daemon_harness, shard_parse

from daemon_harness import Daemon, binaries, daemon, start_daemon  # noqa: E402,F401
