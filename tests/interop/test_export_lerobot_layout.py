"""``wshard export lerobot`` on the recorded fixture, its LeRobotDataset v3 layout checked
with pyarrow, pandas and PyAV against lerobot 0.4's own reading code
(lerobot/datasets/{utils,lerobot_dataset,video_utils,compute_stats}.py): every Parquet
column and dtype, the episode/frame/index/timestamp columns, the episodes table's offsets
pointing at the right rows and video times, frames decoded by PyAV close to the recorded
pictures, stats equal to numpy's on the same arrays, info.json. The real ``lerobot``
package loads the same export in test_export_lerobot_loader.py.

What the export is expected to give, from interop_episode: the camera's nominal rate is
10 Hz, so fps 10; the clock runs from the latest first timestamp (the camera's, t0 + 5 ms)
to the earliest last one (the camera's frame 29) every 100 ms: 30 frames per episode;
frame k holds joint step 10k (hold) and camera frame k (nearest; the jitter is < 1 ms).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import interop_episode as ie
from conftest import need

FPS = 10
FRAMES = 30
VIDEO_KEY = "observation.images.camera_rgb"
# Mean absolute difference allowed between a decoded frame and its source picture (H.264,
# CRF 30, 4:2:0 chroma on 48x64 gradients).
MAX_MEAN_ABS_DIFF = 12.0


def _export(wshard: Any, recorded: Path, out: Path) -> "Any":
    r = wshard("export", "lerobot", recorded, "-o", out)
    assert "left out camera/depth" in r.stderr, r.stderr
    return r


def _expected(np: Any, ep: int) -> Dict[str, Any]:
    steps = [10 * k for k in range(FRAMES)]
    return {
        "state": np.array([ie.q(ep, s) + ie.gripper(ep, s) for s in steps], dtype=np.float32),
        "action": np.array([ie.action(ep, s) for s in steps], dtype=np.float32),
        "rgb": np.stack(
            [np.frombuffer(ie.rgb(ep, k), dtype=np.uint8).reshape(ie.HEIGHT, ie.WIDTH, 3) for k in range(FRAMES)]
        ),
    }


def _stats(np: Any, a: Any) -> Dict[str, Any]:
    """LeRobot's per-episode figures, exactly (numpy's default quantile method)."""
    a = a.astype(np.float64)
    out = {"min": a.min(0), "max": a.max(0), "mean": a.mean(0), "std": a.std(0), "count": [len(a)]}
    for key, q in (("q01", 0.01), ("q10", 0.10), ("q50", 0.50), ("q90", 0.90), ("q99", 0.99)):
        out[key] = np.quantile(a, q, axis=0)
    return out


def test_export_lerobot_layout(wshard: Any, recorded: Path, tmp_path: Path) -> None:
    np = need("numpy", "numpy")
    pq = need("pyarrow.parquet", "pyarrow").parquet
    pa = need("pyarrow", "pyarrow")
    pd = need("pandas", "pandas")
    av = need("av", "av")
    out = tmp_path / "lerobot"
    r = _export(wshard, recorded, out)
    assert "2 episodes, 60 frames at 10 fps, 2 tasks" in r.stdout, r.stdout

    # meta/info.json (utils.create_empty_dataset_info, video_utils.get_video_info).
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert (info["fps"], info["total_episodes"], info["total_frames"], info["total_tasks"]) == (FPS, 2, 60, 2)
    assert info["splits"] == {"train": "0:2"}
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    assert (info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]) == (1000, 100, 200)
    f = info["features"]
    assert set(f) == {
        "observation.state", "action", VIDEO_KEY,
        "timestamp", "frame_index", "episode_index", "index", "task_index",
    }
    assert f["observation.state"] == {
        "dtype": "float32", "shape": [8], "names": [f"joints/q_{j}" for j in range(7)] + ["joints/gripper"],
    }
    assert f["action"] == {"dtype": "float32", "shape": [7], "names": [f"joints/action_{j}" for j in range(7)]}
    assert f["timestamp"] == {"dtype": "float32", "shape": [1], "names": None}
    for k in ("frame_index", "episode_index", "index", "task_index"):
        assert f[k] == {"dtype": "int64", "shape": [1], "names": None}
    v = f[VIDEO_KEY]
    assert (v["dtype"], v["shape"], v["names"]) == ("video", [ie.HEIGHT, ie.WIDTH, 3], ["height", "width", "channels"])

    # data/: one file, every column and its Arrow type as datasets writes them.
    data_files = sorted((out / "data").glob("*/*.parquet"))
    assert [p.relative_to(out).as_posix() for p in data_files] == ["data/chunk-000/file-000.parquet"]
    data = pq.read_table(data_files[0])
    assert data.schema.names == [
        "observation.state", "action", "timestamp", "frame_index", "episode_index", "index", "task_index",
    ]
    assert data.schema.field("observation.state").type == pa.list_(pa.float32(), 8)
    assert data.schema.field("action").type == pa.list_(pa.float32(), 7)
    assert data.schema.field("timestamp").type == pa.float32()
    for k in ("frame_index", "episode_index", "index", "task_index"):
        assert data.schema.field(k).type == pa.int64(), k
    hf = json.loads(data.schema.metadata[b"huggingface"])["info"]["features"]
    assert hf["observation.state"] == {"feature": {"dtype": "float32", "_type": "Value"}, "length": 8, "_type": "List"}
    assert hf["index"] == {"dtype": "int64", "_type": "Value"}
    cols = data.to_pydict()
    assert len(cols["index"]) == 60
    assert cols["index"] == list(range(60))
    assert cols["episode_index"] == [0] * FRAMES + [1] * FRAMES
    assert cols["frame_index"] == list(range(FRAMES)) * 2
    ts = np.array(cols["timestamp"], dtype=np.float32)
    np.testing.assert_array_equal(ts, np.array([k / FPS for k in range(FRAMES)] * 2, dtype=np.float32))
    state = np.array(cols["observation.state"], dtype=np.float32)
    action = np.array(cols["action"], dtype=np.float32)

    # meta/tasks.parquet, read as LeRobot does (pd.read_parquet: the task text is the index).
    tasks = pd.read_parquet(out / "meta/tasks.parquet")
    assert list(tasks.index) == [ie.INSTRUCTION[e] for e in ie.EPISODES]
    assert list(tasks["task_index"]) == [0, 1]
    assert cols["task_index"] == [0] * FRAMES + [1] * FRAMES

    # meta/episodes/: offsets into data/ and videos/.
    ep_files = sorted((out / "meta/episodes").glob("*/*.parquet"))
    assert [p.relative_to(out).as_posix() for p in ep_files] == ["meta/episodes/chunk-000/file-000.parquet"]
    episodes = pq.read_table(ep_files[0])
    for name in ("episode_index", "length", "data/chunk_index", "data/file_index", "dataset_from_index",
                 "dataset_to_index", f"videos/{VIDEO_KEY}/chunk_index", f"videos/{VIDEO_KEY}/file_index",
                 "meta/episodes/chunk_index", "meta/episodes/file_index"):
        assert episodes.schema.field(name).type == pa.int64(), name
    for name in ("from_timestamp", "to_timestamp"):
        assert episodes.schema.field(f"videos/{VIDEO_KEY}/{name}").type == pa.float64()
    assert episodes.schema.field("tasks").type == pa.list_(pa.string())
    rows = episodes.to_pylist()
    video = out / "videos" / VIDEO_KEY / "chunk-000" / "file-000.mp4"
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        assert (stream.codec.canonical_name, stream.pix_fmt) == (v["info"]["video.codec"], v["info"]["video.pix_fmt"])
        assert (stream.height, stream.width, int(stream.base_rate)) == (ie.HEIGHT, ie.WIDTH, v["info"]["video.fps"])
        decoded = [(float(fr.pts * fr.time_base), fr.to_ndarray(format="rgb24")) for fr in container.decode(video=0)]
    assert len(decoded) == 60
    for e, row in enumerate(rows):
        expected = _expected(np, e)
        assert row["episode_index"] == e
        assert row["tasks"] == [ie.INSTRUCTION[ie.EPISODES[e]]]
        assert row["length"] == FRAMES
        assert (row["data/chunk_index"], row["data/file_index"]) == (0, 0)
        lo, hi = row["dataset_from_index"], row["dataset_to_index"]
        assert (lo, hi) == (e * FRAMES, (e + 1) * FRAMES)
        assert cols["episode_index"][lo:hi] == [e] * FRAMES
        assert cols["frame_index"][lo:hi] == list(range(FRAMES))
        np.testing.assert_array_equal(state[lo:hi], expected["state"])
        np.testing.assert_array_equal(action[lo:hi], expected["action"])
        # Video times: this episode's frames are [from, to) of the file, frame k at from + k / fps.
        t_from = row[f"videos/{VIDEO_KEY}/from_timestamp"]
        t_to = row[f"videos/{VIDEO_KEY}/to_timestamp"]
        assert (t_from, t_to) == (e * FRAMES / FPS, (e + 1) * FRAMES / FPS)
        mine = [img for t, img in decoded if t_from - 1e-4 <= t < t_to - 1e-4]
        assert len(mine) == FRAMES
        for k, img in enumerate(mine):
            want = expected["rgb"][k].astype(np.int16)
            diff = np.abs(img.astype(np.int16) - want).mean()
            assert diff < MAX_MEAN_ABS_DIFF, f"episode {e} frame {k}: mean abs diff {diff}"
            # Neighbouring source frames differ by about the compression error: the closest
            # source frame must at least be this one or a neighbour, never one further away.
            dists = np.abs(img.astype(np.int16)[None] - expected["rgb"].astype(np.int16)).mean(axis=(1, 2, 3))
            assert abs(int(np.argmin(dists)) - k) <= 1, f"episode {e} frame {k} looks like {int(np.argmin(dists))}"
        # Per-episode stats (compute_stats.compute_episode_stats), exact.
        arrays = {
            "observation.state": state[lo:hi], "action": action[lo:hi], "timestamp": ts[lo:hi, None],
            "frame_index": np.array(cols["frame_index"][lo:hi])[:, None],
            "episode_index": np.array(cols["episode_index"][lo:hi])[:, None],
            "index": np.array(cols["index"][lo:hi])[:, None],
            "task_index": np.array(cols["task_index"][lo:hi])[:, None],
        }
        for feature, a in arrays.items():
            for stat, want in _stats(np, a).items():
                got = row[f"stats/{feature}/{stat}"]
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{feature} {stat}")
        pixels = expected["rgb"].reshape(-1, 3).astype(np.float64) / 255.0
        for stat, want in _stats(np, pixels).items():
            got = np.array(row[f"stats/{VIDEO_KEY}/{stat}"])
            if stat == "count":
                assert list(got) == [FRAMES]
                continue
            assert got.shape == (3, 1, 1), stat
            np.testing.assert_allclose(got[:, 0, 0], want, rtol=1e-12, atol=1e-12, err_msg=f"video {stat}")

    # meta/stats.json: numpy's figures over the whole dataset; quantiles as LeRobot's
    # aggregate_stats combines them (count-weighted mean of the episodes').
    stats = json.loads((out / "meta/stats.json").read_text())
    assert set(stats) == set(f)
    for feature, a in (("observation.state", state), ("action", action), ("timestamp", ts[:, None])):
        whole = _stats(np, a)
        for stat in ("min", "max", "mean", "std"):
            np.testing.assert_allclose(stats[feature][stat], whole[stat], rtol=1e-9, atol=1e-12, err_msg=f"{feature} {stat}")
        assert stats[feature]["count"] == [60]
        for q in ("q01", "q10", "q50", "q90", "q99"):
            per = [_stats(np, a[e * FRAMES:(e + 1) * FRAMES])[q] for e in range(2)]
            np.testing.assert_allclose(stats[feature][q], (per[0] + per[1]) / 2, rtol=1e-9, err_msg=f"{feature} {q}")
    pixels = np.concatenate([_expected(np, e)["rgb"] for e in range(2)]).reshape(-1, 3).astype(np.float64) / 255.0
    whole = _stats(np, pixels)
    for stat in ("min", "max", "mean", "std"):
        np.testing.assert_allclose(np.array(stats[VIDEO_KEY][stat])[:, 0, 0], whole[stat], rtol=1e-9, err_msg=stat)


def test_export_lerobot_refusals(wshard: Any, recorded: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = wshard("export", "lerobot", recorded, "-o", out, "--fps", "12.5", check=False)
    assert r.returncode == 2 and "whole number" in r.stderr, r.stderr
    r = wshard("export", "lerobot", recorded, "-o", out, "--state", "nosuch", check=False)
    assert r.returncode == 2 and "no such channel" in r.stderr, r.stderr
    assert not out.exists()
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    r = wshard("export", "lerobot", recorded, "-o", out, check=False)
    assert r.returncode == 2 and "--overwrite" in r.stderr, r.stderr
    assert (out / "mine.txt").read_text() == "keep"


def test_export_lerobot_without_ffmpeg(binaries: Dict[str, Path], recorded: Path, tmp_path: Path) -> None:
    import subprocess

    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "out"
    argv: List[str] = [str(binaries["wshard"]), "export", "lerobot", str(recorded), "-o", str(out)]
    r = subprocess.run(argv, capture_output=True, text=True, env={"PATH": str(empty)}, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "ffmpeg" in r.stderr and "apt-get install ffmpeg" in r.stderr, r.stderr
    assert not out.exists()
