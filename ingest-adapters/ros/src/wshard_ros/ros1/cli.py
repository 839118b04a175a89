"""``wshard-ros-bridge`` / ``python3 -m wshard_ros.ros1``: the live ROS 1 bridge process.

Exit status: 0 after a normal shutdown (SIGINT, SIGTERM, ``rosnode kill``); 2 when it
refuses to start (a bad mapping file, a message type not installed, bad arguments), each
with one line on stderr naming the file, topic and type.
"""

import argparse
import logging
import sys
from typing import List, Optional

from ..errors import MappingError
from ..mapping import load_mapping
from .errors import MessageClassMissing

EXIT_REFUSED = 2


def parser() -> argparse.ArgumentParser:
    """The command line (ROS remappings such as ``__name:=other`` are taken out first)."""
    p = argparse.ArgumentParser(
        prog="wshard-ros-bridge",
        description="Record ROS 1 topics through wshardd as multi-stream episodes "
        "(services ~start ~stop ~abort ~annotate ~status, topic ~trigger).",
    )
    p.add_argument("--mapping", required=True, help="the mapping file (TOML): topics, streams, events")
    p.add_argument("--socket", required=True, help="wshardd's ingest socket")
    p.add_argument("--control-socket", help="wshardd's control socket (needed by ~annotate)")
    p.add_argument("--bridge-socket", help="serve the bridge control socket (wshard bridge ...) here")
    p.add_argument("--queue-steps", type=int, default=4096, help="steps each stream's queue holds (default 4096)")
    p.add_argument("--transport", choices=("socket", "shm"), default="socket", help="every stream's transport")
    p.add_argument("--durability", choices=("ack", "chunk"), default="ack", help="the streams' durability")
    p.add_argument("--client-name", default="wshard-ros-bridge", help="HELLO client name of the connections")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run the bridge until ROS shuts it down; returns the exit status."""
    import rospy  # here: `--help` and the converter core's tests need no ROS install

    args = parser().parse_args(rospy.myargv(argv if argv is not None else sys.argv)[1:])
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("wshard-ros-bridge: %(levelname)s %(message)s"))
    logging.getLogger("wshard_ros").addHandler(handler)
    logging.getLogger("wshard_ros").setLevel(logging.INFO)
    try:
        mapping = load_mapping(args.mapping)
        from .msgclasses import message_classes

        message_classes(mapping)  # refuse a type not installed before talking to ROS
    except (MappingError, MessageClassMissing) as e:
        print(f"wshard-ros-bridge: {e}", file=sys.stderr)
        return EXIT_REFUSED
    from ..bridge import Bridge, BridgeOptions, serve_control
    from .node import Ros1Node, init_node

    try:
        opts = BridgeOptions(
            socket_path=args.socket,
            control_path=args.control_socket,
            client_name=args.client_name,
            queue_steps=args.queue_steps,
            transport=args.transport,
            durability=args.durability,
            bridge_socket=args.bridge_socket,
        )
    except ValueError as e:
        print(f"wshard-ros-bridge: {e}", file=sys.stderr)
        return EXIT_REFUSED
    init_node()
    bridge = Bridge(mapping, opts)
    node = Ros1Node(bridge, mapping)
    server = serve_control(bridge, args.bridge_socket) if args.bridge_socket else None
    rospy.loginfo("wshard-ros-bridge: %d topics, %d event topics, daemon %s", len(mapping.topics),
                  len(mapping.events), args.socket)
    try:
        rospy.spin()
    finally:
        node.shutdown()
        if server is not None:
            server.close()
        bridge.close()
    return 0

