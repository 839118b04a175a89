#!/usr/bin/env python3
"""Write the v0.1 data directory fixture: what wshardd 0.1 (protocol 1, single-stream
episodes, commit 9f20302) leaves on disk, including an episode cut by SIGKILL.

Used by ``multirate_legacy_*`` tests: a newer daemon must recover this directory and read
every episode unchanged. Run it only with the wshardd of that release (it is kept so the
fixture's making is on record, not to be re-run by tests):

    python3 golden/datadir-v0.1/generate.py --wshardd target/release/wshardd --out golden/datadir-v0.1/data

Episodes (deterministic values, so tests can compute them):
- ``legacy-complete``: ticks 50 Hz, 25 steps in chunks of 10 (3 chunks), channels
  ``q`` f32[3] (signal, codec none), ``cmd`` f32[2] (action, zstd), ``ok`` bool; CLOSE completed.
- ``legacy-aborted``: the same schema, 5 steps, CLOSE aborted.
- ``legacy-recording``: timestamps_ns, 13 steps, FLUSHed (DURABLE 13), then the daemon is
  killed with SIGKILL: its journal is left for recovery.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ingest-adapters", "python", "src"))
from wshard_client import Channel, Recorder  # noqa: E402

T0_NS = 1_700_000_000_000_000_000
CONFIG = """
data_dir = "{data}"
[socket]
path = "{sock}"
[control]
path = "{ctl}"
[rotation]
max_timesteps = 10
[disk]
preallocate = false
"""


def channels():
    return [
        Channel("q", "f32", (3,), codec="none"),
        Channel("cmd", "f32", (2,), lane="action", codec="zstd"),
        Channel("ok", "bool", ()),
    ]


def values(i: int):
    return [[float(i), i + 0.5, -float(i)], [i * 0.25, -i * 0.25], [i % 3 == 0]]


def record(rec, episode_id, steps, outcome):
    ep = rec.open_episode(rec_spec(episode_id, 50.0))
    for i in range(steps):
        ep.push(T0_NS + i * 20_000_000, float(i) * 0.1, i == steps - 1, values(i))
    ep.flush()
    ep.close(outcome)


def rec_spec(episode_id, hz, timebase="ticks"):
    from wshard_client import EpisodeSpec

    return EpisodeSpec(episode_id, channels(), env_id="Legacy-v0", tick_hz=hz, timebase=timebase, durability="ack")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wshardd", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="wshard-legacy-")
    data = os.path.join(work, "data")
    sock = os.path.join(work, "s.sock")
    cfg = os.path.join(work, "wshardd.toml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data, sock=sock, ctl=os.path.join(work, "c.sock")))
    daemon = subprocess.Popen([args.wshardd, "--config", cfg])
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        rec = Recorder.connect(sock, "legacy-fixture/0.1")
        record(rec, "legacy-complete", 25, "completed")
        record(rec, "legacy-aborted", 5, "aborted")
        ep = rec.open_episode(rec_spec("legacy-recording", 50.0, timebase="timestamps_ns"))
        for i in range(13):
            ep.push(T0_NS + i * 20_000_000, float(i) * 0.1, False, values(i))
        assert ep.flush() == 13
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    shutil.copytree(data, args.out, ignore=shutil.ignore_patterns(".wshardd.lock"))
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
