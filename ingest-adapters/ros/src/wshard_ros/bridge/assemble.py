"""Steps of a shared stream (several topics, one header stamp, e.g. a camera's rgb and
depth): samples are paired by stamp; a step is complete when every topic of the stream
has a sample with that stamp."""

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .._base import Sample

#: Stamps a shared stream keeps waiting for their other topics, at most.
DEFAULT_MAX_PENDING = 64


@dataclass
class Assembled:
    """What one sample gave: a complete step (``(t_ns, payloads)``, the topics' payloads
    in mapping-file order) or none, and the stamps given up, each as the list of topics
    that had a sample with it (each counted ``dropped``, reason ``unmatched``)."""

    step: Optional[Tuple[int, List[bytes]]] = None
    unmatched: List[List[str]] = field(default_factory=list)


class StampAssembler:
    """Pairs the samples of ``topics`` (in mapping-file order) by stamp.

    A pending stamp older than a newer completed one, or beyond ``max_pending`` pending
    stamps (the oldest go first), is given up. A second sample of a topic at a stamp that
    topic already has pending is given up itself (the first one is kept). Not thread-safe:
    the bridge calls it under its lock.
    """

    def __init__(self, topics: Sequence[str], max_pending: int = DEFAULT_MAX_PENDING) -> None:
        if max_pending <= 0:
            raise ValueError(f"max_pending {max_pending}: must be > 0")
        self.topics = list(topics)
        self.max_pending = max_pending
        self._pending: "OrderedDict[int, Dict[str, List[bytes]]]" = OrderedDict()
        self._last_complete: Optional[int] = None

    @property
    def pending(self) -> int:
        """Stamps waiting for a topic."""
        return len(self._pending)

    def add(self, topic: str, sample: Sample) -> Assembled:
        """Add ``topic``'s sample; returns the step it completes, if any, and what was
        given up."""
        out = Assembled()
        t = sample.t_ns
        if self._last_complete is not None and t < self._last_complete:
            out.unmatched.append([topic])
            return out
        have = self._pending.get(t)
        if have is None:
            have = self._pending[t] = {}
            self._sort_last()
        elif topic in have:
            out.unmatched.append([topic])
            return out
        have[topic] = sample.payloads
        if len(have) == len(self.topics):
            del self._pending[t]
            payloads = [p for name in self.topics for p in have[name]]
            out.step = (t, payloads)
            self._last_complete = t
            for older in [s for s in self._pending if s < t]:
                out.unmatched.append(self._given_up(older))
        while len(self._pending) > self.max_pending:
            oldest = next(iter(self._pending))
            out.unmatched.append(self._given_up(oldest))
        return out

    def drain(self) -> List[List[str]]:
        """Give up every pending stamp (the episode ends); each as its topics."""
        return [self._given_up(s) for s in list(self._pending)]

    def _given_up(self, stamp: int) -> List[str]:
        have = self._pending.pop(stamp)
        return [name for name in self.topics if name in have]

    def _sort_last(self) -> None:
        """Keep the pending stamps in ascending order (a new stamp is usually the
        newest; an older one is moved to its place)."""
        keys = list(self._pending)
        if len(keys) >= 2 and keys[-1] < keys[-2]:
            items = sorted(self._pending.items())
            self._pending.clear()
            self._pending.update(items)
