#!/usr/bin/python3
"""A real rospy publisher process for the live tests and the benchmark.

    ros_pub.py --kind joint --topic /joint_states --count 300 --rate 300 --t0 NS
               [--subs 1] [--width W --height H] [--node NAME] [--text A --text B ...]

Waits until ``--subs`` subscribers are connected (get_num_connections, 20 s deadline: exit 3),
publishes message i = 0..count-1 of ``pubgen.make_message`` paced at ``--rate`` (stamp
``t0 + i * period``), or each ``--text`` as a std_msgs/String (kind ``text``); prints
``published N`` and then stays up until its stdin is closed (so nothing queued is lost to
an early exit).
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rospy  # noqa: E402
from pubgen import make_message, message_class, stamp_of  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kind", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--t0", type=int, default=1_700_000_000 * 1_000_000_000)
    p.add_argument("--subs", type=int, default=1)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--height", type=int, default=48)
    p.add_argument("--node", default="ros_pub")
    p.add_argument("--text", action="append", default=[])
    p.add_argument("--first", type=int, default=0, help="index of the first message")
    args = p.parse_args(rospy.myargv()[1:])
    rospy.init_node(args.node, anonymous=True, disable_signals=True)
    if args.kind == "text":
        from std_msgs.msg import String

        cls = String
    else:
        cls = message_class(args.kind)
    # rospy's outgoing queue per connection drops the oldest when full: 2 s of messages (at
    # least 100) rides out a stalled subscriber while 640x480 images stay under ~100 MB.
    queue = max(100, int(2 * args.rate))
    pub = rospy.Publisher(args.topic, cls, queue_size=queue, tcp_nodelay=True)
    deadline = time.monotonic() + 20.0
    while pub.get_num_connections() < args.subs:
        if time.monotonic() > deadline:
            print(f"no subscriber on {args.topic} after 20 s", file=sys.stderr, flush=True)
            return 3
        time.sleep(0.01)
    period = 1.0 / args.rate
    start = time.monotonic()
    n = 0
    if args.kind == "text":
        for k, text in enumerate(args.text):
            pub.publish(String(data=text))
            n += 1
            time.sleep(max(0.0, start + (k + 1) * period - time.monotonic()))
    else:
        for k in range(args.count):
            i = args.first + k
            t_ns = stamp_of(args.t0, i, args.rate)
            pub.publish(make_message(args.kind, i, t_ns, args.width, args.height))
            n += 1
            time.sleep(max(0.0, start + (k + 1) * period - time.monotonic()))
    print(f"published {n}", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
