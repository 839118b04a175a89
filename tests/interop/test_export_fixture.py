"""The fixture episodes themselves: recorded, verified, and read back by the project's
Python reader bit-exact (so an export test that disagrees with them points at the export)."""

from __future__ import annotations

from pathlib import Path

import interop_episode as ie
from conftest import need


def test_export_fixture_episodes_read_back(recorded: Path) -> None:
    np = need("numpy", "numpy")
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    for episode in ie.EPISODES:
        ep = reader.open_episode(recorded / episode)
        for stream, (ts, channels) in ie.expected_streams(episode).items():
            s = ep.stream(stream)
            assert list(np.asarray(s.timestamps_ns)) == ts
            for name, steps in channels.items():
                got = np.ascontiguousarray(s[name])
                assert got.tobytes() == b"".join(steps), f"{episode}/{stream}/{name}"
