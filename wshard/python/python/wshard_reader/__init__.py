"""Read wshard-recorder episodes into numpy arrays.

    import wshard_reader
    ep = wshard_reader.open_episode("/var/lib/wshardd/EP")
    ep.streams                      # {name: StreamInfo}
    joints = ep.stream("joints")    # joints["q"] -> [T, 7] float32, joints.timestamps_ns
    ep.events()                     # [Event(t_ns, label, kind, data, ...)]
    view = ep.aligned(clock="camera", policy={"joints/q": "linear"}, max_staleness_ms=50)
    view["t_ns"], view["joints/q"], view["joints/q.valid"], view["joints/q.t_ns"]

See README.md beside this package for the whole API.
"""

from ._arrays import bf16_to_float32
from ._episode import ChannelSpec, Episode, Event, StreamData, StreamInfo, open_episode
from .errors import (
    BadArgumentError,
    CorruptDataError,
    EpisodeNotFoundError,
    InvalidEpisodeError,
    UnknownNameError,
    WshardIOError,
    WshardReadError,
)

__all__ = [
    "open_episode",
    "Episode",
    "StreamInfo",
    "ChannelSpec",
    "Event",
    "StreamData",
    "bf16_to_float32",
    "WshardReadError",
    "EpisodeNotFoundError",
    "WshardIOError",
    "CorruptDataError",
    "InvalidEpisodeError",
    "UnknownNameError",
    "BadArgumentError",
]
