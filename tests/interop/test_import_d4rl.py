"""``wshard import d4rl``: a D4RL-layout HDF5 file written by h5py (gzip-compressed
datasets, as D4RL's generation scripts write them) is split into episodes at terminals |
timeouts (the last unterminated run is an episode too); values compared through the
project's Python reader and ``wshard cat``; ``wshard verify`` passes; a bad file names its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from conftest import need
from import_check import block, episode_ids, last_only, verify

N = 50
ENDS = [9, 29]  # a terminal at step 9, a timeout at 29, then 20 unterminated steps


def d4rl_arrays(np: Any) -> Dict[str, Any]:
    rng = np.random.default_rng(7)
    terminals = np.zeros(N, bool)
    terminals[ENDS[0]] = True
    timeouts = np.zeros(N, bool)
    timeouts[ENDS[1]] = True
    obs = rng.standard_normal((N, 11)).astype(np.float32)
    return {
        "observations": obs,
        "actions": rng.uniform(-1, 1, (N, 3)).astype(np.float32),
        "rewards": rng.standard_normal(N).astype(np.float32),
        "terminals": terminals,
        "timeouts": timeouts,
        "next_observations": np.roll(obs, -1, axis=0),
        "infos/qpos": rng.standard_normal((N, 6)),
        "infos/action_log_probs": rng.standard_normal(N).astype(np.float32),
    }


def write(h5py: Any, path: Path, arrays: Dict[str, Any]) -> None:
    with h5py.File(path, "w") as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value, compression="gzip")
        f.create_dataset("metadata/algorithm", data="SAC")
        f.create_dataset("metadata/policy/nonlinearity", data="relu")


def test_import_d4rl_split_and_values(tmp_path: Path, wshard: Any) -> None:
    np = need("numpy", "numpy")
    h5py = need("h5py", "h5py")
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    arrays = d4rl_arrays(np)
    src = tmp_path / "hopper-medium-v2.hdf5"
    write(h5py, src, arrays)
    data = tmp_path / "data"
    r = wshard("import", "d4rl", src, "--data-dir", data)
    assert "imported 3 episodes (50 steps)" in r.stdout, r.stdout
    ids = episode_ids(data)
    assert ids == [f"hopper-medium-v2-{i:06d}" for i in range(3)]
    verify(wshard, data)
    bounds = [(0, 10), (10, 30), (30, N)]
    channel = {"observations": "obs", "actions": "action", "next_observations": "next_obs",
               "terminals": "terminals", "timeouts": "timeouts", "infos/qpos": "infos/qpos",
               "infos/action_log_probs": "infos/action_log_probs"}
    for eid, (s, e) in zip(ids, bounds):
        st = reader.open_episode(data / eid).stream("main")
        assert sorted(st.keys()) == sorted(channel.values())
        for key, ch in channel.items():
            got = np.asarray(st[ch])
            assert got.dtype == arrays[key].dtype, (ch, got.dtype)
            assert np.array_equal(got, arrays[key][s:e]), (eid, ch)
        assert np.array_equal(block(wshard, np, data / eid, "reward", "<f4"), arrays["rewards"][s:e])
        assert np.array_equal(block(wshard, np, data / eid, "done", "u1"), last_only(np, e - s))


def test_import_d4rl_bad_file_names_the_key(tmp_path: Path, wshard: Any) -> None:
    np = need("numpy", "numpy")
    h5py = need("h5py", "h5py")
    arrays = d4rl_arrays(np)
    del arrays["timeouts"]
    src = tmp_path / "no-timeouts.hdf5"
    write(h5py, src, arrays)
    r = wshard("import", "d4rl", src, "--data-dir", tmp_path / "data", check=False)
    assert r.returncode == 1, r.stderr
    assert f"{src}: key `timeouts` is missing" in r.stderr, r.stderr
    arrays = d4rl_arrays(np)
    arrays["actions"] = arrays["actions"][:-1]
    src = tmp_path / "short.hdf5"
    write(h5py, src, arrays)
    r = wshard("import", "d4rl", src, "--data-dir", tmp_path / "data", check=False)
    assert r.returncode == 1, r.stderr
    assert "key `actions` has 49 steps, expected 50" in r.stderr, r.stderr
    assert episode_ids(tmp_path / "data") == []
