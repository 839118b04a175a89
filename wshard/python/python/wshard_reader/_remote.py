"""Remote-first reads of published episodes on an S3-compatible store.

The same URLs, reads and cache as ``wshard inspect|cat s3://...`` (docs/PUBLISH.md, "Remote
reads and the cache"):

- ``s3://BUCKET/KEY`` (a stored object) or
  ``s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE]`` (a file, or an episode,
  of a dataset version; the latest unless ``@VERSION``; ``EPISODE`` may be ``robot/episode``).
- A shard is opened with one range request for its first 64 KiB (header, index, string
  table; one more when the index is longer), then each block read is one range request of
  exactly the block. The requests are made here with boto3; the bytes go to the Rust
  extension, which parses and CRC-checks them with the ``wshard`` crate's reader.
- The blob cache (``$WSHARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/wshard``, else
  ``~/.cache/wshard``; ``blobs/sha256/hh/<hash>``), shared with the CLI: a blob it holds is
  read from it with no request; every use checks its SHA-256; written ``.partial`` then
  renamed after the hash check.

The endpoint is the ``endpoint`` argument, else ``$WSHARD_S3_ENDPOINT``; the region
``region``, else ``$WSHARD_S3_REGION``, else ``us-east-1``; the credentials boto3's
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, profile files).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from . import _native
from .errors import BadArgumentError, CorruptDataError, EpisodeNotFoundError, WshardIOError

PathLike = Union[str, "os.PathLike[str]"]

#: Bytes of the first range request (``wshard::read::DEFAULT_PREFETCH_BYTES``).
PREFETCH_BYTES = 64 * 1024
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DATASET_PART = re.compile(r"^[a-z0-9_-]{1,64}$")
_OWN_KEYS = ("versions/", "catalog/")
_COPY_BUF = 1 << 20


def cache_root() -> Path:
    """``$WSHARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/wshard``, else ``~/.cache/wshard``."""
    if os.environ.get("WSHARD_CACHE_DIR"):
        return Path(os.environ["WSHARD_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "wshard"
    return Path.home() / ".cache" / "wshard"


def _hash_file(path: Path) -> Tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(_COPY_BUF)
            if not b:
                break
            h.update(b)
            size += len(b)
    return h.hexdigest(), size


def _partial(path: Path) -> Path:
    return path.with_name(f"{path.name}.partial-{os.getpid()}-{time.monotonic_ns()}")


class BlobCache:
    """The content-hash blob cache (the CLI's layout)."""

    def __init__(self, root: Optional[PathLike] = None) -> None:
        self.root = Path(root) if root is not None else cache_root()

    def path(self, sha256: str) -> Path:
        if not _SHA256.match(sha256):
            raise BadArgumentError(f"{sha256!r} is not a SHA-256 (64 lower-case hex digits)")
        return self.root / "blobs" / "sha256" / sha256[:2] / sha256

    def lookup(self, sha256: str, size: Optional[int] = None) -> Optional[Path]:
        """The cached blob, checked (size, SHA-256), its use time set; ``None`` when absent.
        An entry that does not check is removed."""
        p = self.path(sha256)
        try:
            st = p.stat()
        except FileNotFoundError:
            return None
        try:
            hashed = _hash_file(p)[0]
        except FileNotFoundError:
            return None  # removed meanwhile by another process (its gc, or its own check)
        if (size is not None and st.st_size != size) or hashed != sha256:
            p.unlink(missing_ok=True)
            return None
        try:
            os.utime(p)
        except OSError:
            pass  # a read-only cache still serves
        return p

    def lookup_or_miss(self, sha256: str, size: Optional[int] = None) -> Optional[Path]:
        """:meth:`lookup` for a read, which the cache only saves requests: a cache that
        cannot be read (a directory that cannot be created, a disk error) is a miss."""
        try:
            return self.lookup(sha256, size)
        except OSError:
            return None

    def keep(self, sha256: str, data: bytes) -> None:
        """:meth:`insert` bytes already checked, when the cache can be written (as
        :meth:`lookup_or_miss`: a cache that cannot be written does not fail the read)."""
        try:
            self.insert(sha256, data)
        except OSError:
            pass

    def insert(self, sha256: str, data: bytes) -> Path:
        """Cache bytes already fetched when they hash to ``sha256``."""
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise CorruptDataError(f"blob {sha256}: the bytes hash to {got}", field="sha256")
        p = self.path(sha256)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = _partial(p)
        try:
            tmp.write_bytes(data)
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)
        return p


