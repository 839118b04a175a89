"""``wshard export lerobot`` loaded by the real ``lerobot`` package (0.4.4, LeRobotDataset
v3.0): every item's state, action, timestamp, indices and task equal what was recorded, every
video frame decodes (torchcodec, else PyAV, within LeRobot's 1e-4 s tolerance) close to the
recorded picture, and a delta-timestamp window over the previous frame loads too.

``lerobot`` needs torch (about 7 GB with its CUDA libraries from PyPI, about 4 minutes to
install here), so it lives in its own virtual environment, made by ``install-lerobot.sh``
beside this file: ``$WSHARD_LEROBOT_PYTHON``, else ``$WSHARD_TOOLS/lerobot-venv/bin/python``
(``../tools`` beside the checkout), else this interpreter if it imports lerobot.
``WSHARD_LEROBOT_SKIP=REASON`` skips the test with that reason (.ci/run sets it when the
machine's disk can't hold the environment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import interop_episode as ie
import pytest
from conftest import HERE, REPO, need

FPS = 10
FRAMES = 30
VIDEO_KEY = "observation.images.camera_rgb"
# Mean absolute difference allowed between a decoded frame and its source picture.
MAX_MEAN_ABS_DIFF = 12.0
INSTALL = (
    "tests/interop/install-lerobot.sh (or point WSHARD_LEROBOT_PYTHON at a python that imports "
    "lerobot, or set WSHARD_LEROBOT_SKIP=reason)"
)


pytestmark = pytest.mark.skipif(
    bool(os.environ.get("WSHARD_LEROBOT_SKIP")),
    reason=f"WSHARD_LEROBOT_SKIP: {os.environ.get('WSHARD_LEROBOT_SKIP')}",
)


def _lerobot_python() -> str:
    explicit = os.environ.get("WSHARD_LEROBOT_PYTHON")
    if explicit:
        return explicit
    tools = Path(os.environ.get("WSHARD_TOOLS") or REPO.parent / "tools")
    venv = tools / "lerobot-venv" / "bin" / "python"
    if venv.is_file():
        return str(venv)
    try:
        __import__("lerobot")
        return sys.executable
    except ImportError:
        pytest.fail(f"the real lerobot package is not installed: {INSTALL}", pytrace=False)


@pytest.mark.parametrize(
    "files",
    [[], ["--data-file-size-mb", "0", "--video-file-size-mb", "0"]],
    ids=["one-file", "file-per-episode"],
)
def test_export_lerobot_loaded_by_lerobot(wshard: Any, recorded: Path, tmp_path: Path, files: List[str]) -> None:
    """Once with every episode in one data file and one video file, once with a file per
    episode (the second episode's video then starts at 0 s of its own file)."""
    np = need("numpy", "numpy")
    python = _lerobot_python()
    out = tmp_path / "lerobot"
    wshard("export", "lerobot", recorded, "-o", out, *files)
    n_files = 1 if not files else 2
    assert len(list((out / "data").glob("*/*.parquet"))) == n_files
    assert len(list((out / "videos" / VIDEO_KEY).glob("*/*.mp4"))) == n_files
    env = dict(os.environ)
    env.update({"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    r = subprocess.run(
        [python, str(HERE / "lerobot_load.py"), str(out), VIDEO_KEY],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert r.returncode == 0, f"{python} lerobot_load.py failed:\n{r.stderr[-4000:]}"
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert (got["fps"], got["num_episodes"], got["num_frames"]) == (FPS, 2, 60)
    assert got["video_keys"] == [VIDEO_KEY] and got["camera_keys"] == [VIDEO_KEY]
    assert {"observation.state", "action", VIDEO_KEY}.issubset(got["stats_keys"])
    items = got["items"]
    assert [it["index"] for it in items] == list(range(60))
    for it in items:
        e, k = it["episode_index"], it["frame_index"]
        assert it["index"] == e * FRAMES + k
        assert abs(it["timestamp"] - k / FPS) < 1e-6
        assert it["task"] == ie.INSTRUCTION[ie.EPISODES[e]] and it["task_index"] == e
        step = 10 * k
        np.testing.assert_array_equal(np.float32(it["state"]), np.float32(ie.q(e, step) + ie.gripper(e, step)))
        np.testing.assert_array_equal(np.float32(it["action"]), np.float32(ie.action(e, step)))
        assert it["image_shape"] == [3, ie.HEIGHT, ie.WIDTH]
        img = np.array(it["image"], dtype=np.int16)
        want = np.frombuffer(ie.rgb(e, k), dtype=np.uint8).astype(np.int16)
        diff = np.abs(img - want).mean()
        assert diff < MAX_MEAN_ABS_DIFF, f"episode {e} frame {k}: mean abs diff {diff}"
        assert it["window_image_shape"] == [2, 3, ie.HEIGHT, ie.WIDTH]
        assert it["window_pad"] == [k == 0, False]
        prev = 10 * max(k - 1, 0)
        np.testing.assert_array_equal(
            np.float32(it["window_state_prev"]), np.float32(ie.q(e, prev) + ie.gripper(e, prev))
        )
