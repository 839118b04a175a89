"""The recording core of the ROS bridge, front-end independent: :class:`Bridge`.

Front ends (rospy, DDS, bag import) call :meth:`Bridge.on_message` from their callbacks;
episode control is :meth:`Bridge.start`, :meth:`Bridge.stop`, :meth:`Bridge.abort`,
:meth:`Bridge.annotate`, and through the daemon's control socket
:meth:`Bridge.stop_episode`, :meth:`Bridge.abort_episode`, :meth:`Bridge.keep`. See
ingest-adapters/ros/README.md, "The recording core".

The :class:`Bridge` is the top of the recording core: it owns its state under one lock
(:mod:`~wshard_ros.bridge.state`), the path of a sample into its stream
(:mod:`~wshard_ros.bridge.recording`) and calls the end of an episode
(:mod:`~wshard_ros.bridge.ending`, and :mod:`~wshard_ros.bridge.outside_end` when the
daemon ended it); they take what they need of it as parameters and do
not import this module.
"""

import logging
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, Union

from wshard_client import ErrorCode, Outcome, Recorder, SchemaError, ServerError, WshardError

from ..convert import converter_for, event_converter_for
from ..errors import MessageError
from ..mapping import BridgeMapping
from . import daemon_control
from .counters import DROP_ERROR, DROP_FAILED, Counters
from .ending import end_episode
from .errors import ALREADY_RECORDING, BAD_REQUEST, DAEMON, FAILED, NOT_RECORDING, BridgeError
from .options import BridgeOptions, BridgeState
from .outside_end import ended_by_daemon
from .recording import StreamSteps
from .state import RecordingState
from .streams import EpisodeRun, StreamRun, stream_runs

log = logging.getLogger("wshard_ros.bridge")

#: Server refusals of one event alone (the episode records on): the event is dropped.
_EVENT_ONLY_ERRORS = (ErrorCode.LIMIT, ErrorCode.MALFORMED_FRAME)
#: A flight trigger's window when none is given (the daemon's ``trigger`` defaults).
DEFAULT_TRIGGER_PRE_S = 30.0
DEFAULT_TRIGGER_POST_S = 10.0
#: The longest ``pre_s`` or ``post_s`` (the daemon's one hour); a negative one is the
#: daemon's to refuse.
MAX_TRIGGER_WINDOW_S = 3600.0


