"""``wshard-ros-bridge`` / ``python3 -m wshard_ros.ros1``: the live ROS 1 bridge process.

Exit status: 0 after a normal shutdown (SIGINT, SIGTERM, ``rosnode kill``); 2 when it
refuses to start, with one line on stderr: bad arguments, rospy not importable (not Debian's
``/usr/bin/python3``), the service classes not made (genpy missing, a bad ``.srv`` file of
``wshard_ros_msgs``), a bad mapping file (naming file, topic and key), a message type not
installed (naming topic and type), a package a mapping option needs (Pillow for
``compressed = "decode"``), a bridge socket path in use.
"""

import argparse
import logging
import sys
from typing import List, Optional

from ..errors import RosBridgeError
from ..mapping import load_mapping

EXIT_REFUSED = 2
#: What marks a ROS remapping argument (``__name:=other``, ``/topic:=/other``).
ROS_REMAP = ":="


def parser() -> argparse.ArgumentParser:
    """The command line (ROS remappings such as ``__name:=other`` are taken out first)."""
    p = argparse.ArgumentParser(
        prog="wshard-ros-bridge",
        description="Record ROS 1 topics through wshardd as multi-stream episodes "
        "(services ~start ~stop ~abort ~annotate ~status ~stop_episode ~abort_episode ~keep ~split_episode "
        "~flight_trigger, topic ~trigger, mapped [flight_triggers] topics).",
    )
    p.add_argument("--mapping", required=True, help="the mapping file (TOML): topics, streams, events")
    p.add_argument("--socket", required=True, help="wshardd's ingest socket")
    p.add_argument(
        "--control-socket",
        help="wshardd's control socket (~annotate, ~stop_episode, ~abort_episode, ~keep, ~split_episode, "
        "~flight_trigger, [flight_triggers] topics)",
    )
    p.add_argument("--bridge-socket", help="serve the bridge control socket (wshard bridge ...) here")
    p.add_argument("--queue-steps", type=int, default=4096, help="steps each stream's queue holds (default 4096)")
    p.add_argument("--transport", choices=("socket", "shm"), default="socket", help="every stream's transport")
    p.add_argument("--durability", choices=("ack", "chunk"), default="ack", help="the streams' durability")
    p.add_argument("--client-name", default="wshard-ros-bridge", help="HELLO client name of the connections")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run the bridge until ROS shuts it down; returns the exit status (see the module)."""
    raw = list(argv if argv is not None else sys.argv)
    # ROS remappings (`name:=value`) are rospy's (init_node reads them from `raw`).
    args = parser().parse_args([a for a in raw[1:] if ROS_REMAP not in a])
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("wshard-ros-bridge: %(levelname)s %(message)s"))
    logging.getLogger("wshard_ros").addHandler(handler)
    logging.getLogger("wshard_ros").setLevel(logging.INFO)
    try:
        import rospy
    except ImportError as e:
        return _refuse(f"rospy cannot be imported ({e}): run it with Debian's /usr/bin/python3 (python3-rospy)")
    from wshard_ros_msgs import ServiceCodeError

    from ..bridge import Bridge, BridgeOptions, serve_control
    from .msgclasses import message_classes

    try:
        from .node import Ros1Node, init_node  # imports wshard_ros_msgs.srv: genpy makes the service classes
    except ServiceCodeError as e:
        return _refuse(f"the service types cannot be made: {e}")

    try:
        mapping = load_mapping(args.mapping)
        message_classes(mapping)  # refuse a type not installed before talking to ROS
        opts = BridgeOptions(
            socket_path=args.socket,
            control_path=args.control_socket,
            client_name=args.client_name,
            queue_steps=args.queue_steps,
            transport=args.transport,
            durability=args.durability,
            bridge_socket=args.bridge_socket,
        )
        bridge = Bridge(mapping, opts)  # MissingDependency (e.g. Pillow for decode)
    except (RosBridgeError, ValueError) as e:
        return _refuse(str(e))
    try:
        server = serve_control(bridge, args.bridge_socket) if args.bridge_socket else None
    except (RosBridgeError, OSError) as e:
        return _refuse(str(e))
    init_node(argv=raw)
    node = Ros1Node(bridge, mapping)
    topics, events = len(mapping.topics), len(mapping.events)
    rospy.loginfo("wshard-ros-bridge: %d topics, %d event topics, daemon %s", topics, events, args.socket)
    try:
        rospy.spin()
    finally:
        node.shutdown()
        if server is not None:
            server.close()
        bridge.close()
    return 0


def _refuse(why: str) -> int:
    print(f"wshard-ros-bridge: {why}", file=sys.stderr)
    return EXIT_REFUSED
