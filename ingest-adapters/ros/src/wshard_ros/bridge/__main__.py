"""``python3 -m wshard_ros.bridge --mapping M --socket S [--control-socket C]
--bridge-socket B``: the recording core with its control socket and no front end (no
messages arrive). For testing the bridge control socket and the ``wshard bridge`` CLI; the
real bridges are ``wshard_ros.ros1`` and ``wshard_ros.ros2dds``.

Exit codes: 0 after SIGTERM or SIGINT (a recording episode is stopped first), 2 on a bad
mapping or a bridge socket that cannot be served."""

import argparse
import logging
import signal
import sys
import threading
from types import FrameType
from typing import List, Optional

from ..errors import MappingError
from ..mapping import load_mapping
from .control_socket import serve_control
from .core import Bridge
from .errors import ControlSocketError
from .options import BridgeOptions


def main(argv: Optional[List[str]] = None) -> int:
    """Run until SIGTERM or SIGINT; the exit code."""
    p = argparse.ArgumentParser(prog="python3 -m wshard_ros.bridge", description=__doc__.split("\n\n")[0])
    p.add_argument("--mapping", required=True, help="the mapping file (TOML)")
    p.add_argument("--socket", required=True, help="the daemon's ingest socket")
    p.add_argument(
        "--control-socket",
        help="the daemon's control socket (annotate, stop_episode, abort_episode, keep, split_episode, flight_trigger)",
    )
    p.add_argument("--bridge-socket", required=True, help="where to serve the bridge control socket")
    p.add_argument("--client-name", default="wshard-ros-bridge")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="wshard-ros-bridge: %(levelname)s %(message)s")
    try:
        mapping = load_mapping(args.mapping)
    except MappingError as e:
        print(f"wshard-ros-bridge: {e}", file=sys.stderr)
        return 2
    opts = BridgeOptions(
        socket_path=args.socket,
        control_path=args.control_socket,
        client_name=args.client_name,
        bridge_socket=args.bridge_socket,
    )
    bridge = Bridge(mapping, opts)
    try:
        server = serve_control(bridge)
    except ControlSocketError as e:
        print(f"wshard-ros-bridge: {e}", file=sys.stderr)
        return 2
    done = threading.Event()

    def on_signal(signum: int, frame: Optional[FrameType]) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"wshard-ros-bridge: serving {args.bridge_socket}", file=sys.stderr, flush=True)
    done.wait()
    server.close()
    bridge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
