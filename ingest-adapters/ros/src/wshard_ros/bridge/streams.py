"""One episode's recording state: the owner connection and, per stream of the mapping,
its converters, its assembler (shared streams), the last time pushed and its worker."""

import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from wshard_client import Channel, MultiStreamEpisode, Recorder

from .._base import Converter
from ..convert import converter_for
from ..mapping import BridgeMapping, TopicSpec
from .assemble import StampAssembler
from .stream_worker import StreamWorker


@dataclass
class StreamRun:
    """One stream of the mapping during one episode. ``lock`` orders its steps: the
    assembler, ``last_t``, the join and the queue are used under it."""

    name: str
    specs: List[TopicSpec]
    converters: Dict[str, Converter]
    assembler: Optional[StampAssembler]
    lock: threading.Lock = field(default_factory=threading.Lock)
    worker: Optional[StreamWorker] = None
    #: The time of the last step queued (a step below it is late).
    last_t: Optional[int] = None
    #: Why the daemon or the client refused to open the stream (its steps are dropped).
    refused: Optional[str] = None

    @property
    def topics(self) -> List[str]:
        """The stream's topics in mapping-file order."""
        return [s.topic for s in self.specs]

    @property
    def tick_hz(self) -> float:
        """The nominal rate (the same for every topic of a shared stream)."""
        return self.specs[0].tick_hz

    def channels(self) -> List[Channel]:
        """Every topic's channels in mapping-file order (all learned by now)."""
        return [ch for s in self.specs for ch in self.converters[s.topic].channels()]

    def metadata(self) -> Dict[str, Any]:
        """The stream's metadata: ``{"topics": [converter.metadata(), ...]}``."""
        return {"topics": [self.converters[s.topic].metadata() for s in self.specs]}


@dataclass
class EpisodeRun:
    """One episode being recorded: its id, the owner connection and every stream."""

    episode_id: str
    owner: Recorder
    episode: MultiStreamEpisode
    streams: Dict[str, StreamRun]
    #: The latest step or event time queued (the default ``at`` of ``annotate``).
    latest_t: Optional[int] = None
    #: Serialises the use of the owner connection (events, close).
    owner_lock: threading.Lock = field(default_factory=threading.Lock)


def stream_runs(mapping: BridgeMapping, max_pending: int) -> Dict[str, StreamRun]:
    """Fresh converters (shapes are learned anew each episode) for every stream."""
    out: Dict[str, StreamRun] = {}
    for name, specs in mapping.streams().items():
        convs = {s.topic: converter_for(s) for s in specs}
        assembler = StampAssembler([s.topic for s in specs], max_pending) if len(specs) > 1 else None
        out[name] = StreamRun(name, list(specs), convs, assembler)
    return out
