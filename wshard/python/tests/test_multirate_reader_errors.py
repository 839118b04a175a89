"""Typed errors: each names the file, and the stream and field when known."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import wshard_reader
from wshard_reader import _native
from wshard_reader._arrays import assemble

from conftest import Chan, Stream, make_single

T0 = 1_700_000_000_000_000_000


def small(codec: str = "none", chunk_steps: int = 0) -> Stream:
    n = 64
    return Stream(
        channels={"q": Chan(np.arange(n * 7, dtype=np.float32).reshape(n, 7), codec=codec)},
        t_ns=T0 + np.arange(n, dtype=np.int64) * 1_000_000,
        chunk_steps=chunk_steps,
    )


def chunk0(folder: Path) -> Path:
    return folder / f"{folder.name}_chunk_0000.wshard"


def q_offset(folder: Path) -> int:
    layout = _native.open_episode(str(folder)).stream_layout("main", True)
    tag, offset, _length = layout["chunks"][0]["channels"][0]
    assert tag == "inplace"
    return offset


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def test_multirate_reader_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(wshard_reader.EpisodeNotFoundError) as e:
        wshard_reader.open_episode(tmp_path / "nope")
    assert isinstance(e.value, FileNotFoundError)
    assert isinstance(e.value, wshard_reader.WshardReadError)
    assert e.value.path == str(tmp_path / "nope") and str(tmp_path / "nope") in str(e.value)


def test_multirate_reader_unknown_stream(tmp_path: Path) -> None:
    ep = wshard_reader.open_episode(make_single(tmp_path, "ep1", small()))
    with pytest.raises(wshard_reader.UnknownNameError) as e:
        ep.stream("joints")
    assert isinstance(e.value, LookupError)
    assert e.value.stream == "joints" and "stream `joints`" in str(e.value)


def test_multirate_reader_missing_chunk_file(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small(chunk_steps=16))
    ep = wshard_reader.open_episode(folder)
    gone = folder / "ep1_chunk_0002.wshard"
    gone.unlink()
    for verify in (True, False):
        with pytest.raises(wshard_reader.EpisodeNotFoundError) as e:
            ep.stream("main", verify=verify)
        assert e.value.path == str(gone) and e.value.stream == "main", verify
        assert "ep1_chunk_0002.wshard" in str(e.value)


def test_multirate_reader_damaged_chunk_fails_its_hash_then_its_crc(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small())
    flip_byte(chunk0(folder), q_offset(folder) + 5)
    ep = wshard_reader.open_episode(folder)
    with pytest.raises(wshard_reader.CorruptDataError) as e:
        ep.stream("main")
    assert e.value.path == str(chunk0(folder)) and "sha256" in str(e.value)
    assert e.value.stream == "main" and e.value.field == "sha256"
    # With the hash made to match, the block's CRC32C still catches it.
    _native._rehash_manifest(str(folder / "ep1_manifest.wshard"))
    with pytest.raises(wshard_reader.CorruptDataError) as e:
        ep.stream("main")
    assert e.value.field == "signal/q" and "crc32c" in str(e.value)
    assert e.value.path == str(chunk0(folder))
    # verify=False skips both checks for blocks viewed in place (documented).
    q = ep.stream("main", verify=False)["q"]
    assert q.tobytes() != small().channels["q"].values.tobytes()


def test_multirate_reader_damaged_compressed_block_fails_without_verify(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small(codec="zstd"))
    layout = _native.open_episode(str(folder)).stream_layout("main", True)
    assert isinstance(layout["chunks"][0]["channels"][0], np.ndarray)
    shard = chunk0(folder).read_bytes()
    # The zstd frame of signal/q: corrupt a byte in its middle via the manifest-free path.
    index = shard.find(b"\x28\xb5\x2f\xfd")  # zstd magic of the first compressed block
    assert index > 0
    flip_byte(chunk0(folder), index + 12)
    _native._rehash_manifest(str(folder / "ep1_manifest.wshard"))
    with pytest.raises(wshard_reader.CorruptDataError) as e:
        wshard_reader.open_episode(folder).stream("main", verify=False)
    assert e.value.path == str(chunk0(folder)) and e.value.stream == "main"
    assert e.value.field in ("signal/q", "reward", "done", "time/timestamps_ns")


def test_multirate_reader_truncated_chunk(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small())
    with open(chunk0(folder), "r+b") as f:
        f.truncate(os.path.getsize(chunk0(folder)) - 10)
    with pytest.raises(wshard_reader.CorruptDataError) as e:
        wshard_reader.open_episode(folder).stream("main", verify=False)
    assert e.value.path == str(chunk0(folder)) and "total_file_size" in str(e.value)


def test_multirate_reader_not_a_manifest(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small())
    (folder / "ep1_manifest.wshard").write_bytes(b"not a shard file at all, just text " * 4)
    with pytest.raises(wshard_reader.CorruptDataError) as e:
        wshard_reader.open_episode(folder)
    assert e.value.path == str(folder / "ep1_manifest.wshard") and "magic" in str(e.value)


def test_multirate_reader_file_replaced_after_validation(tmp_path: Path) -> None:
    folder = make_single(tmp_path, "ep1", small())
    layout = _native.open_episode(str(folder)).stream_layout("main", True)
    # Same bytes, new inode: the mapping must not trust what was validated before.
    copy = tmp_path / "copy.wshard"
    shutil.copyfile(chunk0(folder), copy)
    os.replace(copy, chunk0(folder))
    with pytest.raises(wshard_reader.WshardIOError) as e:
        assemble(layout)
    assert isinstance(e.value, OSError) and e.value.path == str(chunk0(folder))
    assert "changed after it was validated" in str(e.value)
