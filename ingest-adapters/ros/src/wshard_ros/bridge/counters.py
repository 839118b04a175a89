"""Per-topic counters of the bridge (``received``, ``recorded``, ``dropped`` with reasons,
``late``, ``idle``, ``last_error``), thread-safe: callers' threads and stream workers
update them. Counters are cumulative over the bridge's life (never reset by ``start``)."""

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Optional, Set, Tuple

log = logging.getLogger("wshard_ros.bridge")

#: Why a message was dropped (the keys of ``drop_reasons``).
DROP_ERROR = "error"  # conversion or shape error
DROP_QUEUE_FULL = "queue_full"  # the stream's queue was full (live mode)
DROP_UNMATCHED = "unmatched"  # a shared stream's stamp never completed
DROP_FAILED = "failed"  # the stream, its connection or the daemon was gone
DROP_REASONS = (DROP_ERROR, DROP_QUEUE_FULL, DROP_UNMATCHED, DROP_FAILED)


@dataclass
class TopicCounters:
    """One topic's counters."""

    received: int = 0
    recorded: int = 0
    dropped: int = 0
    late: int = 0
    idle: int = 0
    drop_reasons: Dict[str, int] = field(default_factory=lambda: {r: 0 for r in DROP_REASONS})
    last_error: Optional[str] = None

    def as_dict(self) -> Dict[str, Any]:
        """JSON-serialisable copy."""
        return {
            "received": self.received,
            "recorded": self.recorded,
            "dropped": self.dropped,
            "late": self.late,
            "idle": self.idle,
            "drop_reasons": dict(self.drop_reasons),
            "last_error": self.last_error,
        }


class Counters:
    """The counters of every stream topic and event topic of a mapping."""

    def __init__(self, topics: Iterable[str], event_topics: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._topics: Dict[str, TopicCounters] = {t: TopicCounters() for t in topics}
        self._events: Dict[str, TopicCounters] = {t: TopicCounters() for t in event_topics}
        self._logged: Set[Tuple[str, str]] = set()

    def _get(self, topic: str) -> TopicCounters:
        c = self._topics.get(topic)
        return c if c is not None else self._events[topic]

    def received(self, topic: str) -> None:
        """One message of ``topic`` arrived."""
        with self._lock:
            self._get(topic).received += 1

    def idle(self, topic: str) -> None:
        """One message of ``topic`` arrived while no episode was recording."""
        with self._lock:
            self._get(topic).idle += 1

    def idle_or_failed(self, topics: Iterable[str], failed: bool) -> None:
        """Messages of ``topics`` that came as the episode ended: ``dropped`` (``failed``)
        when the recording failed, else ``idle``."""
        topics = list(topics)
        if failed:
            self.dropped(topics, DROP_FAILED)
            return
        with self._lock:
            for t in topics:
                self._get(t).idle += 1

    def recorded(self, topics: Iterable[str], n: int = 1) -> None:
        """``n`` steps (or events) of each of ``topics`` reached the daemon."""
        with self._lock:
            for t in topics:
                self._get(t).recorded += n

    def late(self, topics: Iterable[str], error: str) -> None:
        """A step of ``topics`` older than its stream's last one was not sent."""
        with self._lock:
            for t in topics:
                c = self._get(t)
                c.late += 1
                c.last_error = error
        self._log_once(topics, "late", error)

    def dropped(self, topics: Iterable[str], reason: str, error: Optional[str] = None, n: int = 1) -> None:
        """``n`` messages of each of ``topics`` dropped for ``reason`` (one of
        :data:`DROP_REASONS`); ``error`` becomes their ``last_error`` and is logged once per
        topic and reason."""
        topics = list(topics)
        with self._lock:
            for t in topics:
                c = self._get(t)
                c.dropped += n
                c.drop_reasons[reason] = c.drop_reasons.get(reason, 0) + n
                if error is not None:
                    c.last_error = error
        if error is not None:
            self._log_once(topics, reason, error)

    def error_kind_logged(self, topic: str, kind: str) -> bool:
        """Whether an error of ``kind`` was logged for ``topic`` already (and mark it)."""
        with self._lock:
            seen = (topic, kind) in self._logged
            self._logged.add((topic, kind))
            return seen

    def _log_once(self, topics: Iterable[str], kind: str, error: str) -> None:
        for t in topics:
            if not self.error_kind_logged(t, kind):
                log.warning("topic %s: %s (logged once per topic and kind; counted)", t, error)

    def topics(self) -> Dict[str, Dict[str, Any]]:
        """Every stream topic's counters, JSON-serialisable."""
        with self._lock:
            return {t: c.as_dict() for t, c in self._topics.items()}

    def events(self) -> Dict[str, Dict[str, Any]]:
        """Every event topic's ``received``, ``recorded``, ``dropped`` (and the rest)."""
        with self._lock:
            return {t: c.as_dict() for t, c in self._events.items()}

    def stream_counters(self, topics: Iterable[str]) -> Dict[str, int]:
        """The producer counters of a stream for the daemon (``send_counters``): each
        counter summed over the stream's ``topics``: ``received``, ``recorded``,
        ``dropped``, ``late``, ``idle`` and ``dropped_<reason>`` per reason (9 names of
        ``[a-z0-9_]``)."""
        out = {"received": 0, "recorded": 0, "dropped": 0, "late": 0, "idle": 0}
        out.update({f"dropped_{r}": 0 for r in DROP_REASONS})
        with self._lock:
            for t in topics:
                c = self._get(t)
                out["received"] += c.received
                out["recorded"] += c.recorded
                out["dropped"] += c.dropped
                out["late"] += c.late
                out["idle"] += c.idle
                for r, n in c.drop_reasons.items():
                    out[f"dropped_{r}"] = out.get(f"dropped_{r}", 0) + n
        return out

    def recorded_of(self, topic: str) -> int:
        """``recorded`` of one topic."""
        with self._lock:
            return self._get(topic).recorded
