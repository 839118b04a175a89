"""One stream's worker: a bounded queue of steps drained by one thread into the stream's
own connection (one writer per connection). Live mode drops the newest step when the
queue is full; ``block_when_full`` makes the caller wait instead (back-pressure)."""

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from wshard_client import CloseSummary, EpisodeWriter, Outcome, Recorder, WshardError

from .counters import DROP_FAILED, Counters

#: Steps one ``push_batch`` sends at most (the client splits frames by size anyway).
MAX_BATCH_STEPS = 256
#: Seconds between two calls of a worker's ``report`` (the producer counters it sends).
REPORT_EVERY_S = 1.0
#: How long the worker lets a short queue fill before sending it (one batch, one wake-up
#: and one socket write for the steps of this window instead of one per step). It adds at
#: most this much to a step's DURABLE lag.
LINGER_S = 0.002
NS_PER_MS = 1_000_000

#: What :meth:`StreamWorker.put` answers.
QUEUED = "queued"
FULL = "full"
DEAD = "dead"  # the stream failed or was killed
ENDED = "ended"  # the stream is ending (stop, abort)


@dataclass
class _Item:
    t_ns: int
    payloads: List[bytes]
    enqueued_ns: int  # time.monotonic_ns() when queued, for durable_lag_ms


class StreamWorker:
    """Records one stream: :meth:`put` queues a step (any thread), the worker thread
    sends them with ``push_batch``; :meth:`finish` drains and closes the stream,
    :meth:`kill` drops it (the connection is cut, nothing more is sent).

    ``on_failure(stream, error)`` is called from the worker thread when the daemon or the
    connection fails (a :class:`~wshard_client.WshardError` from the client); the steps
    still queued are counted ``dropped`` (``failed``) on the stream's topics.

    ``report(writer)``, when given, is called from the worker thread (the writer's only
    user) about every ``report_every_s`` seconds, busy or idle: it sends the stream's
    producer counters (``send_counters``). Its client errors fail the stream as a push's.
    """

    def __init__(
        self,
        stream: str,
        topics: Sequence[str],
        recorder: Recorder,
        writer: EpisodeWriter,
        capacity: int,
        block_when_full: bool,
        counters: Counters,
        on_failure: Callable[[str, BaseException], None],
        report: Optional[Callable[[EpisodeWriter], None]] = None,
        report_every_s: float = REPORT_EVERY_S,
    ) -> None:
        self.stream = stream
        self.topics = list(topics)
        self._rec = recorder
        self._writer = writer
        self._capacity = capacity
        self._block = block_when_full
        self._counters = counters
        self._on_failure = on_failure
        self._report = report
        self._report_every_s = report_every_s
        self._next_report = time.monotonic() + report_every_s
        self._cond = threading.Condition(threading.Lock())
        self._queue: Deque[_Item] = deque()
        self._inflight: Deque[Tuple[int, int]] = deque()  # (seq, enqueued_ns) pushed, maybe not durable
        self._pushed = 0
        self._ending = False
        self._outcome = Outcome.COMPLETED
        self._dead = False
        self._error: Optional[BaseException] = None
        self._summary: Optional[CloseSummary] = None
        self._thread = threading.Thread(target=self._run, name=f"wshard-ros-stream-{stream}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ callers

    def put(self, t_ns: int, payloads: List[bytes]) -> str:
        """Queue one step: :data:`QUEUED`, :data:`FULL` (live mode, not queued),
        :data:`DEAD` (the stream failed or was killed; not queued) or :data:`ENDED` (the
        stream is ending; not queued). With ``block_when_full`` waits for room instead of
        answering :data:`FULL`."""
        item = _Item(t_ns, payloads, time.monotonic_ns())
        with self._cond:
            while True:
                if self._dead:
                    return DEAD
                if self._ending:
                    return ENDED
                if len(self._queue) < self._capacity:
                    break
                if not self._block:
                    return FULL
                self._cond.wait()
            self._queue.append(item)
            if len(self._queue) == 1:
                # The worker waits only on an empty queue (and put()s only on a full one,
                # never both): wake it for the first step, not for every step.
                self._cond.notify_all()
        return QUEUED

    def end(self, outcome: Outcome) -> None:
        """Ask the thread to send every queued step, then close the stream with
        ``outcome`` and its connection; returns at once (see :meth:`finish`). Later
        :meth:`put` calls answer :data:`ENDED`."""
        with self._cond:
            if not self._ending:
                self._ending = True
                self._outcome = outcome
            self._cond.notify_all()

    def finish(self, outcome: Outcome) -> CloseSummary:
        """:meth:`end`, then wait for the stream to be closed; its summary.

        Raises:
            WshardError: the stream failed before or while closing (the error of the
                client, also reported to ``on_failure``).
        """
        self.end(outcome)
        self._thread.join()
        if self._summary is None:
            err = self._error
            if isinstance(err, WshardError):
                raise err
            raise WshardError(f"stream {self.stream!r}: {err or 'not closed'}")
        return self._summary

    def kill(self) -> None:
        """Cut the stream's connection and stop the thread; queued steps are counted
        ``dropped`` (``failed``). The daemon ends the stream ``interrupted``. Returns
        without waiting for the thread (it may be the caller)."""
        with self._cond:
            self._dead = True
            self._cond.notify_all()
        self._rec.transport.shutdown()

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the worker thread to end (after :meth:`kill` or :meth:`finish`)."""
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def connection_error(self) -> Optional[WshardError]:
        """The error that ended or failed the stream's connection while it records
        (the client's ``Recorder.connection_error``), else ``None``."""
        if self._dead or self._summary is not None:
            return None
        return self._rec.connection_error()

    def status(self) -> Dict[str, Any]:
        """``pushed`` (steps sent), ``durable`` (the daemon's durable seq),
        ``durable_lag_ms`` (age of the oldest step not yet durable, queued or sent; 0
        when none; ``None`` once the stream's connection is cut: nothing more becomes
        durable through it, so there is no lag to measure), ``queued``."""
        durable = self._writer.durable_seq
        now = time.monotonic_ns()
        with self._cond:
            self._prune(durable)
            lag: Optional[float] = 0.0
            if self._dead:
                lag = None
            elif self._inflight:
                lag = max(0, now - self._inflight[0][1]) / NS_PER_MS
            elif self._queue:
                lag = max(0, now - self._queue[0].enqueued_ns) / NS_PER_MS
            return {
                "pushed": self._pushed,
                "durable": durable,
                "durable_lag_ms": lag,
                "queued": len(self._queue),
            }

    # ------------------------------------------------------------------ worker thread

    def _prune(self, durable: int) -> None:
        inflight = self._inflight
        while inflight and inflight[0][0] < durable:
            inflight.popleft()

    def _take(self) -> Optional[List[_Item]]:
        """The next steps to send; ``None`` when the thread should end."""
        with self._cond:
            while not self._queue and not self._ending and not self._dead:
                if self._report is None:
                    self._cond.wait()
                    continue
                left = self._next_report - time.monotonic()
                if left <= 0:
                    return []  # nothing to send, a report is due
                self._cond.wait(left)
            if self._dead:
                return None
            if not self._queue:
                return None  # ending, all sent
            if len(self._queue) < MAX_BATCH_STEPS and len(self._queue) < self._capacity and not self._ending:
                self._cond.wait(LINGER_S)  # let the batch fill (end() and kill() wake it)
                if self._dead:
                    return None
            n = min(len(self._queue), MAX_BATCH_STEPS)
            items = [self._queue.popleft() for _ in range(n)]
            self._cond.notify_all()  # room for blocked put()s
            return items

    def _run(self) -> None:
        try:
            while True:
                items = self._take()
                if items is None:
                    break
                if self._report is not None and time.monotonic() >= self._next_report:
                    self._next_report = time.monotonic() + self._report_every_s
                    try:
                        self._report(self._writer)
                    except WshardError as e:
                        self._fail(e, len(items))
                        return
                if not items:
                    continue
                try:
                    first = self._writer.push_batch([(i.t_ns, 0.0, False, i.payloads) for i in items]).start
                except WshardError as e:
                    self._fail(e, len(items))
                    return
                self._counters.recorded(self.topics, len(items))
                with self._cond:
                    self._pushed += len(items)
                    self._inflight.extend((first + k, item.enqueued_ns) for k, item in enumerate(items))
                    self._prune(self._writer.durable_seq)
            if self._dead:
                self._drop_queued(0)
                self._rec.close()
                return
            try:
                if self._report is not None:
                    self._report(self._writer)  # the final counters
                self._summary = self._writer.close(self._outcome)
                self._rec.close()
            except WshardError as e:
                self._fail(e, 0)
        finally:
            with self._cond:
                self._dead = self._dead or self._summary is None
                self._cond.notify_all()

    def _drop_queued(self, in_hand: int, error: Optional[str] = None) -> None:
        with self._cond:
            n = in_hand + len(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        if n:
            self._counters.dropped(self.topics, DROP_FAILED, error, n)

    def _fail(self, error: WshardError, in_hand: int) -> None:
        with self._cond:
            self._dead = True
            self._error = error
        self._drop_queued(in_hand, f"stream {self.stream!r} failed: {error}")
        self._rec.transport.shutdown()
        self._rec.close()
        self._on_failure(self.stream, error)
