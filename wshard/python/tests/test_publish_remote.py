"""test_publish_remote_*: the Python reader on s3:// URLs, against a real S3-compatible server
(s3s-fs 0.14.1 on loopback with access keys: ``$WSHARD_S3S_FS``, else ``s3s-fs`` on PATH)
and episodes published by the real ``wshard publish`` (``$WSHARD_BIN``, else
``target/debug/wshard``): a remote episode read block by block equals the local one; one
block costs 2 requests and at most the block + 64 KiB; a corrupt remote block is a
CorruptDataError naming the URL and the block; the cache serves a second read with no
request; ``open_episode`` on an episode URL.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Dict, Iterator, List

import numpy as np
import pytest

import wshard_reader
from wshard_reader import CorruptDataError, EpisodeNotFoundError, UnknownNameError

from conftest import GOLDEN_DATADIR, REPO, Chan, Multi, Stream, make_multi, same_bits

ACCESS_KEY = "wshard-test-key"
SECRET_KEY = "wshard-Secret-9f4e2c7a1b"
BUCKET = "fleet"
INSTALL = ("s3s-fs 0.14.1 not found: cargo install s3s-fs@0.14.1 --features binary --locked "
           "--root ../tools and set WSHARD_S3S_FS=../tools/bin/s3s-fs (tests/all.sh does this)")


def _binary(var: str, default: Path, hint: str) -> str:
    p = os.environ.get(var) or (str(default) if default.is_file() else shutil.which(default.name))
    if not p or not os.path.isfile(p):
        pytest.fail(hint)
    return p


class S3:
    """One s3s-fs process on a free loopback port, its store in ``root``."""

    def __init__(self, root: Path) -> None:
        exe = _binary("WSHARD_S3S_FS", Path("s3s-fs"), INSTALL)
        self.root = root / "store"
        (self.root / BUCKET).mkdir(parents=True)
        env = dict(os.environ, RUST_LOG="info", NO_COLOR="1")
        self.proc = subprocess.Popen(
            [exe, "--host", "127.0.0.1", "--port", "0", "--access-key", ACCESS_KEY,
             "--secret-key", SECRET_KEY, str(self.root)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
        )
        found: List[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                m = re.search(r"server is running at (http://\S+)", re.sub(r"\x1b\[[0-9;]*m", "", line))
                if m and not found:
                    found.append(m.group(1))
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30):
            self.proc.kill()
            pytest.fail("s3s-fs did not log its port within 30 s")
        self.endpoint = found[0]

    def object_path(self, key: str) -> Path:
        return self.root / BUCKET / key

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3]:
    server = S3(tmp_path)
    for k, v in {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                 "WSHARD_S3_ENDPOINT": server.endpoint, "WSHARD_S3_BUCKET": BUCKET,
                 "WSHARD_S3_ALLOW_HTTP": "1", "WSHARD_CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "WSHARD_S3_PREFIX", "XDG_CACHE_HOME"):
        monkeypatch.delenv(k, raising=False)
    yield server
    server.stop()


def wshard(*args: str) -> subprocess.CompletedProcess:
    exe = _binary("WSHARD_BIN", REPO / "target" / "debug" / "wshard",
                  "the wshard binary is missing: cargo build -p wshard-cli (or set WSHARD_BIN)")
    return subprocess.run([exe, *args], capture_output=True, check=False)


def publish(data_dir: Path, *episodes: str) -> str:
    """Publish with the real ``wshard publish``; the version hash."""
    r = wshard("publish", "--dataset", "lab/pick", "--data-dir", str(data_dir), "--json", *episodes)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)["version_hash"]


def local_blocks(path: Path) -> Dict[str, bytes]:
    """Every block of a local shard, read by ``wshard cat`` (the CLI's own reader)."""
    r = wshard("inspect", str(path), "--json")
    assert r.returncode == 0, r.stderr.decode()
    names = [b["name"] for b in json.loads(r.stdout)["blocks"]]
    out = {}
    for n in names:
        c = wshard("cat", str(path), n)
        assert c.returncode == 0, c.stderr.decode()
        out[n] = c.stdout
    return out


def big_multi(root: Path) -> Path:
    """A multi-stream episode whose joints chunk is far larger than 64 KiB."""
    n = 20_000
    joints = Stream(
        channels={"q": Chan(np.arange(n * 7, dtype=np.float32).reshape(n, 7)),
                  "cmd": Chan(np.linspace(0, 1, n * 2, dtype=np.float64).reshape(n, 2))},
        t_ns=1_700_000_000_000_000_000 + np.arange(n, dtype=np.int64) * 1_000_000,
    )
    imu = Stream(channels={"acc": Chan(np.ones((40, 3), dtype=np.float32))}, tick_hz=200.0)
    return make_multi(root, "multi-ep", Multi(streams={"joints": joints, "imu": imu}))


def test_publish_remote_episode_read_block_by_block_equals_local(s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(GOLDEN_DATADIR / "legacy-complete", data / "legacy-complete")
    big_multi(data)
    publish(data)
    files = [("legacy-complete", p.name) for p in sorted((data / "legacy-complete").iterdir())]
    files += [("multi-ep", str(p.relative_to(data / "multi-ep")))
              for p in sorted((data / "multi-ep" / "streams").rglob("*.wshard"))]
    assert len(files) >= 6
    for ep, rel in files:
        url = f"s3://{BUCKET}/datasets/lab/pick/{ep}/{rel}"
        with wshard_reader.open_remote_shard(url) as shard:
            want = local_blocks(data / ep / rel)
            assert shard.names == list(want)
            for name, b in want.items():
                assert shard.read_block(name) == b, (url, name)


def test_publish_remote_one_block_costs_at_most_three_requests(s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    ep = big_multi(data)
    version = publish(data)
    chunk = next((ep / "streams" / "joints").glob("*_chunk_0000.wshard"))
    size = chunk.stat().st_size
    assert size > 10 * 64 * 1024
    url = f"s3://{BUCKET}/datasets/lab/pick@{version}/multi-ep/streams/joints/{chunk.name}"
    shard = wshard_reader.open_remote_shard(url)
    opened = shard.requests
    assert opened == 2  # the version manifest, then the shard's first 64 KiB
    block = shard.read_block("signal/q")
    assert len(block) == 20_000 * 7 * 4
    assert shard.requests == 3  # the goal: <= 3 requests
    disk = shard.entry("signal/q")["disk_size"]
    manifest = 4096  # the version manifest of this one episode is well below 4 KiB
    assert shard.bytes_fetched <= disk + 64 * 1024 + manifest
    assert shard.bytes_fetched < size, "no full download"
    # Pinned and seen: the manifest comes from the cache; the shard costs 2 requests.
    again = wshard_reader.open_remote_shard(url)
    again.read_block("signal/q")
    assert again.requests == 2


def test_publish_remote_corrupt_block_is_a_corrupt_data_error(s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    ep = big_multi(data)
    publish(data)
    chunk = next((ep / "streams" / "joints").glob("*_chunk_0000.wshard"))
    sha = hashlib.sha256(chunk.read_bytes()).hexdigest()
    key = f"blobs/sha256/{sha[:2]}/{sha}"
    url = f"s3://{BUCKET}/{key}"
    entry = wshard_reader.open_remote_shard(url).entry("signal/q")
    stored = bytearray(s3.object_path(key).read_bytes())
    stored[entry["data_offset"] + 11] ^= 0x40
    s3.object_path(key).write_bytes(bytes(stored))
    shard = wshard_reader.open_remote_shard(url)
    with pytest.raises(CorruptDataError) as e:
        shard.read_block("signal/q")
    assert url in str(e.value) and "signal/q" in str(e.value)
    assert e.value.field == "signal/q"
    assert len(shard.read_block("signal/cmd")) == 20_000 * 2 * 8
    with pytest.raises(UnknownNameError):
        shard.read_block("signal/none")
    with pytest.raises(EpisodeNotFoundError):
        wshard_reader.open_remote_shard(f"s3://{BUCKET}/datasets/lab/pick/multi-ep/nope.wshard")


def test_publish_remote_cache_serves_the_second_read_with_no_request(s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(GOLDEN_DATADIR / "legacy-complete", data / "legacy-complete")
    publish(data)
    url = f"s3://{BUCKET}/datasets/lab/pick/legacy-complete/legacy-complete_chunk_0000.wshard"
    first = wshard_reader.open_remote_shard(url)
    assert not first.from_cache and first.requests >= 2
    b = first.read_block("signal/q")
    # The chunk came whole in the first request: cached (the CLI's cache too).
    second = wshard_reader.open_remote_shard(url)
    assert second.from_cache
    assert second.read_block("signal/q") == b
    assert second.requests == 1  # latest.json only: the manifest and the blob are cached
    r = wshard("cache", "stats", "--json")
    assert r.returncode == 0, r.stderr.decode()
    assert b'"blobs":2' in r.stdout.replace(b" ", b""), r.stdout


def test_publish_remote_object_that_is_not_its_blob_is_a_corrupt_data_error(
        s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(GOLDEN_DATADIR / "legacy-complete", data / "legacy-complete")
    publish(data)
    # chunk 0001's bytes (the same size, intact blocks) stored under chunk 0000's blob key.
    ep = data / "legacy-complete"
    c0 = (ep / "legacy-complete_chunk_0000.wshard").read_bytes()
    c1 = (ep / "legacy-complete_chunk_0001.wshard").read_bytes()
    assert len(c0) == len(c1) and c0 != c1
    sha = hashlib.sha256(c0).hexdigest()
    s3.object_path(f"blobs/sha256/{sha[:2]}/{sha}").write_bytes(c1)
    url = f"s3://{BUCKET}/datasets/lab/pick/legacy-complete/legacy-complete_chunk_0000.wshard"
    with pytest.raises(CorruptDataError) as e:
        wshard_reader.open_remote_shard(url)
    assert sha in str(e.value) and e.value.field == "sha256"
    assert wshard_reader.BlobCache().lookup(sha) is None


def test_publish_remote_reads_with_a_cache_that_cannot_be_written(
        s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    shutil.copytree(GOLDEN_DATADIR / "legacy-complete", data / "legacy-complete")
    publish(data)
    # The cache directory lies under a regular file: it can never be created (not even by
    # root). The cache only saves requests: the read still answers.
    (tmp_path / "not-a-dir").write_bytes(b"x")
    monkeypatch.setenv("WSHARD_CACHE_DIR", str(tmp_path / "not-a-dir" / "cache"))
    chunk = data / "legacy-complete" / "legacy-complete_chunk_0001.wshard"
    url = f"s3://{BUCKET}/datasets/lab/pick/legacy-complete/{chunk.name}"
    shard = wshard_reader.open_remote_shard(url)
    assert not shard.from_cache
    want = local_blocks(chunk)
    assert shard.names == list(want)
    for name, b in want.items():
        assert shard.read_block(name) == b, name


def test_publish_remote_open_episode_on_an_s3_url(s3: S3, tmp_path: Path) -> None:
    data = tmp_path / "data"
    big_multi(data)
    publish(data)
    remote = wshard_reader.open_episode(f"s3://{BUCKET}/datasets/lab/pick/multi-ep")
    local = wshard_reader.open_episode(data / "multi-ep")
    assert sorted(remote.streams) == sorted(local.streams) == ["imu", "joints"]
    for s in ("joints", "imu"):
        a, b = remote.stream(s), local.stream(s)
        for ch in local.streams[s].channels:
            assert same_bits(a[ch.name], b[ch.name]), (s, ch.name)
    # Pulled through the cache: a second open downloads nothing and rewrites nothing.
    again = wshard_reader.pull_episode(f"s3://{BUCKET}/datasets/lab/pick/multi-ep")
    assert again == Path(remote.path)