class Bridge:
    """Records the topics of a mapping as one multi-stream episode per ``start`` /
    ``stop``. Thread-safe; :meth:`on_message` never raises.

    Raises (constructor):
        MissingDependency: a topic needs a package not installed (Pillow for
            ``compressed = "decode"``).
    """

    def __init__(self, mapping: BridgeMapping, options: BridgeOptions) -> None:
        for spec in mapping.topics:
            converter_for(spec)  # refuse now what could only fail at start
        self.mapping = mapping
        self.options = options
        self.counters = Counters([t.topic for t in mapping.topics], [e.topic for e in mapping.events])
        self._topic_stream = {t.topic: t.stream for t in mapping.topics}
        self._event_conv = {e.topic: event_converter_for(e) for e in mapping.events}
        self._topic_locks = {t.topic: threading.Lock() for t in mapping.topics}
        self._op_lock = threading.Lock()  # one episode operation at a time
        self._state = RecordingState()
        self._steps = StreamSteps(options, self.counters, self._state, self.stream_failed)
        self._unknown: Set[str] = set()

    # ------------------------------------------------------------------ episode control

    def start(self, episode_id: str, env_id: str = "", metadata: Union[Mapping[str, Any], str, None] = None) -> None:
        """Open the multi-stream episode ``episode_id`` (a new owner connection, protocol
        version 2); streams join as their first complete samples arrive.

        Raises:
            BridgeError: ``ALREADY_RECORDING``; ``BAD_REQUEST`` (a bad id or metadata,
                refused before sending); ``DAEMON`` (the daemon cannot be reached or
                refused: ``EPISODE_EXISTS``, ``DISK_LOW``, ...).
        """
        with self._op_lock:
            with self._state.lock:
                if self._state.phase is BridgeState.RECORDING:
                    raise BridgeError(
                        ALREADY_RECORDING, f"episode {self._state.episode_id()!r} is recording; stop it first"
                    )
            path = self.options.socket_path
            try:
                owner = Recorder.connect(
                    path, self.options.client_name, protocol_version=2, timeout=self.options.timeout
                )
            except WshardError as e:
                raise BridgeError(DAEMON, f"cannot connect to the daemon at {path}: {e}") from e
            try:
                episode = owner.open_multistream_episode(episode_id, env_id, metadata)
            except (SchemaError, ValueError, TypeError) as e:
                owner.close()
                raise BridgeError(BAD_REQUEST, f"episode {episode_id!r}: {e}") from e
            except WshardError as e:
                owner.close()
                raise BridgeError(DAEMON, f"the daemon refused episode {episode_id!r}: {e}") from e
            run = EpisodeRun(episode_id, owner, episode, stream_runs(self.mapping, self.options.max_pending))
            with self._state.lock:
                self._state.run = run
                self._state.phase = BridgeState.RECORDING
                self._state.accepting = True
                self._state.last_error = None
                self._state.failed_run = None
            log.info("episode %s: recording", episode_id)

    def stop(self) -> Dict[str, Any]:
        """Drain every stream's queue, close every stream ``completed``, then the episode;
        returns a summary (``episode``, ``outcome``, ``streams``: per stream
        ``timesteps`` and ``durable``, ``topics``, ``events``: the counters).

        Raises:
            BridgeError: ``NOT_RECORDING``; ``FAILED`` (the recording failed earlier,
                with its error); ``DAEMON`` (the daemon failed while closing: the bridge
                is then ``failed``).
        """
        return self._end(Outcome.COMPLETED)

    def abort(self) -> Dict[str, Any]:
        """As :meth:`stop`, with the outcome ``aborted`` (data kept, the manifest says
        ``aborted``).

        Raises:
            BridgeError: as :meth:`stop`.
        """
        return self._end(Outcome.ABORTED)

    def annotate(
        self, label: str, text: Optional[str] = None, json: Any = None, at_ns: Optional[int] = None
    ) -> Dict[str, Any]:
        """Annotate the recording episode through the daemon's control socket
        (docs/CONTROL.md ``annotate``) at ``at_ns`` (default: the latest step or event
        time queued so far), with a ``text`` or ``json`` payload or neither. Returns the
        daemon's result (``seq``, ``t_ns``, ``file``, ...).

        Raises:
            BridgeError: ``NOT_RECORDING``; ``FAILED``; ``BAD_REQUEST`` (both ``text`` and
                ``json``, a bad label, no ``at_ns`` and nothing recorded yet);
                ``DAEMON`` (no ``control_path`` configured, the control socket cannot be
                reached, or the daemon refused: its code and message are in the text).
        """
        with self._op_lock:
            run = self._recording_run("annotate")
            if text is not None and json is not None:
                raise BridgeError(BAD_REQUEST, "annotate: give text or json, not both")
            if not isinstance(label, str) or not label:
                raise BridgeError(BAD_REQUEST, f"annotate: label {label!r}: a non-empty string")
            if at_ns is not None and (isinstance(at_ns, bool) or not isinstance(at_ns, int)):
                raise BridgeError(BAD_REQUEST, f"annotate: at_ns {at_ns!r}: an integer (ns)")
            path = self.options.control_path
            if path is None:
                raise BridgeError(
                    DAEMON, "annotate needs the daemon's control socket: set control_path (--control-socket)"
                )
            with self._state.lock:
                at = at_ns if at_ns is not None else run.latest_t
            if at is None:
                raise BridgeError(
                    BAD_REQUEST, f"annotate: nothing recorded in episode {run.episode_id!r} yet: give at_ns"
                )
            return daemon_control.annotate(path, run.episode_id, at, label, text, json, self.options.timeout)

    def stop_episode(self, episode: Optional[str] = None, timeout_ms: int = 10_000) -> Dict[str, Any]:
        """The daemon's ``stop`` of an open episode (docs/CONTROL.md): finalized
        ``complete`` by the daemon, whoever records it; default: the episode this bridge
        records (which then ends, the bridge ``idle``). Returns the daemon's result.

        Raises:
            BridgeError: ``BAD_REQUEST`` (no episode given and none recording, a bad
                ``timeout_ms``); ``DAEMON`` (no ``control_path``, the control socket
                cannot be reached, or the daemon refused: ``UNKNOWN_EPISODE``, ...).
        """
        return self._daemon_end("stop", episode, timeout_ms)

    def abort_episode(self, episode: Optional[str] = None, timeout_ms: int = 10_000) -> Dict[str, Any]:
        """As :meth:`stop_episode`, finalized ``aborted`` (data kept).

        Raises:
            BridgeError: as :meth:`stop_episode`.
        """
        return self._daemon_end("abort", episode, timeout_ms)

    def keep(self, episode: Optional[str] = None, release: bool = False) -> Dict[str, Any]:
        """The daemon's ``keep`` of an episode (open or finished): never evicted from the
        robot's data directory; ``release`` removes the mark. Default: the episode this
        bridge records. Returns the daemon's result (``episode``, ``kept``, ``changed``).

        Raises:
            BridgeError: as :meth:`stop_episode`.
        """
        with self._op_lock:
            target, _ = self._target("keep", episode)
            path = self._control_path("keep")
            return daemon_control.keep(path, target, release, self.options.timeout)

    def split_episode(self, episode: Optional[str] = None) -> Dict[str, Any]:
        """The daemon's ``split`` of an open episode (docs/CONTROL.md): what it recorded so
        far becomes a finished ``complete`` part, recording goes on into the next. Default:
        the episode this bridge records (multi-stream: every stream is cut; ``EMPTY_PART``
        while a stream holds no timestep yet); or name a producer's episode. Returns the
        daemon's result (``finished``, ``recording``, ``part``).

        Raises:
            BridgeError: as :meth:`stop_episode`.
        """
        with self._op_lock:
            target, _ = self._target("split_episode", episode)
            path = self._control_path("split_episode")
            return daemon_control.split(path, target, self.options.timeout)

    def flight_trigger(
        self,
        pre_s: float = DEFAULT_TRIGGER_PRE_S,
        post_s: float = DEFAULT_TRIGGER_POST_S,
        reason: str = "",
        streams: Optional[List[str]] = None,
    ) -> Dict[str, Any]:
        """The daemon's flight ``trigger`` (docs/CONTROL.md): the window
        ``[t - pre_s, t + post_s]`` of its flight streams (``streams``: ``EPISODE`` or
        ``EPISODE/STREAM`` names, ``None`` or empty = every one) persisted as an episode
        with ``reason`` as its event. Returns the daemon's result at once (``episode``,
        ``merged``, ``window_start_ns``, ``window_end_ns``).

        Raises:
            BridgeError: ``BAD_REQUEST`` (a window that is not a number, a stream name
                that is not a string); ``DAEMON`` (no ``control_path``, the control socket
                cannot be reached, or the daemon refused: ``NO_FLIGHT_STREAM``,
                ``UNKNOWN_STREAM``, ``BAD_REQUEST`` for a negative window, ...).
        """
        window = {}
        for field, value in (("pre_s", pre_s), ("post_s", post_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise BridgeError(BAD_REQUEST, f"flight_trigger: {field} {value!r}: a number of seconds")
            if abs(value) > MAX_TRIGGER_WINDOW_S:
                raise BridgeError(BAD_REQUEST, f"flight_trigger: {field} {value!r}: at most {MAX_TRIGGER_WINDOW_S} s")
            window[field] = int(round(value * 1000))
        if not isinstance(reason, str):
            raise BridgeError(BAD_REQUEST, f"flight_trigger: reason {reason!r}: a string")
        names = list(streams or [])
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise BridgeError(BAD_REQUEST, f"flight_trigger: streams[{i}] {name!r}: a non-empty string")
        path = self._control_path("flight_trigger")
        return daemon_control.trigger(
            path, window["pre_s"], window["post_s"], reason, names or None, self.options.timeout
        )

    def _control_path(self, what: str) -> str:
        path = self.options.control_path
        if path is None:
            raise BridgeError(DAEMON, f"{what} needs the daemon's control socket: set control_path (--control-socket)")
        return path

    def _target(self, what: str, episode: Optional[str]) -> Tuple[str, Optional[EpisodeRun]]:
        """The episode a daemon verb names (``episode``, else the recording one) and the
        bridge's run when it is the bridge's own recording episode."""
        with self._state.lock:
            run = self._state.run if self._state.phase is BridgeState.RECORDING else None
        if episode is None or episode == "":
            if run is None:
                raise BridgeError(BAD_REQUEST, f"{what}: no episode given and none is recording")
            return run.episode_id, run
        if not isinstance(episode, str):
            raise BridgeError(BAD_REQUEST, f"{what}: episode {episode!r}: a string")
        return episode, run if run is not None and run.episode_id == episode else None

    def _daemon_end(self, verb: str, episode: Optional[str], timeout_ms: int) -> Dict[str, Any]:
        what = f"{verb}_episode"
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise BridgeError(BAD_REQUEST, f"{what}: timeout_ms {timeout_ms!r}: an integer (ms)")
        if not 0 <= timeout_ms <= daemon_control.MAX_END_TIMEOUT_MS:
            raise BridgeError(BAD_REQUEST, f"{what}: timeout_ms {timeout_ms}: 0..={daemon_control.MAX_END_TIMEOUT_MS}")
        with self._op_lock:
            target, own = self._target(what, episode)
            path = self._control_path(what)
            result = daemon_control.end_episode(path, verb, target, timeout_ms, self.options.timeout)
            if own is not None:
                self._notice_end(own)
            return result

    def _notice_end(self, run: EpisodeRun) -> None:
        """Until the bridge saw the daemon end ``run`` (its connections' ``STOPPED``),
        at most the client timeout."""
        deadline = time.monotonic() + self.options.timeout
        while time.monotonic() < deadline:
            with self._state.lock:
                if self._state.run is not run:
                    return
            self._check_connections(run)
            time.sleep(0.02)
        log.warning("episode %s: the daemon ended it, its connections did not say so yet", run.episode_id)

    def close(self) -> None:
        """Stop the episode if one is recording (errors logged, not raised) and release
        every connection. Idempotent."""
        with self._state.lock:
            recording = self._state.phase is BridgeState.RECORDING
        if recording:
            try:
                self.stop()
            except BridgeError as e:
                log.error("closing the bridge: %s", e)

    # ------------------------------------------------------------------ messages

    def on_message(self, topic: str, msg: Any, receive_t_ns: int) -> None:
        """Record one message of ``topic`` received at ``receive_t_ns`` (the front end's
        clock). Thread-safe; never raises: every outcome is counted (``status()``)."""
        try:
            if topic in self._topic_stream:
                self._on_stream_message(topic, msg, receive_t_ns)
            elif topic in self._event_conv:
                self._on_event(topic, msg, receive_t_ns)
            elif topic not in self._unknown:
                self._unknown.add(topic)
                log.warning("topic %s is not in the mapping %s: ignored", topic, self.mapping.file)
        except Exception as e:  # the contract: nothing reaches the subscriber's callback
            log.exception("topic %s: unexpected error", topic)
            self.counters.dropped([topic], DROP_ERROR, f"topic {topic!r}: internal error: {e!r}")

    def _current(self, topic: str) -> Optional[EpisodeRun]:
        """The recording episode, or ``None`` with the message counted ``idle`` (no
        episode) or ``dropped`` (``failed``)."""
        with self._state.lock:
            if self._state.accepting:
                return self._state.run
            failed = self._state.failed
        if failed:
            self.counters.dropped([topic], DROP_FAILED)
        else:
            self.counters.idle(topic)
        return None

    def _on_stream_message(self, topic: str, msg: Any, receive_t_ns: int) -> None:
        self.counters.received(topic)
        run = self._current(topic)
        if run is None:
            return
        stream = run.streams[self._topic_stream[topic]]
        with self._topic_locks[topic]:
            try:
                sample = stream.converters[topic].convert(msg, receive_t_ns)
            except MessageError as e:
                self.counters.dropped([topic], DROP_ERROR, str(e))
                return
            failure = self._steps.record(run, stream, topic, sample)
        if failure is not None:
            self.stream_failed(run, stream.name, failure)

    def _on_event(self, topic: str, msg: Any, receive_t_ns: int) -> None:
        self.counters.received(topic)
        run = self._current(topic)
        if run is None:
            return
        try:
            ev = self._event_conv[topic].convert(msg, receive_t_ns)
        except MessageError as e:
            self.counters.dropped([topic], DROP_ERROR, str(e))
            return
        with run.owner_lock:
            if run.episode.closed:  # stop/abort closed it since the check above
                self.counters.idle_or_failed([topic], self.failed)
                return
            try:
                run.episode.send_event(ev.t_ns, ev.label, ev.data)
            except ServerError as e:
                if e.code in _EVENT_ONLY_ERRORS:
                    self.counters.dropped([topic], DROP_ERROR, f"topic {topic!r}: the daemon refused the event: {e}")
                    return
                self.counters.dropped([topic], DROP_FAILED, f"topic {topic!r}: {e}")
                failure: Optional[BaseException] = e
            except (SchemaError, ValueError, TypeError) as e:
                self.counters.dropped([topic], DROP_ERROR, f"topic {topic!r}: event refused: {e}")
                return
            except WshardError as e:
                self.counters.dropped([topic], DROP_FAILED, f"topic {topic!r}: {e}")
                failure = e
            else:
                failure = None
                self.counters.recorded([topic])
                with self._state.lock:
                    run.latest_t = ev.t_ns if run.latest_t is None else max(run.latest_t, ev.t_ns)
        if failure is not None:
            self._fail(run, failure)

    # ------------------------------------------------------------------ failures

    def stream_failed(self, run: EpisodeRun, stream: str, error: BaseException) -> None:
        """A stream's worker or join failed (called from any thread)."""
        self._fail(run, error, f"stream {stream!r}")

    def _fail(self, run: EpisodeRun, error: BaseException, where: str = "episode") -> None:
        """Mark the bridge ``failed`` (once per episode), cut every connection of ``run``
        without closing anything: the daemon ends the episode ``interrupted``. When the
        daemon itself ended the whole episode (:func:`~.outside_end.ended_by_daemon`), the
        bridge goes back to ``idle`` instead (``last_error`` says how it ended)."""
        with self._state.lock:
            if self._state.run is not run or self._state.phase is not BridgeState.RECORDING:
                return
        ended = ended_by_daemon(run, error)
        with self._state.lock:
            if self._state.run is not run or self._state.phase is not BridgeState.RECORDING:
                return
            self._state.accepting = False
            self._state.run = None
            if ended is not None:
                self._state.phase = BridgeState.IDLE
                self._state.failed_run = None
                self._state.last_error = f"episode {run.episode_id!r}: ended by the daemon: {ended}"
            else:
                self._state.phase = BridgeState.FAILED
                self._state.failed_run = run
                why = "the daemon refused" if isinstance(error, ServerError) else "connection to the daemon lost"
                self._state.last_error = f"episode {run.episode_id!r}: {where}: {why}: {error}"
            message = self._state.last_error
        if ended is not None:
            log.warning("%s; the bridge is idle, the next start records the next episode", message)
        else:
            log.error("%s; the bridge stays up, the next start connects anew", message)
        workers = [s.worker for s in run.streams.values() if s.worker is not None]
        for w in workers:
            w.kill()
        run.owner.transport.shutdown()
        with run.owner_lock:
            run.owner.close()
        # Once status() says failed, every step the workers held is counted.
        for w in workers:
            w.join(self.options.timeout)

    # ------------------------------------------------------------------ internals

    @property
    def failed(self) -> bool:
        """Whether the bridge is ``failed``."""
        return self._state.failed

    def _check_connections(self, run: EpisodeRun) -> bool:
        """Fail ``run`` when the daemon ended or failed one of its connections (seen
        without sending); whether it did."""
        error = run.owner.connection_error()
        if error is not None:
            self._fail(run, error)
            return True
        for s in list(run.streams.values()):
            worker = s.worker
            error = worker.connection_error() if worker is not None else None
            if error is not None:
                self.stream_failed(run, s.name, error)
                return True
        return False

    def _recording_run(self, what: str) -> EpisodeRun:
        """The recording episode (under the operation lock), else the right error."""
        with self._state.lock:
            run = self._state.run
            if self._state.phase is BridgeState.FAILED:
                raise BridgeError(FAILED, f"{what}: the recording failed: {self._state.last_error}")
            if run is None or not self._state.accepting:
                raise BridgeError(NOT_RECORDING, f"{what}: no episode is recording")
        if self._check_connections(run):
            raise BridgeError(FAILED, f"{what}: the recording failed: {self._state.last_error}")
        return run

    def _end(self, outcome: Outcome) -> Dict[str, Any]:
        what = "stop" if outcome is Outcome.COMPLETED else "abort"
        with self._op_lock:
            run = self._recording_run(what)
            with self._state.lock:
                self._state.accepting = False
            summary, error = end_episode(self.counters, run, outcome)
            if error is not None:
                self._fail(run, error)
                raise BridgeError(DAEMON, f"{what}: {self._state.last_error}")
            with self._state.lock:
                if self._state.run is run:
                    self._state.run = None
                    self._state.phase = BridgeState.IDLE
            log.info("episode %s: %s", run.episode_id, summary["outcome"])
            return summary

    def status(self) -> Dict[str, Any]:
        """``state``, ``episode``, ``last_error``, per topic counters (``topics``), per
        stream ``topics``, ``joined``, ``pushed``, ``durable``, ``durable_lag_ms``
        (``streams``), and the event topics' counters (``events``); JSON-serialisable."""
        with self._state.lock:
            run = self._state.run
        if run is not None and self._state.phase is BridgeState.RECORDING:
            self._check_connections(run)
        with self._state.lock:
            state, last_error = self._state.phase, self._state.last_error
            run = self._state.run or self._state.failed_run
            episode = self._state.episode_id()
        streams: Dict[str, Any] = {}
        for name, specs in self.mapping.streams().items():
            sr: Optional[StreamRun] = run.streams.get(name) if run is not None else None
            worker = sr.worker if sr is not None else None
            st: Dict[str, Any] = {"pushed": 0, "durable": 0, "durable_lag_ms": 0.0, "queued": 0}
            if worker is not None:
                st = worker.status()
            streams[name] = {"topics": [s.topic for s in specs], "joined": worker is not None, **st}
            if sr is not None and sr.refused is not None:
                streams[name]["refused"] = sr.refused
        return {
            "state": state.value,
            "episode": episode,
            "last_error": last_error,
            "topics": self.counters.topics(),
            "streams": streams,
            "events": self.counters.events(),
        }
