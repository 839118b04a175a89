""":class:`EpisodeSpec`: everything ``OPEN`` carries (the episode id, the channels of
:mod:`wshard_client._schema`, the timebase, durability and metadata), checked before
sending by the rules of :mod:`wshard_client._validate`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, List, Mapping, Sequence, Union

from ._flight import Flight, with_flight
from ._schema import Channel, Durability, Timebase
from ._validate import validate_spec
from .errors import SchemaError

__all__ = ["EpisodeSpec"]


@dataclass(init=False)
class EpisodeSpec:
    """Everything ``OPEN`` carries.

    Args:
        episode_id: 1..=128 bytes (the server's ``limits.max_episode_id_bytes``, at most
            200) of ``[A-Za-z0-9._-]``, not starting with ``.``, not ``quarantine``;
            becomes the directory and file-name stem.
        channels: the channels in schema order (the order of payloads in every step).
        env_id: free text.
        tick_hz: ticks: the rate (> 0); timestamps_ns: the nominal rate (0 = unknown).
        timebase: ``"ticks"`` (default) or ``"timestamps_ns"``.
        durability: ``"ack"`` (default, as the Rust client's ``OpenEpisode::new``),
            ``"chunk"`` or ``"server_default"``.
        metadata: a dict (sent as compact JSON) or JSON object text; stored under
            ``meta/episode.metadata``.
        flight: record in flight mode: ``True`` (the daemon's ``[flight]`` ring) or
            ``{"ring_seconds": S, "ring_bytes": B}`` (added to the metadata).
        latched: a stream whose last value goes into every trigger window.
    """

    episode_id: str
    channels: List[Channel]
    env_id: str
    tick_hz: float
    timebase: Timebase
    durability: Durability
    metadata_json: str

    def __init__(
        self,
        episode_id: str,
        channels: Sequence[Channel],
        env_id: str = "",
        tick_hz: float = 0.0,
        timebase: Union[Timebase, str, int] = Timebase.TICKS,
        durability: Union[Durability, str, int] = Durability.ACK,
        metadata: Union[Mapping[str, Any], str, None] = None,
        flight: Flight = None,
        latched: bool = False,
    ) -> None:
        self.episode_id = str(episode_id)
        self.channels = list(channels)
        self.env_id = str(env_id)
        self.tick_hz = float(tick_hz)
        self.timebase = Timebase.parse(timebase)
        self.durability = Durability.parse(durability)
        if metadata is None:
            self.metadata_json = ""
        elif isinstance(metadata, str):
            self.metadata_json = metadata
        else:
            try:
                self.metadata_json = json.dumps(dict(metadata), separators=(",", ":"))
            except (TypeError, ValueError) as e:
                raise SchemaError(f"metadata is not JSON-serializable: {e}") from None
        self.metadata_json = with_flight(self.metadata_json, flight, latched)

    @property
    def channel_step_bytes(self) -> List[int]:
        """Payload bytes of each channel, in schema order."""
        return [c.step_bytes for c in self.channels]

    @property
    def step_bytes(self) -> int:
        """Payload bytes of one timestep: the sum over the channels."""
        return sum(c.step_bytes for c in self.channels)

    def validate(self, max_frame_bytes: int, max_channels: int = 0xFFFF) -> None:
        """Check the schema as the server does (``OpenEpisode::validate``), against the
        server's ``max_frame_bytes`` (from ``HELLO_OK``).

        Raises:
            SchemaError: ``BAD_EPISODE_ID`` for the id, ``BAD_SCHEMA`` for the rest.
        """
        validate_spec(self, max_frame_bytes, max_channels)
