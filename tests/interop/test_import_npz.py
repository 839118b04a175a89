"""``wshard import npz``: DreamerV3 episode files written by numpy (``np.savez`` and
``np.savez_compressed``) become episodes; values compared through the project's Python
reader and ``wshard cat``; ``wshard verify`` passes; object arrays are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from conftest import need
from import_check import block, episode_ids, last_only, verify


def dreamer_episode(np: Any, t: int, seed: int) -> Dict[str, Any]:
    """One episode in DreamerV3's layout (embodied replay ``saver``: one row per step)."""
    rng = np.random.default_rng(seed)
    is_first = np.zeros(t, bool)
    is_first[0] = True
    is_last = np.zeros(t, bool)
    is_last[-1] = True
    return {
        "image": rng.integers(0, 256, (t, 16, 12, 3), dtype=np.uint8),
        "state": rng.standard_normal((t, 5)),  # float64
        "action": rng.standard_normal((t, 4)).astype(np.float32),
        "reward": rng.standard_normal(t).astype(np.float32),
        "discount": np.ones(t, np.float32),
        "is_first": is_first,
        "is_last": is_last,
        "is_terminal": is_last.copy(),
        "log_entropy": rng.standard_normal(t).astype(np.float32),
    }


def test_import_npz_dreamerv3_episodes(tmp_path: Path, wshard: Any) -> None:
    np = need("numpy", "numpy")
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    src = tmp_path / "episodes"
    src.mkdir()
    eps = {"20240101T000000-aa-37": dreamer_episode(np, 37, 1), "20240101T000100-bb-20": dreamer_episode(np, 20, 2)}
    np.savez(src / "20240101T000000-aa-37.npz", **eps["20240101T000000-aa-37"])
    np.savez_compressed(src / "20240101T000100-bb-20.npz", **eps["20240101T000100-bb-20"])
    data = tmp_path / "data"
    r = wshard("import", "npz", src, "--data-dir", data, "--hz", 15, "--chunk-steps", 16)
    assert "imported 2 episodes (57 steps)" in r.stdout, r.stdout
    assert episode_ids(data) == sorted(eps)
    verify(wshard, data)
    for eid, arrays in eps.items():
        t = len(arrays["reward"])
        ep = reader.open_episode(data / eid)
        assert ep.status == "complete"
        s = ep.stream("main")
        assert sorted(s.keys()) == sorted(
            ["obs/image", "obs/state", "action", "discount", "is_first", "is_last", "is_terminal", "log_entropy"]
        )
        for key, channel in [("image", "obs/image"), ("state", "obs/state"), ("action", "action"),
                             ("discount", "discount"), ("is_first", "is_first"), ("is_last", "is_last"),
                             ("is_terminal", "is_terminal"), ("log_entropy", "log_entropy")]:
            got = np.asarray(s[channel])
            assert got.dtype == arrays[key].dtype, (channel, got.dtype)
            assert got.shape == arrays[key].shape, (channel, got.shape)
            assert np.array_equal(got, arrays[key]), channel
        dt = round(1e9 / 15)
        assert list(np.asarray(s.timestamps_ns)) == [k * dt for k in range(t)]
        assert np.array_equal(block(wshard, np, data / eid, "reward", "<f4"), arrays["reward"])
        assert np.array_equal(block(wshard, np, data / eid, "done", "u1"), last_only(np, t))


def test_import_npz_refuses_object_arrays_and_existing_episodes(tmp_path: Path, wshard: Any) -> None:
    np = need("numpy", "numpy")
    arrays = dreamer_episode(np, 5, 3)
    good = tmp_path / "good.npz"
    np.savez(good, **arrays)
    data = tmp_path / "data"
    wshard("import", "npz", good, "--data-dir", data)
    again = wshard("import", "npz", good, "--data-dir", data, check=False)
    assert again.returncode == 2, again.stderr
    assert 'episode "good" exists already' in again.stderr, again.stderr
    wshard("import", "npz", good, "--data-dir", data, "--overwrite")

    bad = tmp_path / "pickled.npz"
    arrays["log_meta"] = np.array([{"a": 1}] * 5, dtype=object)
    np.savez(bad, **arrays)
    r = wshard("import", "npz", bad, "--data-dir", data, check=False)
    assert r.returncode == 1, r.stderr
    assert str(bad) in r.stderr and "key `log_meta`" in r.stderr and "pickled" in r.stderr, r.stderr
    assert episode_ids(data) == ["good"]
