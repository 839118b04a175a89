"""Read wshard-recorder episodes into numpy arrays.

    import wshard_reader
    ep = wshard_reader.open_episode("/var/lib/wshardd/EP")
    ep.streams                      # {name: StreamInfo}
    joints = ep.stream("joints")    # joints["q"] -> [T, 7] float32, joints.timestamps_ns
    ep.events()                     # [Event(t_ns, label, kind, data, ...)]
    view = ep.aligned(clock="camera", policy={"joints/q": "linear"}, max_staleness_ms=50)
    view["t_ns"], view["joints/q"], view["joints/q.valid"], view["joints/q.t_ns"]

    # Published episodes on an S3-compatible store (range requests, the blob cache):
    shard = wshard_reader.open_remote_shard("s3://fleet/datasets/lab/pick/EP/EP_chunk_0000.wshard")
    shard.read_block("signal/q")    # one range request
    ep = wshard_reader.open_episode("s3://fleet/datasets/lab/pick/EP")   # pulled through the cache

See README.md beside this package for the whole API.
"""

from ._arrays import bf16_to_float32
from ._episode import ChannelSpec, Episode, Event, StreamData, StreamInfo, open_episode
from ._remote import BlobCache, RemoteShard, open_remote_shard, pull_episode
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
    "open_remote_shard",
    "pull_episode",
    "RemoteShard",
    "BlobCache",
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
