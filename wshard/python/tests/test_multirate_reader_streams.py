"""Per-stream arrays: values bit-exact against the numpy arrays written, zero-copy where the
block is stored raw and aligned, one copy otherwise."""

from __future__ import annotations

import gc
import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import wshard_reader
from wshard_reader import _native

from conftest import GOLDEN_DATADIR, REPO, Chan, Stream, make_single, mapped, same_bits

T0 = 1_700_000_000_000_000_000


def joints(n: int, rng: np.random.Generator) -> Stream:
    return Stream(
        channels={
            "q": Chan(rng.standard_normal((n, 7)).astype(np.float32)),
            "img": Chan(rng.integers(0, 255, (n, 4, 5, 3), dtype=np.uint8)),
            "count": Chan(np.arange(n, dtype=np.int64) * -3),
            "ok": Chan(np.arange(n) % 3 == 0),
            "cmd": Chan(rng.standard_normal((n, 2)), lane="action"),
        },
        t_ns=T0 + np.arange(n, dtype=np.int64) * 1_000_000 + rng.integers(0, 1000, n),
    )


def test_multirate_reader_single_stream_zero_copy(tmp_path: Path) -> None:
    s = joints(50, np.random.default_rng(1))
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    assert ep.layout == "single" and list(ep.streams) == ["main"]
    data = ep.stream("main")
    assert sorted(data) == sorted(s.channels)
    for name, c in s.channels.items():
        a = data[name]
        assert same_bits(a, c.values), name
        assert not a.flags.owndata and not a.flags.writeable and a.flags.aligned, name
        assert mapped(a), name
    assert same_bits(data.timestamps_ns, s.t_ns.astype("<i8"))
    assert mapped(data.timestamps_ns)


def test_multirate_reader_arrays_outlive_the_episode(tmp_path: Path) -> None:
    s = joints(20, np.random.default_rng(2))
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    q = ep.stream("main")["q"]
    del ep
    gc.collect()
    assert mapped(q) and same_bits(q, s.channels["q"].values)


def test_multirate_reader_multi_chunk_stream_is_joined(tmp_path: Path) -> None:
    s = joints(23, np.random.default_rng(3))
    s.chunk_steps = 5
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    assert ep.streams["main"].chunks == 5 and ep.streams["main"].steps == 23
    data = ep.stream("main")
    for name, c in s.channels.items():
        assert same_bits(data[name], c.values), name
        assert data[name].flags.owndata, name  # one copy: the join
    assert same_bits(data.timestamps_ns, s.t_ns.astype("<i8"))


