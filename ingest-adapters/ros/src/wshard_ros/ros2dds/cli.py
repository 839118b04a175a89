"""``wshard-ros2-bridge`` / ``python3 -m wshard_ros.ros2dds``: record ROS 2 topics, read
straight from DDS (no ROS install), through ``wshardd``.

    python3 -m wshard_ros.ros2dds --mapping M.toml --socket S [--control-socket C]
        [--bridge-socket B] [--domain-id N] [--loopback] [--best-effort] [--node-name NAME]

Exit codes: 0 after SIGTERM/SIGINT (a recording episode is stopped first), 2 for a bad
mapping, a type this front end cannot subscribe or a bad option (the message names the
topic and type), 3 when DDS cannot be set up.
"""

import argparse
import logging
import re
import signal
import sys
import threading
from typing import List, Optional, Sequence

from ..bridge.errors import ControlSocketError
from ..errors import MappingError
from ..mapping import load_mapping
from .errors import DdsSetupError, UnsupportedTopicType
from .participant import LOOPBACK_ENV, DdsOptions, default_domain_id, env_flag
from .runner import DdsBridge, DdsBridgeOptions

log = logging.getLogger("wshard_ros.ros2dds")

EXIT_USAGE = 2
EXIT_DDS = 3
DEFAULT_NODE_NAME = "wshard_ros_bridge"
_NODE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="wshard-ros2-bridge",
        description="Record ROS 2 topics over DDS (Cyclone DDS, no ROS install) into wshardd.",
    )
    p.add_argument("--mapping", required=True, help="the mapping file (TOML), see the README")
    p.add_argument("--socket", required=True, help="wshardd's ingest socket")
    p.add_argument(
        "--control-socket",
        help="wshardd's control socket (annotate, stop_episode, abort_episode, keep, split_episode, flight_trigger)",
    )
    p.add_argument("--bridge-socket", help="serve the bridge socket (JSON control) at this path")
    p.add_argument("--domain-id", type=int, help="DDS / ROS 2 domain id (default $ROS_DOMAIN_ID or 0)")
    p.add_argument(
        "--loopback",
        action="store_true",
        help=f"loopback only, no multicast, unicast discovery on 127.0.0.1 (also ${LOOPBACK_ENV}=1)",
    )
    p.add_argument(
        "--best-effort",
        action="store_true",
        help="best-effort readers (match best-effort publishers too; may lose samples)",
    )
    p.add_argument("--node-name", default=DEFAULT_NODE_NAME, help="names the command topic /NAME/command")
    p.add_argument("--client-name", default="wshard-ros2-bridge", help="client name given to wshardd")
    p.add_argument("--queue-steps", type=int, default=4096, help="per stream queue bound (steps)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p


def options(args: argparse.Namespace) -> DdsBridgeOptions:
    """The front end's options from the command line.

    Raises:
        ValueError: a bad node name or queue bound; ``BadDomainId`` (a ``ValueError``) for
            a bad domain id (argument or ``$ROS_DOMAIN_ID``).
    """
    if not _NODE_RE.match(args.node_name):
        raise ValueError(f"--node-name {args.node_name!r}: letters, digits and _, starting with a letter")
    if args.queue_steps < 1:
        raise ValueError(f"--queue-steps {args.queue_steps}: must be >= 1")
    domain = default_domain_id() if args.domain_id is None else args.domain_id
    dds = DdsOptions(domain_id=domain, loopback=args.loopback or env_flag(LOOPBACK_ENV), best_effort=args.best_effort)
    return DdsBridgeOptions(
        socket_path=args.socket,
        control_path=args.control_socket,
        bridge_socket=args.bridge_socket,
        client_name=args.client_name,
        queue_steps=args.queue_steps,
        node_name=args.node_name,
        dds=dds,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run until SIGTERM or SIGINT; the exit code (see the module doc)."""
    args = parser().parse_args(list(argv) if argv is not None else None)
    logging.basicConfig(level=args.log_level.upper(), format="wshard-ros2-bridge: %(levelname)s: %(message)s")
    try:
        mapping = load_mapping(args.mapping)
        opts = options(args)
        bridge = DdsBridge(mapping, opts)
    except (MappingError, UnsupportedTopicType, ValueError) as e:
        print(f"wshard-ros2-bridge: {e}", file=sys.stderr)
        return EXIT_USAGE
    except DdsSetupError as e:
        print(f"wshard-ros2-bridge: {e}", file=sys.stderr)
        return EXIT_DDS
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        try:
            bridge.start()
        except ControlSocketError as e:
            print(f"wshard-ros2-bridge: {e}", file=sys.stderr)
            return EXIT_USAGE
        topics: List[str] = [t.topic for t in mapping.topics] + [e.topic for e in mapping.events]
        log.info(
            "ready: %d topics, %d flight trigger topics on DDS domain %d%s; commands on %s",
            len(topics),
            len(mapping.flight_triggers),
            opts.dds.domain_id,
            " (loopback)" if opts.dds.loopback else "",
            bridge.command_topic_name,
        )
        done.wait()
        log.info("stopping")
    finally:
        bridge.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