class _Store:
    """A boto3 client on one bucket, counting read requests and bytes."""

    def __init__(self, bucket: str, endpoint: Optional[str], region: Optional[str], client: Any) -> None:
        self.bucket = bucket
        self.requests = 0
        self.bytes = 0
        if client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as e:  # pragma: no cover - a setup problem
                raise WshardIOError(
                    f"reading s3:// URLs needs boto3 ({e}): python3 -m pip install boto3"
                ) from e
            endpoint = endpoint or os.environ.get("WSHARD_S3_ENDPOINT") or None
            region = region or os.environ.get("WSHARD_S3_REGION") or "us-east-1"
            client = boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name=region,
                config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
            )
        self.client = client

    def _call(self, key: str, **kw: Any) -> Dict[str, Any]:
        self.requests += 1
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key, **kw)
        except Exception as e:  # botocore's exceptions, without importing botocore here
            code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise EpisodeNotFoundError(f"s3://{self.bucket}/{key}: not found", path=key) from e
            raise WshardIOError(f"s3://{self.bucket}/{key}: {e}", path=key) from e

    def get_range(self, key: str, offset: int, length: int) -> Tuple[bytes, int]:
        r = self._call(key, Range=f"bytes={offset}-{offset + max(length, 1) - 1}")
        data = r["Body"].read()
        self.bytes += len(data)
        total = int(str(r.get("ContentRange", "")).rsplit("/", 1)[-1] or len(data))
        return data, total

    def get(self, key: str) -> bytes:
        data = self._call(key)["Body"].read()
        self.bytes += len(data)
        return data

    def download(self, key: str, out: Any) -> Tuple[str, int]:
        body = self._call(key)["Body"]
        h = hashlib.sha256()
        size = 0
        while True:
            b = body.read(_COPY_BUF)
            if not b:
                break
            h.update(b)
            out.write(b)
            size += len(b)
            self.bytes += len(b)
        return h.hexdigest(), size


@dataclass
class ParsedUrl:
    """A parsed ``s3://`` URL: ``dataset`` is ``None`` for a plain object."""

    bucket: str
    key: str
    prefix: str = ""
    dataset: Optional[str] = None
    version: Optional[str] = None
    rest: str = ""


def parse_url(url: str) -> ParsedUrl:
    """Parse ``url`` (the forms above); :class:`BadArgumentError` saying what is wrong."""

    def bad(reason: str) -> BadArgumentError:
        return BadArgumentError(
            f"{url}: {reason} (expected s3://BUCKET/KEY or "
            "s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE])"
        )

    if not url.startswith("s3://"):
        raise bad("not an s3:// URL")
    bucket, sep, key = url[len("s3://"):].partition("/")
    if not bucket or not sep:
        raise bad("no bucket or no key")
    if not key or key.endswith("/"):
        raise bad("empty key or a key ending with `/`")
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise bad("empty, `.` or `..` path segment")
    for i, p in enumerate(parts):
        if p != "datasets" or i + 3 > len(parts):
            continue
        name, at, version = parts[i + 2].partition("@")
        if not (_DATASET_PART.match(parts[i + 1]) and _DATASET_PART.match(name)):
            continue
        rest = "/".join(parts[i + 3:])
        if not at and (rest == "latest.json" or rest.startswith(_OWN_KEYS)):
            break
        if at and not _SHA256.match(version):
            raise bad("the version after `@` is not 64 lower-case hex digits")
        return ParsedUrl(bucket, key, "".join(f"{q}/" for q in parts[:i]),
                         f"{parts[i + 1]}/{name}", version or None, rest)
    return ParsedUrl(bucket, key)


