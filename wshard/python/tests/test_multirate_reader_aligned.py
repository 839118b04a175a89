"""The aligned view against the brute-force reference (reference_align.py): every policy,
stream and fixed-rate clocks, staleness edges, streams that start late and end early,
dropped rows; every array bit-exact."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pytest

import wshard_reader

from conftest import Chan, Multi, Stream, make_multi, same_bits
from multirate_fixture import MS, T0, make
from reference_align import align, rate_clock

CODES = {"q": "f32", "mode": "i16", "grip": "bool", "cmd": "f32", "acc": "f64", "temp": "f16", "rgb": "u8"}


def reference(m: Multi, clock, policies: Dict[str, str], staleness: Optional[int], drop: bool):
    streams = {
        name: (s.t_ns, {c: (ch.values, CODES[c]) for c, ch in s.channels.items()})
        for name, s in m.streams.items()
    }
    return align(streams, list(clock), policies, staleness, drop)


def check_same(got: Dict[str, np.ndarray], want: Dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for k in want:
        assert same_bits(got[k], want[k]), k


def episode_span(m: Multi):
    return min(int(s.t_ns[0]) for s in m.streams.values()), max(int(s.t_ns[-1]) for s in m.streams.values())


def policies_for(policy: str, m: Multi) -> Dict[str, str]:
    """``policy`` for every channel it applies to; bool channels keep hold under linear."""
    return {
        f"{s}/{c}": ("hold" if policy == "linear" and CODES[c] == "bool" else policy)
        for s, st in m.streams.items()
        for c in st.channels
    }


@pytest.mark.parametrize("policy", ["hold", "nearest", "linear"])
@pytest.mark.parametrize("clock", ["camera", "joints", "rate"])
@pytest.mark.parametrize("staleness_ms", [None, 2.5])
def test_multirate_reader_aligned_matches_reference(
    tmp_path: Path, policy: str, clock: str, staleness_ms: Optional[float]
) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    pol = policies_for(policy, m)
    if clock == "rate":
        start, end = episode_span(m)
        rows = rate_clock(240.0, start, end)
        got = ep.aligned(rate_hz=240.0, policy=pol, max_staleness_ms=staleness_ms)
    else:
        rows = m.streams[clock].t_ns
        got = ep.aligned(clock=clock, policy=pol, max_staleness_ms=staleness_ms)
    ns = None if staleness_ms is None else int(staleness_ms * MS)
    want = reference(m, rows, pol, ns, drop=False)
    check_same(got, want)
    # The late IMU has no sample before it starts (hold, linear) and after it ends (linear).
    if policy != "nearest":
        assert not got["imu/acc.valid"][got["t_ns"] < m.streams["imu"].t_ns[0]].any()


@pytest.mark.parametrize("policy", ["hold", "nearest", "linear"])
def test_multirate_reader_aligned_drops_invalid_rows(tmp_path: Path, policy: str) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    pol = policies_for(policy, m)
    got = ep.aligned(clock="joints", policy=pol, max_staleness_ms=20, drop_invalid=True)
    want = reference(m, m.streams["joints"].t_ns, pol, 20 * MS, drop=True)
    check_same(got, want)
    assert 0 < len(got["t_ns"]) < m.streams["joints"].steps
    assert all(got[k].all() for k in got if k.endswith(".valid"))


def test_multirate_reader_aligned_fixed_rate_range_beyond_the_streams(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    start, end = T0 - 50 * MS, T0 + 500 * MS
    pol = {"joints/q": "linear", "imu/acc": "nearest"}
    got = ep.aligned(rate_hz=50.0, start_ns=start, end_ns=end, policy=pol)
    want = reference(m, rate_clock(50.0, start, end), pol, None, drop=False)
    check_same(got, want)
    assert got["t_ns"][0] == start and not got["joints/q.valid"][0]
    assert got["joints/q.t_ns"][0] == np.iinfo(np.int64).min and got["joints/q.row"][0] == -1
    assert not got["joints/q"][0].any()  # no sample: zeros


def test_multirate_reader_aligned_policy_mapping_default_and_bare_names(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    got = ep.aligned(clock="camera", policy={"*": "nearest", "q": "linear", "imu/acc": "hold"})
    pol = policies_for("nearest", m)
    pol.update({"joints/q": "linear", "imu/acc": "hold"})
    check_same(got, reference(m, m.streams["camera"].t_ns, pol, None, drop=False))
    assert got["joints/q"].dtype == np.float32 and got["imu/temp"].dtype == np.float16


def test_multirate_reader_aligned_linear_output_dtypes(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    got = ep.aligned(clock="camera", policy={"mode": "linear", "temp": "linear", "rgb": "linear"})
    assert got["joints/mode"].dtype == np.float64 and got["imu/temp"].dtype == np.float32
    assert got["camera/rgb"].dtype == np.float64 and got["camera/rgb"].shape == (12, 4, 6, 3)
    assert "joints/mode.next_t_ns" in got and "joints/q.next_t_ns" not in got


def test_multirate_reader_aligned_duplicate_timestamps_take_the_later_sample(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    got = ep.aligned(clock="camera", channels=["camera/rgb"])
    assert list(got["camera/rgb.row"]) == [0, 1, 2, 3, 5, 5, 6, 7, 8, 9, 10, 11]
    assert same_bits(got["camera/rgb"][4], m.streams["camera"].channels["rgb"].values[5])


@pytest.mark.parametrize("policy", ["hold", "nearest", "linear"])
def test_multirate_reader_aligned_ties_and_exact_staleness_match_reference(tmp_path: Path, policy: str) -> None:
    """Rows every 2.5 ms from T0 against the IMU's samples every 5 ms from T0 + 35 ms: every
    other row lies exactly between two samples (a nearest tie, a linear weight of 0.5) and
    exactly 2.5 ms from both (the staleness limit: still valid)."""
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    pol = policies_for(policy, m)
    start, end = T0, T0 + 400 * MS
    got = ep.aligned(rate_hz=400.0, start_ns=start, end_ns=end, policy=pol, max_staleness_ms=2.5)
    check_same(got, reference(m, rate_clock(400.0, start, end), pol, 2500 * 1000, drop=False))
    k = int(np.flatnonzero(got["t_ns"] == T0 + 37_500_000)[0])  # between 35 and 40 ms
    assert got["imu/acc.valid"][k]
    assert got["imu/acc.row"][k] == 0  # hold: the one before; nearest: the earlier at a tie
    if policy == "linear":
        assert got["imu/acc.next_row"][k] == 1
        a = m.streams["imu"].channels["acc"].values
        assert same_bits(got["imu/acc"][k], a[0] + (a[1] - a[0]) * 0.5)


def test_multirate_reader_aligned_fixed_rate_rounds_half_away_from_zero(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    got = ep.aligned(rate_hz=8e7, start_ns=T0, end_ns=T0 + 100, channels=["imu/acc"])
    assert list(got["t_ns"] - T0) == [0, 13, 25, 38, 50, 63, 75, 88, 100]  # k x 12.5 ns
    assert list(got["t_ns"]) == rate_clock(8e7, T0, T0 + 100)


def test_multirate_reader_aligned_staleness_edge_in_ms_and_ns(tmp_path: Path) -> None:
    m = Multi(streams={"s": Stream({"x": Chan(np.array([1.0, 2.0]))}, t_ns=np.array([T0 + MS, T0 + 2 * MS]))})
    ep = wshard_reader.open_episode(make_multi(tmp_path, "ep-edge", m))
    # Rows at 1, 2, 3, 4 ms: row 3 is exactly 1 ms after the last sample.
    got = ep.aligned(rate_hz=1000.0, start_ns=T0 + MS, end_ns=T0 + 4 * MS, max_staleness_ms=1.0)
    assert list(got["s/x.valid"]) == [True, True, True, False]
    got = ep.aligned(rate_hz=1000.0, start_ns=T0 + MS, end_ns=T0 + 4 * MS, max_staleness_ns=MS - 1)
    assert list(got["s/x.valid"]) == [True, True, False, False]
    got = ep.aligned(rate_hz=1000.0, start_ns=T0 + MS, end_ns=T0 + 4 * MS, max_staleness_ns=0)
    assert list(got["s/x.valid"]) == [True, True, False, False]


def test_multirate_reader_aligned_rows_without_values_gather_from_streams(tmp_path: Path) -> None:
    folder, m = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    lazy = ep.aligned(clock="camera", values=False)
    full = ep.aligned(clock="camera")
    assert "joints/q" not in lazy and "joints/q.row" in lazy
    q = ep.stream("joints")["q"]
    rows = lazy["joints/q.row"]
    assert (rows >= 0).all()
    assert same_bits(q[rows], full["joints/q"])


def test_multirate_reader_aligned_single_stream_episode(tmp_path: Path) -> None:
    from conftest import make_single

    s = Stream({"x": Chan(np.arange(5, dtype=np.float32))}, t_ns=T0 + np.arange(5, dtype=np.int64) * 10 * MS)
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    got = ep.aligned(rate_hz=200.0, policy="linear")
    assert same_bits(got["main/x"], np.arange(0, 4.01, 0.5, dtype=np.float64).astype(np.float32))
    assert got["main/x.valid"].all() and len(got["t_ns"]) == 9


@pytest.mark.parametrize(
    "kwargs,error,field",
    [
        ({"clock": "camera", "rate_hz": 10.0}, wshard_reader.BadArgumentError, "clock"),
        ({}, wshard_reader.BadArgumentError, "clock"),
        ({"clock": "lidar"}, wshard_reader.UnknownNameError, "clock"),
        ({"clock": "camera", "policy": {"joints/tau": "hold"}}, wshard_reader.UnknownNameError, "joints/tau"),
        ({"clock": "camera", "policy": {"grip": "linear"}}, wshard_reader.BadArgumentError, "joints/grip"),
        ({"clock": "camera", "policy": "cubic"}, wshard_reader.BadArgumentError, "policy"),
        ({"clock": "camera", "policy": {"q": "spline"}}, wshard_reader.BadArgumentError, 'policy["q"]'),
        ({"rate_hz": 0.0}, wshard_reader.BadArgumentError, "rate_hz"),
        ({"rate_hz": 10.0, "start_ns": 5, "end_ns": 1}, wshard_reader.BadArgumentError, "start_ns"),
        ({"clock": "camera", "start_ns": 5}, wshard_reader.BadArgumentError, "start_ns"),
        ({"clock": "camera", "max_staleness_ms": -1}, wshard_reader.BadArgumentError, "max_staleness_ms"),
        (
            {"clock": "camera", "max_staleness_ms": 1, "max_staleness_ns": 1},
            wshard_reader.BadArgumentError,
            "max_staleness_ms",
        ),
        ({"clock": "camera", "channels": ["nope"]}, wshard_reader.UnknownNameError, "nope"),
    ],
)
def test_multirate_reader_aligned_bad_arguments(tmp_path: Path, kwargs, error, field) -> None:
    folder, _ = make(tmp_path)
    ep = wshard_reader.open_episode(folder)
    with pytest.raises(error) as e:
        ep.aligned(**kwargs)
    assert e.value.field == field, str(e.value)
    assert isinstance(e.value, wshard_reader.WshardReadError)


def test_multirate_reader_aligned_ambiguous_bare_channel(tmp_path: Path) -> None:
    chan = lambda: Chan(np.zeros(3, np.float32))  # noqa: E731
    t = T0 + np.arange(3, dtype=np.int64)
    m = Multi(streams={"left": Stream({"q": chan()}, t_ns=t), "right": Stream({"q": chan()}, t_ns=t)})
    ep = wshard_reader.open_episode(make_multi(tmp_path, "ep-two-arms", m))
    with pytest.raises(wshard_reader.BadArgumentError) as e:
        ep.aligned(clock="left", policy={"q": "nearest"})
    assert "left/q" in str(e.value) and "right/q" in str(e.value)
    assert set(ep.aligned(clock="left")) >= {"left/q", "right/q"}
