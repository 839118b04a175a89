"""The typestore a bag's messages are deserialized with: built from the message
definitions the bag carries (ROS 1 connection records, rosbag2 sqlite3 schema 4+
``message_definitions``, MCAP schemas), so a bag written with other versions of the
message types still reads right; the types the bag does not define come from a default
store (``ros2_humble`` for rosbag2 unless the bag names its distribution, ``ros1_noetic``
for ROS 1)."""

from typing import Iterable, Optional, Tuple

from rosbags.interfaces.typing import Typesdict
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from .errors import BagError

#: Separator of the several IDL documents rosbag2 concatenates into one definition.
_IDL_SEP = "=" * 80 + "\n"


def default_store(ros1: bool, distro: Optional[str]) -> Typestore:
    """The built-in store for ``distro`` (``humble``, ``jazzy``, ...) when rosbags knows
    it, else ROS 1 Noetic or ROS 2 Humble."""
    if ros1:
        return get_typestore(Stores.ROS1_NOETIC)
    name = f"ROS2_{(distro or '').upper()}"
    store = Stores.__members__.get(name, Stores.ROS2_HUMBLE)
    return get_typestore(store)


def build_typestore(path: str, definitions: Iterable[Tuple[str, str, str]], fallback: Typestore) -> Typestore:
    """A typestore with the bag's own ``definitions`` (``(msgtype, format, text)``,
    format ``"msg"`` or ``"idl"``), and ``fallback``'s types for everything else.

    Raises:
        BagError: a definition the bag carries does not parse (naming the type).
    """
    typs: Typesdict = {}
    for msgtype, fmt, text in definitions:
        if not text:
            continue
        try:
            if fmt == "msg":
                typs.update(get_types_from_msg(text, msgtype))
            elif text.startswith(f"{_IDL_SEP}IDL: "):
                for part in text.split(_IDL_SEP)[1:]:
                    _, idl = part.split("\n", 1)
                    typs.update(get_types_from_idl(idl))
            else:
                typs.update(get_types_from_idl(text))
        except (TypesysError, ValueError) as e:
            raise BagError(path, f"message definition of {msgtype!r} does not parse: {e}") from None
    store = get_typestore(Stores.EMPTY)
    base = {k: v for k, v in fallback.fielddefs.items() if k not in typs}
    try:
        store.register({**base, **typs})
    except TypesysError as e:
        raise BagError(path, f"message definitions conflict: {e}") from None
    return store