def _blob_hash(key: str) -> Optional[str]:
    parts = key.split("/")
    if len(parts) >= 4 and parts[-4:-2] == ["blobs", "sha256"] and _SHA256.match(parts[-1]) \
            and parts[-2] == parts[-1][:2]:
        return parts[-1]
    return None


def _version_manifest(store: _Store, cache: BlobCache, u: ParsedUrl) -> Tuple[str, Dict[str, Any]]:
    base = f"{u.prefix}datasets/{u.dataset}/"
    version = u.version
    if version is None:
        latest = json.loads(store.get(base + "latest.json"))
        version = str(latest.get("version", ""))
        if not _SHA256.match(version):
            raise CorruptDataError(f"s3://{u.bucket}/{base}latest.json: no valid version", field="version")
    cached = cache.lookup_or_miss(version)
    if cached is not None:
        data = cached.read_bytes()
    else:
        data = store.get(f"{base}versions/{version}.json")
        if hashlib.sha256(data).hexdigest() != version:
            raise CorruptDataError(
                f"s3://{u.bucket}/{base}versions/{version}.json does not hash to its name", field="sha256"
            )
        cache.keep(version, data)
    return version, json.loads(data)


def _resolve(store: _Store, cache: BlobCache, u: ParsedUrl) -> Dict[str, Any]:
    """``{"kind": "blob", key, sha256, size}`` or ``{"kind": "episode", key, entry, version}``."""
    if u.dataset is None:
        return {"kind": "blob", "key": u.key, "sha256": _blob_hash(u.key), "size": None}
    version, m = _version_manifest(store, cache, u)
    episodes = m.get("episodes", {})
    if u.rest in episodes:
        return {"kind": "episode", "key": u.rest, "entry": episodes[u.rest], "version": version}
    for k, ep in episodes.items():
        if u.rest.startswith(k + "/"):
            f = ep["files"].get(u.rest[len(k) + 1:])
            if f is not None:
                key = f"{u.prefix}blobs/sha256/{f['sha256'][:2]}/{f['sha256']}"
                return {"kind": "blob", "key": key, "sha256": f["sha256"], "size": f["size"]}
            raise EpisodeNotFoundError(
                f"dataset {u.dataset} version {version}: file {u.rest!r} of episode {k} not found; "
                f"it holds: {', '.join(sorted(ep['files']))}", path=u.rest)
    raise EpisodeNotFoundError(
        f"dataset {u.dataset} version {version}: episode {u.rest!r} not found; it holds: "
        f"{', '.join(sorted(episodes)) or 'nothing'}", path=u.rest)


