"""``wshard import minari``: a dataset written by the real ``minari`` package (HDF5 data
format; a small environment with a Dict observation space, so nested observation groups,
and infos) becomes one episode per Minari episode; values compared with what
``minari.load_dataset`` gives, through the project's Python reader and ``wshard cat``;
``wshard verify`` passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import need
from import_check import block, episode_ids, last_only, verify

EPISODE_STEPS = [6, 9, 4]


def make_env(gym: Any, np: Any) -> Any:
    spaces = gym.spaces

    class Reacher(gym.Env):  # type: ignore[misc]
        """Dict observations {pos f32[2], vel f64[3]}, Box actions f32[2]; episodes end
        (terminated or truncated) after a fixed number of steps."""

        observation_space = spaces.Dict(
            {"pos": spaces.Box(-10, 10, (2,), np.float32), "vel": spaces.Box(-10, 10, (3,), np.float64)}
        )
        action_space = spaces.Box(-1, 1, (2,), np.float32)

        def __init__(self) -> None:
            self.k = 0
            self.t = 0

        def _obs(self) -> Any:
            return {"pos": np.array([self.k, self.t], np.float32),
                    "vel": np.array([self.t * 0.5, -self.t, 0.25], np.float64)}

        def reset(self, seed: Any = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            self.t = 0
            return self._obs(), {"hit": np.int64(0)}

        def step(self, action: Any) -> Any:
            self.t += 1
            end = self.t >= EPISODE_STEPS[self.k]
            terminated = end and self.k != 1
            truncated = end and self.k == 1
            if end:
                self.k += 1
            return self._obs(), float(self.t) / 3.0, terminated, truncated, {"hit": np.int64(self.t % 2)}

    return Reacher()


def test_import_minari_dataset(tmp_path: Path, wshard: Any, monkeypatch: Any) -> None:
    np = need("numpy", "numpy")
    gym = need("gymnasium", "gymnasium")
    minari = need("minari", '"minari[hdf5]==0.5.4"')
    reader = need("wshard_reader", "the project's Python reader (tests/all.sh builds and installs it)")
    root = tmp_path / "minari-root"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    env = minari.DataCollector(make_env(gym, np), record_infos=True, data_format="hdf5")
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    for _ in EPISODE_STEPS:
        while True:
            _, _, term, trunc, _ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
            if term or trunc:
                env.reset()
                break
    env.create_dataset(dataset_id="reacher/dict-v0", algorithm_name="random", author="t",
                       author_email="t@example.com", code_permalink="https://example.com",
                       description="wshard import test", eval_env=None)
    dataset_dir = root / "reacher" / "dict-v0"
    assert (dataset_dir / "data" / "main_data.hdf5").is_file()
    data = tmp_path / "data"
    r = wshard("import", "minari", dataset_dir, "--data-dir", data, "--hz", 50)
    assert "imported 3 episodes" in r.stdout, r.stdout
    ids = episode_ids(data)
    assert ids == [f"reacher_dict-v0-{i:06d}" for i in range(3)]
    verify(wshard, data)
    ds = minari.load_dataset("reacher/dict-v0")
    for eid, mep in zip(ids, ds.iterate_episodes()):
        n = len(mep.rewards)
        t = n + 1  # one row per observation
        st = reader.open_episode(data / eid).stream("main")
        assert sorted(st.keys()) == sorted(
            ["obs/pos", "obs/vel", "action", "reward", "terminations", "truncations", "infos/hit"]
        )
        for key in ("pos", "vel"):
            got = np.asarray(st[f"obs/{key}"])
            assert got.dtype == mep.observations[key].dtype
            assert np.array_equal(got, mep.observations[key]), key
        pad = lambda a: np.concatenate([a, np.zeros((1,) + a.shape[1:], a.dtype)])  # noqa: E731
        assert np.array_equal(np.asarray(st["action"]), pad(mep.actions))
        exact = np.asarray(st["reward"])
        assert exact.dtype == np.float64 and np.array_equal(exact, pad(mep.rewards))
        assert np.array_equal(np.asarray(st["terminations"]), pad(mep.terminations))
        assert np.array_equal(np.asarray(st["truncations"]), pad(mep.truncations))
        assert np.array_equal(np.asarray(st["infos/hit"]), mep.infos["hit"])
        assert np.array_equal(block(wshard, np, data / eid, "reward", "<f4"), pad(mep.rewards).astype(np.float32))
        assert np.array_equal(block(wshard, np, data / eid, "done", "u1"), last_only(np, t))
        dt = round(1e9 / 50)
        assert list(np.asarray(st.timestamps_ns)) == [k * dt for k in range(t)]


def test_import_minari_missing_key(tmp_path: Path, wshard: Any) -> None:
    """h5py in Minari's layout with an episode lacking ``truncations``: exit 1 naming it."""
    np = need("numpy", "numpy")
    h5py = need("h5py", "h5py")
    d = tmp_path / "ds" / "data"
    d.mkdir(parents=True)
    (d / "metadata.json").write_text('{"dataset_id": "x/y-v0", "data_format": "hdf5"}')
    with h5py.File(d / "main_data.hdf5", "w") as f:
        g = f.create_group("episode_0")
        g.create_dataset("observations", data=np.zeros((4, 2), np.float32))
        g.create_dataset("actions", data=np.zeros((3, 1), np.float32))
        g.create_dataset("rewards", data=np.zeros(3))
        g.create_dataset("terminations", data=np.zeros(3, bool))
    r = wshard("import", "minari", tmp_path / "ds", "--data-dir", tmp_path / "data", check=False)
    assert r.returncode == 1, r.stderr
    assert "main_data.hdf5: key `episode_0/truncations` is missing" in r.stderr, r.stderr
