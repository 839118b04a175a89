"""The producer counters a stream worker reports to the daemon (``send_counters``, once the
client has it): names and sums, sent only when changed, from the worker thread, every
``report_every_s`` busy or idle; a report's client error fails the stream."""

import threading
import time
from typing import Any, Dict, List

import bridgekit as K
from wshard_client import Channel, Outcome, Recorder, TransportError

from wshard_ros.bridge.counters import Counters
from wshard_ros.bridge.recording import counters_reporter
from wshard_ros.bridge.stream_worker import StreamWorker

NAMES = {
    "received", "recorded", "dropped", "late", "idle",
    "dropped_error", "dropped_queue_full", "dropped_unmatched", "dropped_failed",
}  # fmt: skip


def test_ros_bridge_counters_stream_sums_and_names() -> None:
    c = Counters(["/a", "/b"], ["/e"])
    c.received("/a")
    c.received("/b")
    c.recorded(["/a", "/b"], 3)
    c.dropped(["/a"], "queue_full", "full")
    c.dropped(["/b"], "unmatched", "x", 2)
    c.late(["/b"], "late")
    c.idle("/a")
    got = c.stream_counters(["/a", "/b"])
    assert set(got) == NAMES and all(n.isidentifier() and n.islower() and len(n) <= 32 for n in got)
    assert got == {
        "received": 2, "recorded": 6, "dropped": 3, "late": 1, "idle": 1,
        "dropped_error": 0, "dropped_queue_full": 1, "dropped_unmatched": 2, "dropped_failed": 0,
    }  # fmt: skip
    assert c.stream_counters(["/a"])["recorded"] == 3


class FakeWriter:
    def __init__(self) -> None:
        self.sent: List[Dict[str, int]] = []

    def send_counters(self, counters: Dict[str, int]) -> None:
        self.sent.append(dict(counters))


def test_ros_bridge_counters_reporter_sends_when_changed() -> None:
    c = Counters(["/a"], [])
    w = FakeWriter()
    report = counters_reporter(c, ["/a"])
    report(w)  # type: ignore[arg-type]
    report(w)  # type: ignore[arg-type]
    c.received("/a")
    report(w)  # type: ignore[arg-type]
    assert [s["received"] for s in w.sent] == [0, 1]
    report(object())  # type: ignore[arg-type]  # a client without send_counters: nothing


def wait_for(cond: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def open_stream(daemon: Any, episode: str) -> Any:
    owner = Recorder.connect(str(daemon.socket), "t", protocol_version=2)
    ep = owner.open_multistream_episode(episode)
    rec = Recorder.connect(str(daemon.socket), "t/s", protocol_version=2)
    writer = rec.join_stream(episode, "s", [Channel("x", "i64", ())], timebase="timestamps_ns")
    return owner, ep, rec, writer


def test_ros_bridge_counters_worker_reports_from_its_thread_idle_or_busy(daemon) -> None:
    owner, ep, rec, writer = open_stream(daemon, "rep")
    calls: List[Any] = []
    worker_threads = set()

    def report(w: Any) -> None:
        calls.append(w)
        worker_threads.add(threading.current_thread().name)

    c = Counters(["/a"], [])
    worker = StreamWorker("s", ["/a"], rec, writer, 8, False, c, lambda s, e: None, report, 0.02)
    wait_for(lambda: len(calls) >= 3, "3 reports while idle")
    assert worker.put(1, [K.i64s([7])]) == "queued"
    summary = worker.finish(Outcome.COMPLETED)
    assert summary.timesteps == 1
    assert all(w is writer for w in calls) and worker_threads == {"wshard-ros-stream-s"}
    ep.close()
    owner.close()


def test_ros_bridge_counters_report_error_fails_the_stream(daemon) -> None:
    owner, ep, rec, writer = open_stream(daemon, "reperr")
    failed: List[Any] = []
    done = threading.Event()

    def report(w: Any) -> None:
        raise TransportError("report failed")

    def on_failure(stream: str, error: BaseException) -> None:
        failed.append((stream, str(error)))
        done.set()

    c = Counters(["/a"], [])
    worker = StreamWorker("s", ["/a"], rec, writer, 8, False, c, on_failure, report, 0.01)
    assert done.wait(20)
    worker.join(20)
    assert failed == [("s", "report failed")]
    assert worker.put(1, [K.i64s([1])]) == "dead"
    owner.close()
