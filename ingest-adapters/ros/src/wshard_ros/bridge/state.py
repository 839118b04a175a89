"""The bridge's state, under one lock: its phase (idle, recording, failed), the episode
recording (or the one that failed), whether it still takes messages, and the last error.

The bridge (:mod:`wshard_ros.bridge.core`) moves it from phase to phase; the path of a
sample into its stream (:mod:`wshard_ros.bridge.recording`) reads it before a stream
joins and when a step is queued."""

import threading
from typing import Optional

from .options import BridgeState
from .streams import EpisodeRun


class RecordingState:
    """What the bridge is doing. Every field is read and written under :attr:`lock`."""

    def __init__(self) -> None:
        #: Guards the fields below; held while a stream joins.
        self.lock = threading.Lock()
        #: What :meth:`~wshard_ros.bridge.Bridge.status` reports as ``state``.
        self.phase = BridgeState.IDLE
        #: ``RECORDING`` and the episode not ending (``stop``, ``abort``): messages are taken.
        self.accepting = False
        #: The episode recording.
        self.run: Optional[EpisodeRun] = None
        #: The episode that failed (while ``FAILED``).
        self.failed_run: Optional[EpisodeRun] = None
        #: The latest failure, naming the episode and the stream or connection.
        self.last_error: Optional[str] = None

    @property
    def failed(self) -> bool:
        """Whether the phase is ``FAILED``."""
        return self.phase is BridgeState.FAILED

    def accepts(self, run: EpisodeRun) -> bool:
        """Whether ``run`` is recording and not ending (under :attr:`lock`)."""
        return self.accepting and self.run is run

    def episode_id(self) -> Optional[str]:
        """The recording episode's id, else the failed one's (under :attr:`lock`)."""
        run = self.run or self.failed_run
        return run.episode_id if run is not None else None
