"""``wshard export webdataset`` read back by the real ``webdataset`` package: every sample's
arrays equal what the project's Python reader's aligned view gives, windows and padding as
documented (docs/EXPORT.md, "WebDataset"), ``stats.json`` equal to numpy's figures on the
same arrays (``np.percentile`` default method), pictures decoded by Pillow (JPEG close to the
recorded frame, or to Pillow's own Lanczos resize of it; depth PNG exact in millimetres).
The defaults are rd shardify's: the window on the anchor camera's frames, 384x384 pictures."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import interop_episode as ie
from conftest import need

LOWDIM = ["joints/q", "joints/gripper", "joints/action"]
PERCENTILES = [1, 2, 5, 95, 98, 99]


def read_samples(out: Path) -> List[Dict[str, Any]]:
    wds = need("webdataset", "webdataset==1.0.2")
    shards = sorted(str(p) for p in out.glob("shard_*.tar"))
    return list(wds.WebDataset(shards, shardshuffle=False))


def expected_windows(np: Any, clock: Any, anchor_t: int, past: int, future: int, stride: int):
    """(rows, pad_left, pad_right) as documented: the last clock row at or before the
    anchor, steps ``stride`` rows apart, clamped at both ends."""
    row = int(np.searchsorted(clock, anchor_t, side="right")) - 1
    offs = np.arange(-past, future + 1) * stride + row
    pad_left = int((offs < 0).sum())
    pad_right = int((offs > len(clock) - 1).sum())
    return np.clip(offs, 0, len(clock) - 1), pad_left, pad_right


def check_export(recorded: Path, out: Path, wshard: Any, past: int, future: int, stride: int,
                 max_left: int, max_right: int, per_shard: int, clock_stream: str,
                 resize: Optional[Tuple[int, int]], args: List[Any]) -> None:
    """Export with ``args`` and check every sample against what the window, clock
    (``clock_stream``'s timestamps) and ``resize`` (``(w, h)``, ``None``: recorded size)
    given here say."""
    np = need("numpy", "numpy")
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    need("PIL", "pillow")
    from PIL import Image as pil
    wshard("export", "webdataset", recorded, "-o", out, "--quiet", *args)
    samples = read_samples(out)
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [m["num_sequences"] for m in manifest][:-1] == [per_shard] * (len(manifest) - 1)
    assert sum(m["num_sequences"] for m in manifest) == len(samples)
    assert [m["shard"] for m in manifest] == [f"shard_{i:06d}" for i in range(len(manifest))]

    by_key: Dict[str, List[Any]] = {k: [] for k in LOWDIM}
    expected_count = 0
    i = 0
    for episode in ie.EPISODES:
        ep = reader.open_episode(recorded / episode)
        view = ep.aligned(clock_stream, channels=LOWDIM, drop_invalid=True)
        clock = np.asarray(view["t_ns"])
        cam = ep.stream("camera")
        cam_t = np.asarray(cam.timestamps_ns)
        rgb = np.asarray(cam["rgb"])
        depth = np.asarray(cam["depth"])
        for frame, anchor_t in enumerate(cam_t):
            rows, pad_left, pad_right = expected_windows(np, clock, int(anchor_t), past, future, stride)
            if pad_left > max_left or pad_right > max_right:
                continue
            expected_count += 1
            s = samples[i]
            i += 1
            meta = json.loads(s["metadata.json"])
            assert (meta["episode_id"], meta["anchor_frame"]) == (episode, frame)
            assert (meta["padding_left"], meta["padding_right"]) == (pad_left, pad_right)
            assert meta["lowdim_rows"] == rows.tolist()
            assert json.loads(s["language_instructions.json"]) == {"original": [ie.INSTRUCTION[episode]]}
            z = np.load(io.BytesIO(s["lowdim.npz"]))
            assert sorted(z.files) == sorted(LOWDIM + ["past_mask", "future_mask"])
            for k in LOWDIM:
                want = np.asarray(view[k])[rows].reshape(len(rows), -1)
                assert z[k].dtype == want.dtype and z[k].shape == want.shape
                assert np.array_equal(z[k], want), f"{episode} frame {frame} {k}"
                by_key[k].append(z[k].astype(np.float64))
            t = past + 1 + future
            assert z["past_mask"].tolist() == [j < past for j in range(t)]
            assert z["future_mask"].tolist() == [j > past for j in range(t)]
            for off in (-1, 0):
                f = min(max(frame + off, 0), len(cam_t) - 1)
                jpg = np.asarray(pil.open(io.BytesIO(s[f"camera__rgb_t{off}.jpg"])).convert("RGB"))
                src = rgb[f]
                png = pil.open(io.BytesIO(s[f"camera__depth_t{off}.depth.png"]))
                got = np.asarray(png).astype(np.uint16)
                if resize is None:
                    assert jpg.shape == src.shape
                    assert np.abs(jpg.astype(int) - src.astype(int)).mean() < 4.0
                    assert np.array_equal(got, depth[f])
                else:
                    w, h = resize
                    # The export's Lanczos is Pillow's (byte for byte before the JPEG: the
                    # test in export/src/webdataset/resize.rs holds Pillow's output). Here,
                    # after two JPEG encoders that differ in rounding (a mean of about 0.5
                    # levels on the same picture), Pillow's resize through Pillow's JPEG
                    # decodes to nearly the same pixels.
                    buf = io.BytesIO()
                    pil.fromarray(src).resize((w, h), pil.LANCZOS).save(buf, format="JPEG", quality=95)
                    want = np.asarray(pil.open(buf).convert("RGB"))
                    assert jpg.shape == (h, w, 3)
                    assert np.abs(jpg.astype(int) - want.astype(int)).mean() < 1.5
                    ys = ((2 * np.arange(h) + 1) * src.shape[0]) // (2 * h)
                    xs = ((2 * np.arange(w) + 1) * src.shape[1]) // (2 * w)
                    assert np.array_equal(got, depth[f][np.ix_(ys, xs)])
    assert i == len(samples) == expected_count > 0

    stats = json.loads((out / "stats.json").read_text())
    assert sorted(stats) == sorted(LOWDIM)
    for k, windows in by_key.items():
        a = np.stack(windows)  # (n, T, D)
        st = stats[k]
        assert st["count"] == a.shape[0]
        flat = a.reshape(-1, a.shape[2])
        close = lambda got, want: np.allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)  # noqa: E731
        assert close(st["mean"], flat.mean(axis=0)), k
        assert close(st["std"], flat.std(axis=0)), k
        assert close(st["min"], flat.min(axis=0)) and close(st["max"], flat.max(axis=0)), k
        assert close(st["mean_per_timestep"], a.mean(axis=0)), k
        assert close(st["std_per_timestep"], a.std(axis=0)), k
        assert close(st["min_per_timestep"], a.min(axis=0)), k
        assert close(st["max_per_timestep"], a.max(axis=0)), k
        for q in PERCENTILES:
            assert np.array_equal(np.asarray(st[f"percentile_{q}"]), np.percentile(flat, q, axis=0)), (k, q)
            assert np.array_equal(np.asarray(st[f"percentile_{q}_per_timestep"]), np.percentile(a, q, axis=0)), (k, q)


def test_export_webdataset_shards_match_aligned_view(recorded: Path, tmp_path: Path, wshard: Any) -> None:
    check_export(recorded, tmp_path / "wds", wshard, past=2, future=7, stride=4, max_left=1,
                 max_right=3, per_shard=9, clock_stream="joints", resize=None,
                 args=["--past-lowdim-steps", 2, "--future-lowdim-steps", 7, "--stride", 4,
                       "--max-padding-left", 1, "--max-padding-right", 3, "--samples-per-shard", 9,
                       "--lowdim-clock", "joints", "--resize", "none"])


def test_export_webdataset_resize_lanczos(recorded: Path, tmp_path: Path, wshard: Any) -> None:
    check_export(recorded, tmp_path / "wds", wshard, past=1, future=19, stride=3, max_left=3,
                 max_right=15, per_shard=100, clock_stream="camera", resize=(40, 30),
                 args=["--resize", "40x30"])


def test_export_webdataset_defaults_are_shardify_s(recorded: Path, tmp_path: Path, wshard: Any) -> None:
    """No option: a window of 1 + 1 + 19 steps 3 camera frames apart, padding at most 3 / 15,
    100 samples a shard, 384x384 pictures."""
    check_export(recorded, tmp_path / "wds", wshard, past=1, future=19, stride=3, max_left=3,
                 max_right=15, per_shard=100, clock_stream="camera", resize=(384, 384), args=[])


def test_export_webdataset_exit_codes(recorded: Path, tmp_path: Path, wshard: Any) -> None:
    """1 for bad input data (an --image naming no channel, a NaN with --fail-on-nan is in
    the Rust tests), 2 for usage and I/O (a non-empty output directory): the CLI's codes."""
    r = wshard("export", "webdataset", recorded, "-o", tmp_path / "a", "--image", "camera/left", check=False)
    assert r.returncode == 1, r.stderr
    assert "camera/left" in r.stderr and "camera/rgb, camera/depth" in r.stderr
    assert not (tmp_path / "a").exists()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep").write_text("mine")
    r = wshard("export", "webdataset", recorded, "-o", tmp_path / "b", check=False)
    assert r.returncode == 2, r.stderr
    assert "not empty" in r.stderr and (tmp_path / "b" / "keep").read_text() == "mine"
    r = wshard("export", "webdataset", recorded, "-o", tmp_path / "c", "--resize", "big", check=False)
    assert r.returncode == 2 and "--resize" in r.stderr, r.stderr
    r = wshard("export", "webdataset", recorded, "-o", tmp_path / "d", "--fail-on-nan", "--drop-non-finite",
               check=False)
    assert r.returncode == 2, r.stderr