class RemoteShard:
    """A stored shard read by range (or from the cache)."""

    def __init__(self, url: str, store: _Store, cache: BlobCache, blob: Dict[str, Any]) -> None:
        self.url = url
        self.key: str = blob["key"]
        self._store = store
        cached = cache.lookup_or_miss(blob["sha256"], blob["size"]) if blob["sha256"] else None
        self.from_cache = cached is not None
        if cached is not None:
            fd = os.open(cached, os.O_RDONLY)
            self._fd: Optional[int] = fd
            size = os.fstat(fd).st_size
            head = os.pread(fd, PREFETCH_BYTES, 0)
            fetch = lambda off, n: os.pread(fd, n, off)  # noqa: E731
        else:
            self._fd = None
            head, size = store.get_range(self.key, 0, PREFETCH_BYTES)
            # An object of another size than the manifest's, or fetched whole and of another
            # SHA-256, is not the blob it names (a larger one is checked block by block).
            if blob["size"] is not None and size != blob["size"]:
                raise CorruptDataError(
                    f"{url}: {self.key} is {size} bytes, {blob['size']} expected", field="size")
            if len(head) == size and blob["sha256"]:
                got = hashlib.sha256(head).hexdigest()
                if got != blob["sha256"]:
                    raise CorruptDataError(
                        f"{url}: {self.key} hashes to sha256 {got}, not {blob['sha256']}",
                        field="sha256")
                cache.keep(blob["sha256"], head)
            key = self.key
            fetch = lambda off, n: store.get_range(key, off, n)[0]  # noqa: E731
        self._native = _native.open_ranged_shard(url, fetch, size, head)

    @property
    def requests(self) -> int:
        """Requests made to the store for this shard so far: resolving the URL
        (``latest.json``, the version manifest unless cached), opening, and each block."""
        return self._store.requests

    @property
    def bytes_fetched(self) -> int:
        """Bytes received from the store for this shard so far (as :attr:`requests`)."""
        return self._store.bytes

    @property
    def names(self) -> list:
        return self._native.names()

    @property
    def header(self) -> Dict[str, int]:
        return self._native.header()

    def entry(self, name: str) -> Dict[str, int]:
        return self._native.entry(name)

    def read_block(self, name: str) -> bytes:
        """The uncompressed, CRC-checked bytes of block ``name``: one range request (none
        from the cache); :class:`CorruptDataError` naming the URL and the block when bad."""
        return self._native.read_block(name)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RemoteShard":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def open_remote_shard(url: str, *, endpoint: Optional[str] = None, region: Optional[str] = None,
                      cache_dir: Optional[PathLike] = None, client: Any = None) -> RemoteShard:
    """Open the stored shard ``url`` names (an object, or a file of a dataset episode)."""
    u = parse_url(url)
    store = _Store(u.bucket, endpoint, region, client)
    cache = BlobCache(cache_dir)
    r = _resolve(store, cache, u)
    if r["kind"] != "blob":
        raise BadArgumentError(
            f"{url} names episode {r['key']}, not one of its files ({', '.join(sorted(r['entry']['files']))})"
        )
    return RemoteShard(url, store, cache, r)


def pull_episode(url: str, directory: Optional[PathLike] = None, *, endpoint: Optional[str] = None,
                 region: Optional[str] = None, cache_dir: Optional[PathLike] = None,
                 client: Any = None) -> Path:
    """Materialize the dataset episode ``url`` names as a directory (default
    ``<cache>/episodes/<version>/<episode>``) through the blob cache, every file SHA-256
    checked; files already there with the right hash are left alone. Returns the episode
    directory, which :func:`open_episode` reads."""
    u = parse_url(url)
    store = _Store(u.bucket, endpoint, region, client)
    cache = BlobCache(cache_dir)
    r = _resolve(store, cache, u)
    if r["kind"] != "episode":
        raise BadArgumentError(f"{url} does not name a dataset episode")
    base = Path(directory) if directory is not None else cache.root / "episodes" / r["version"]
    ep_dir = base.joinpath(*r["key"].split("/"))
    for name, f in sorted(r["entry"]["files"].items()):
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts) or name.startswith("/"):
            raise CorruptDataError(f"episode {r['key']}: file name {name!r} leaves the episode", field=name)
        to = ep_dir.joinpath(*parts)
        if to.is_file() and _hash_file(to) == (f["sha256"], f["size"]):
            continue
        blob = cache.lookup(f["sha256"], f["size"])
        if blob is None:
            blob = cache.path(f["sha256"])
            blob.parent.mkdir(parents=True, exist_ok=True)
            tmp = _partial(blob)
            key = f"{u.prefix}blobs/sha256/{f['sha256'][:2]}/{f['sha256']}"
            try:
                with open(tmp, "wb") as out:
                    got = store.download(key, out)
                if got != (f["sha256"], f["size"]):
                    raise CorruptDataError(
                        f"s3://{u.bucket}/{key}: the store holds sha256 {got[0]}, {got[1]} bytes; "
                        f"expected {f['sha256']}, {f['size']} bytes", path=key, field="sha256")
                os.replace(tmp, blob)
            finally:
                tmp.unlink(missing_ok=True)
        to.parent.mkdir(parents=True, exist_ok=True)
        tmp = _partial(to)
        try:
            shutil.copyfile(blob, tmp)
            if _hash_file(tmp) != (f["sha256"], f["size"]):
                raise CorruptDataError(f"{to}: copy does not hash to {f['sha256']}", field="sha256")
            os.replace(tmp, to)
        finally:
            tmp.unlink(missing_ok=True)
    return ep_dir
