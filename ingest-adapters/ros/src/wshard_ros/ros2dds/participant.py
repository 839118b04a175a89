"""The DDS side of the front end: the domain (optionally loopback-only), the participant and
the QoS of readers and writers.

**Loopback mode** (``--loopback`` or ``WSHARD_ROS2_LOOPBACK=1``): Cyclone DDS on the
loopback interface only, multicast off, discovery by unicast to ``127.0.0.1`` (participant
indices picked automatically). Measured on this project's CI machine: two participants so
configured exchange every reliable sample. Without it, Cyclone DDS's own configuration
applies (``CYCLONEDDS_URI``, else its defaults: multicast discovery on one interface).
"""

import os
from dataclasses import dataclass
from typing import Optional

from cyclonedds.core import DDSException, Policy, Qos
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.util import duration

from .errors import BadDomainId, DdsSetupError

#: Environment switch of the loopback configuration (``1``, ``true`` or ``yes``).
LOOPBACK_ENV = "WSHARD_ROS2_LOOPBACK"
#: ROS 2's domain id variable (default domain 0).
DOMAIN_ENV = "ROS_DOMAIN_ID"
#: DDS domain ids usable with the default port mapping (ROS 2 documents 0..232 on Linux).
MAX_DOMAIN_ID = 232
#: Participant indices the loopback config probes on 127.0.0.1 (one per participant on the host).
MAX_AUTO_PARTICIPANT_INDEX = 30

LOOPBACK_CONFIG = (
    "<CycloneDDS><Domain>"
    "<General><Interfaces><NetworkInterface name='lo'/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General>"
    "<Discovery><Peers><Peer address='127.0.0.1'/></Peers>"
    "<ParticipantIndex>auto</ParticipantIndex>"
    f"<MaxAutoParticipantIndex>{MAX_AUTO_PARTICIPANT_INDEX}</MaxAutoParticipantIndex></Discovery>"
    "</Domain></CycloneDDS>"
)

#: Plain CDR (XCDR1) only: what ROS 2 nodes write and read.
XCDR1 = Policy.DataRepresentation(use_cdrv0_representation=True)


@dataclass(frozen=True)
class DdsOptions:
    """How to join DDS: ``domain_id``; ``loopback`` (see module doc); ``best_effort``:
    readers accept best-effort writers too (and may then lose samples), else they are
    reliable and keep every sample until taken."""

    domain_id: int = 0
    loopback: bool = False
    best_effort: bool = False


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` says yes (``1``, ``true``, ``yes``)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def default_domain_id() -> int:
    """``$ROS_DOMAIN_ID`` or 0.

    Raises:
        BadDomainId: the variable is set but not a domain id.
    """
    raw = os.environ.get(DOMAIN_ENV, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise BadDomainId(f"{DOMAIN_ENV}={raw!r}: not an integer") from None
    return check_domain_id(value)


def check_domain_id(value: int) -> int:
    """``value`` if it is a usable domain id.

    Raises:
        BadDomainId: outside 0..232.
    """
    if not 0 <= value <= MAX_DOMAIN_ID:
        raise BadDomainId(f"DDS domain id {value}: must be 0..{MAX_DOMAIN_ID}")
    return value


def reader_qos(best_effort: bool) -> Qos:
    """Readers: reliable + keep-all (nothing dropped on the reader's side; a slow bridge
    slows the writers down instead), or best-effort + keep-all; volatile; XCDR1."""
    reliability = Policy.Reliability.BestEffort if best_effort else Policy.Reliability.Reliable(duration(seconds=1))
    return Qos(reliability, Policy.History.KeepAll, Policy.Durability.Volatile, XCDR1)


def writer_qos() -> Qos:
    """Writers (the test publishers, the command replies): reliable + keep-all, XCDR1."""
    return Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll, XCDR1)


class Participant:
    """One DDS domain participant (and the domain config it needs); ``close()`` deletes both."""

    def __init__(self, opts: DdsOptions) -> None:
        """Raises:
        DdsSetupError: the domain or participant cannot be created (names the domain id and
            Cyclone DDS's error).
        """
        check_domain_id(opts.domain_id)
        self.opts = opts
        self._domain: Optional[Domain] = None
        try:
            if opts.loopback:
                self._domain = Domain(opts.domain_id, LOOPBACK_CONFIG)
            self.dp = DomainParticipant(opts.domain_id)
        except DDSException as e:
            mode = "loopback" if opts.loopback else "default"
            raise DdsSetupError(f"DDS domain {opts.domain_id} ({mode} config): cannot create participant: {e}") from e

    def close(self) -> None:
        """Delete the participant (and its readers, writers, topics) and the domain."""
        for entity in (getattr(self, "dp", None), self._domain):
            if entity is not None:
                try:
                    entity.__del__()
                except DDSException:
                    pass
        self._domain = None