def test_multirate_reader_stream_chunks_are_each_in_place(tmp_path: Path) -> None:
    s = joints(23, np.random.default_rng(5))
    s.chunk_steps = 10
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    parts = ep.stream_chunks("main")
    assert [len(p.timestamps_ns) for p in parts] == [10, 10, 3]
    for name, c in s.channels.items():
        assert all(mapped(p[name]) for p in parts), name
        assert same_bits(np.concatenate([p[name] for p in parts]), c.values), name
    assert same_bits(np.concatenate([p.timestamps_ns for p in parts]), s.t_ns.astype("<i8"))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_multirate_reader_compressed_blocks_are_decoded_once(tmp_path: Path, codec: str) -> None:
    n = 400
    s = Stream(
        channels={
            "q": Chan(np.repeat(np.arange(n // 8, dtype=np.float32), 8 * 7).reshape(n, 7), codec=codec),
            "raw": Chan(np.arange(n, dtype=np.float64)),
        },
        t_ns=T0 + np.arange(n, dtype=np.int64) * 5_000_000,
    )
    folder = make_single(tmp_path, "ep1", s)
    layout = _native.open_episode(str(folder)).stream_layout("main", True)
    assert isinstance(layout["chunks"][0]["channels"][0], np.ndarray)  # decoded in Rust
    assert isinstance(layout["chunks"][0]["channels"][1], tuple)  # raw: in place
    data = wshard_reader.open_episode(folder).stream("main")
    assert same_bits(data["q"], s.channels["q"].values)
    assert not mapped(data["q"]) and data["q"].flags.aligned
    assert mapped(data["raw"]) and same_bits(data["raw"], s.channels["raw"].values)


def test_multirate_reader_unaligned_raw_blocks_are_copied_aligned(tmp_path: Path) -> None:
    # u8 [3] then f64 with file alignment 0: for some n the f64 block starts off 8.
    for n in range(5, 13):
        s = Stream(
            channels={
                "b": Chan(np.arange(n * 3, dtype=np.uint8).reshape(n, 3)),
                "x": Chan(np.linspace(-1, 1, n)),
            },
            tick_hz=100.0,
            alignment=0,
        )
        folder = make_single(tmp_path / str(n), "ep1", s)
        layout = _native.open_episode(str(folder)).stream_layout("main", True)
        blocks = dict(zip((c["name"] for c in layout["channels"]), layout["chunks"][0]["channels"]))
        if blocks["x"][1] % 8 != 0:
            break
    else:
        pytest.fail("no misaligned f64 block written")
    x = wshard_reader.open_episode(folder).stream("main")["x"]
    assert x.flags.aligned and not mapped(x) and same_bits(x, s.channels["x"].values)


def test_multirate_reader_every_dtype(tmp_path: Path) -> None:
    n = 9
    rng = np.random.default_rng(4)
    chans = {}
    for code in ["f64", "f32", "f16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8"]:
        dt = wshard_reader._arrays.numpy_dtype(code)
        chans[code] = Chan(rng.integers(0, 100, (n, 2)).astype(dt))
    chans["bool"] = Chan(rng.integers(0, 2, (n, 3)).astype(bool))
    bf = np.array([1.0, -2.5, 3.25], dtype=np.float32)
    chans["bf16"] = Chan(np.tile((bf.view(np.uint32) >> 16).astype(np.uint16), (n, 1)), dtype="bf16")
    s = Stream(channels=chans, tick_hz=50.0)
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    data = ep.stream("main")
    for name, c in chans.items():
        assert same_bits(data[name], c.values), name
    assert ep.streams["main"].channels[-1].dtype == "bf16"
    assert np.array_equal(wshard_reader.bf16_to_float32(data["bf16"])[0], bf)


def test_multirate_reader_ticks_stream_without_timestamps(tmp_path: Path) -> None:
    s = Stream(channels={"x": Chan(np.arange(10, dtype=np.float32))}, tick_hz=250.0, chunk_steps=4)
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", s))
    info = ep.streams["main"]
    assert info.timebase == "ticks" and info.tick_hz == 250.0
    assert same_bits(ep.stream("main").timestamps_ns, np.arange(10, dtype=np.int64) * 4_000_000)


def _independent_reader():
    """The Python client tests' own WShard parser (no Rust), loaded under another name."""
    path = REPO / "ingest-adapters" / "python" / "tests" / "shard_parse.py"
    spec = importlib.util.spec_from_file_location("independent_wshard_reader", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_multirate_reader_reads_a_wshardd_0_1_episode(tmp_path: Path) -> None:
    """golden/datadir-v0.1: written by the released daemon; values are computed (README)."""
    shutil.copytree(GOLDEN_DATADIR / "legacy-complete", tmp_path / "legacy-complete")
    ep = wshard_reader.open_episode(tmp_path / "legacy-complete")
    assert list(ep.streams) == ["main"] and ep.status == "complete"
    data = ep.stream("main")
    i = np.arange(25)  # generate.py: [float(i), i + 0.5, -float(i)], [i * 0.25, -i * 0.25]
    q = np.stack([i.astype(np.float64), i + 0.5, -(i.astype(np.float64))], axis=1)
    assert same_bits(data["q"], q.astype(np.float32))
    assert same_bits(data["cmd"], np.stack([i * 0.25, -i * 0.25], axis=1).astype(np.float32))
    assert same_bits(data["ok"], (np.arange(25) % 3 == 0).reshape(25, *data["ok"].shape[1:]))
    assert same_bits(data.timestamps_ns, 1_700_000_000_000_000_000 + np.arange(25, dtype=np.int64) * 20_000_000)
    # The same bytes as an independent pure-Python parser of the files reads.
    other = _independent_reader().read_episode(tmp_path, "legacy-complete")
    for name in ["q", "ok"]:
        assert data[name].tobytes() == other.channel(f"signal/{name}")
    assert data["cmd"].tobytes() == other.channel("action/cmd")
    assert data.timestamps_ns.tolist() == other.timestamps


def test_multirate_reader_unrecovered_wshardd_0_1_episode_reads_empty(tmp_path: Path) -> None:
    """legacy-recording: cut by SIGKILL before its first chunk was published; until recovery
    turns its journals into chunks, its manifest lists none."""
    shutil.copytree(GOLDEN_DATADIR / "legacy-recording", tmp_path / "legacy-recording")
    ep = wshard_reader.open_episode(tmp_path / "legacy-recording")
    assert ep.status == "recording" and ep.streams["main"].steps == 0
    data = ep.stream("main")
    assert len(data) == 0 and data.timestamps_ns.shape == (0,)
