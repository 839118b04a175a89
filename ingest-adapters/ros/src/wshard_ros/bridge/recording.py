"""The path of one converted sample into its stream: pairing (shared streams), the late
rule, the lazy join (in the caller's thread, under the lock of the bridge's state, so
streams join in the order of their first messages) and the queue.

The bridge (:mod:`wshard_ros.bridge.core`) makes one :class:`StreamSteps` with what it
needs: the options, the counters, the bridge's state (:mod:`wshard_ros.bridge.state`) and
the bridge's ``stream_failed``."""

from typing import Callable, Dict, List, Optional

from wshard_client import EpisodeWriter, ErrorCode, Recorder, SchemaError, ServerError, WshardError

from .._base import Sample
from .counters import DROP_ERROR, DROP_FAILED, DROP_QUEUE_FULL, DROP_UNMATCHED, Counters
from .options import BridgeOptions
from .state import RecordingState
from .stream_worker import DEAD, FULL, QUEUED, StreamWorker
from .streams import EpisodeRun, StreamRun

#: Refusals of a stream's join that concern that stream only (its schema): its steps are
#: dropped (``error``) and the episode records on.
_STREAM_ONLY_ERRORS = (ErrorCode.BAD_SCHEMA, ErrorCode.BAD_EPISODE_ID, ErrorCode.LIMIT, ErrorCode.PAYLOAD_SIZE)

#: ``stream_failed(run, stream, error)``: a stream's join or worker failed the recording
#: of ``run`` (called from any thread).
StreamFailed = Callable[[EpisodeRun, str, BaseException], None]


class StreamSteps:
    """Records the converted samples of a bridge's streams (:meth:`record`), joining each
    stream on its first step (:meth:`join`)."""

    def __init__(
        self, options: BridgeOptions, counters: Counters, state: RecordingState, stream_failed: StreamFailed
    ) -> None:
        self.options = options
        self.counters = counters
        self.state = state
        self.stream_failed = stream_failed

    def join(self, run: EpisodeRun, stream: StreamRun) -> StreamWorker:
        """Open ``stream``'s own connection and join the episode with it (channels and
        metadata of every topic, ``timestamps_ns``); start its worker.

        Raises:
            WshardError: from the client (connect, ``STREAM_OPEN``).
        """
        opts = self.options
        rec = Recorder.connect(
            opts.socket_path, f"{opts.client_name}/{stream.name}", protocol_version=2, timeout=opts.timeout
        )
        try:
            writer = rec.join_stream(
                run.episode_id,
                stream.name,
                stream.channels(),
                stream.tick_hz,
                timebase="timestamps_ns",
                durability=opts.durability,
                metadata=stream.metadata(),
                transport=opts.stream_transport(stream.name),
            )
        except BaseException:
            rec.close()
            raise
        stream_failed = self.stream_failed
        return StreamWorker(
            stream.name,
            stream.topics,
            rec,
            writer,
            opts.queue_steps,
            opts.block_when_full,
            self.counters,
            lambda name, error: stream_failed(run, name, error),
            counters_reporter(self.counters, stream.topics),
        )

    def record(self, run: EpisodeRun, stream: StreamRun, topic: str, sample: Sample) -> Optional[BaseException]:
        """Pair, check and queue ``topic``'s sample in ``stream``. Returns the error that
        fails the recording (the daemon or a connection went), else ``None``; everything
        else is counted."""
        counters = self.counters
        state = self.state
        with stream.lock:
            if stream.assembler is not None:
                got = stream.assembler.add(topic, sample)
                for topics in got.unmatched:
                    counters.dropped(
                        topics,
                        DROP_UNMATCHED,
                        f"stream {stream.name!r}: a stamp without a sample of every topic: dropped",
                    )
                if got.step is None:
                    return None
                t_ns, payloads = got.step
            else:
                t_ns, payloads = sample.t_ns, sample.payloads
            topics = stream.topics
            if stream.refused is not None:
                counters.dropped(topics, DROP_ERROR, stream.refused)
                return None
            if stream.last_t is not None and t_ns < stream.last_t:
                counters.late(
                    topics, f"stream {stream.name!r}: step at {t_ns} ns is before the last one at {stream.last_t} ns"
                )
                return None
            worker = stream.worker
            if worker is None:
                with state.lock:
                    if not state.accepts(run):
                        counters.idle_or_failed(topics, state.failed)
                        return None
                    try:
                        worker = stream.worker = self.join(run, stream)
                    except (SchemaError, ServerError) as e:
                        if isinstance(e, ServerError) and e.code not in _STREAM_ONLY_ERRORS:
                            counters.dropped(topics, DROP_FAILED, f"stream {stream.name!r}: join failed: {e}")
                            return e
                        stream.refused = f"stream {stream.name!r}: refused: {e}"
                        counters.dropped(topics, DROP_ERROR, stream.refused)
                        return None
                    except WshardError as e:
                        counters.dropped(topics, DROP_FAILED, f"stream {stream.name!r}: join failed: {e}")
                        return e
            answer = worker.put(t_ns, payloads)
            if answer == QUEUED:
                stream.last_t = t_ns
                with state.lock:
                    run.latest_t = t_ns if run.latest_t is None else max(run.latest_t, t_ns)
            elif answer == FULL:
                counters.dropped(
                    topics,
                    DROP_QUEUE_FULL,
                    f"stream {stream.name!r}: queue full ({self.options.queue_steps} steps): step at {t_ns} ns dropped",
                )
            elif answer == DEAD:
                counters.dropped(topics, DROP_FAILED)
            else:
                counters.idle_or_failed(topics, state.failed)
        return None


def counters_reporter(counters: Counters, topics: List[str]) -> Callable[[EpisodeWriter], None]:
    """A stream worker's ``report``: the stream's counters
    (:meth:`~wshard_ros.bridge.counters.Counters.stream_counters`) sent with the writer's
    ``send_counters`` (protocol version 2 ``COUNTERS``) when they changed since the last
    time."""
    last: Dict[str, int] = {}

    def report(writer: EpisodeWriter) -> None:
        now = counters.stream_counters(topics)
        if now != last:
            writer.send_counters(now)
            last.clear()
            last.update(now)

    return report
