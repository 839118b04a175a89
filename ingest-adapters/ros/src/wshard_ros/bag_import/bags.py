"""Which reader opens a path: a ROS 1 ``.bag``, a rosbag2 directory (its
``metadata.yaml`` names the storage files and the ROS distribution; without it, every
``.db3`` / ``.mcap`` file in it), or one rosbag2 storage file (``.db3``, ``.mcap``)."""

from pathlib import Path
from typing import Any, List, Optional, Tuple

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .errors import BagError
from .mcap import MAGIC as MCAP_MAGIC
from .mcap import McapBag
from .ros1 import MAGIC as ROS1_MAGIC
from .ros1 import Ros1Bag
from .source import BagSource, Damage
from .sqlite import SQLITE_MAGIC, SqliteBag


def open_bag(path: str) -> List[BagSource]:
    """The readers of the bag at ``path`` (several for a split rosbag2 directory).

    Raises:
        BagError: the path does not exist, is no bag of a known kind, or cannot be read.
    """
    p = Path(path)
    if p.is_dir():
        return _open_dir(p)
    if not p.exists():
        raise BagError(path, "no such file or directory")
    return [_open_file(p, None)]


def _open_file(p: Path, distro: Optional[str]) -> BagSource:
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise BagError(str(p), f"cannot read: {e.strerror or e}") from None
    if head.startswith(ROS1_MAGIC[:9]):
        return Ros1Bag(str(p))
    if head.startswith(MCAP_MAGIC):
        return McapBag(str(p), distro)
    if head.startswith(SQLITE_MAGIC):
        return SqliteBag(str(p), distro)
    if not head:
        raise BagError(str(p), "empty file", offset=0)
    raise BagError(str(p), "not a ROS 1 bag, an MCAP file or a rosbag2 sqlite3 file (unknown magic)", offset=0)


def _metadata(d: Path) -> Tuple[List[Path], Optional[str], Optional[Damage]]:
    meta = d / "metadata.yaml"
    if not meta.exists():
        return [], None, Damage(str(d), "no metadata.yaml (the recording was not closed): storage files read directly")
    try:
        doc: Any = YAML(typ="safe").load(meta.read_text())
        info = doc["rosbag2_bagfile_information"]
        files = [d / Path(str(x)).name for x in info["relative_file_paths"]]
        mode = str(info.get("compression_mode", "") or "").lower()
        if mode not in ("", "none"):
            raise BagError(str(d), f"compression mode {mode!r} is not supported: decompress the bag first")
        distro = info.get("ros_distro")
        return files, str(distro) if distro else None, None
    except (OSError, YAMLError, KeyError, TypeError) as e:
        return [], None, Damage(str(meta), f"metadata unreadable ({e}): storage files read directly")


def _open_dir(d: Path) -> List[BagSource]:
    files, distro, note = _metadata(d)
    if not files:
        files = sorted(x for x in d.iterdir() if x.suffix in (".db3", ".mcap"))
    if not files:
        raise BagError(str(d), "a directory without .db3 or .mcap storage files")
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise BagError(str(d), f"storage files named by metadata.yaml are missing: {', '.join(missing)}")
    sources = [_open_file(f, distro) for f in files]
    if note is not None:
        sources[0].damage.insert(0, note)
    return sources
