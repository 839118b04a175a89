"""The one thing of an episode directory that the daemon takes from the wall clock is the
index's ``created_unix_ns``. After an import into a private daemon's data dir (the daemon
stopped), it is set to the bag's first log time, so the same bag gives the same bytes."""

import os
import re
from pathlib import Path

from .errors import BagImportError

#: The index is pretty-printed with two spaces, keys sorted: its own top-level key sits at
#: an indent of two (metadata's keys are deeper).
_CREATED = re.compile(rb'^  "created_unix_ns": \d+,$', re.MULTILINE)


def pin_created_time(data_dir: str, episode_id: str, t_ns: int) -> None:
    """Rewrite ``created_unix_ns`` of the episode's index to ``t_ns`` (atomically:
    a temporary file, fsync, rename, fsync of the directory).

    Raises:
        BagImportError: the index is missing or has no such key.
    """
    ep = Path(data_dir) / episode_id
    index = ep / f"{episode_id}_index.json"
    try:
        text = index.read_bytes()
    except OSError as e:
        raise BagImportError(f"{index}: cannot read the episode index: {e.strerror or e}") from None
    new, n = _CREATED.subn(b'  "created_unix_ns": %d,' % t_ns, text, count=1)
    if n != 1:
        raise BagImportError(f"{index}: no top-level created_unix_ns")
    tmp = index.with_name(index.name + ".import-tmp")
    with open(tmp, "wb") as f:
        f.write(new)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, index)
    fd = os.open(ep, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
