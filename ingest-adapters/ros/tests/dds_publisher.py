"""A ROS 2-style DDS publisher process for the tests and the benchmark (no ROS install):
publishes messages of tests/dds_workload.py on one topic over Cyclone DDS.

    python3 dds_publisher.py --domain D [--loopback] --topic /joint_states --kind joint_state
        --rate 1000 --count 2000 [--start 0] [--width 8 --height 6] [--match-timeout 20]
        [--hold]

Prints ``matched`` once a reader is matched (it waits for one: DDS has no latching), then
publishes ``count`` messages paced at ``rate`` (absolute deadlines), waits until every
reader acknowledged them, prints ``done N`` and exits; with ``--hold`` it then waits for
its stdin to close (so a test can SIGKILL it after the acks). Exit 3: no reader matched in
time; 4: not acknowledged in time.
"""

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent.parent / "python" / "src"))
sys.path.insert(0, str(HERE))

from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402
from dds_workload import TYPES, image_base, message  # noqa: E402

from wshard_ros.ros2dds.names import DDS_TYPES, dds_topic_name  # noqa: E402
from wshard_ros.ros2dds.participant import DdsOptions, Participant, writer_qos  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--domain", type=int, required=True)
    p.add_argument("--loopback", action="store_true")
    p.add_argument("--topic", required=True)
    p.add_argument("--kind", required=True, choices=sorted(TYPES))
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--height", type=int, default=6)
    p.add_argument("--match-timeout", type=float, default=20.0)
    p.add_argument("--ack-timeout", type=float, default=60.0)
    p.add_argument("--hold", action="store_true")
    a = p.parse_args()

    part = Participant(DdsOptions(domain_id=a.domain, loopback=a.loopback))
    topic = Topic(part.dp, dds_topic_name(a.topic), DDS_TYPES[TYPES[a.kind]])
    writer = DataWriter(part.dp, topic, qos=writer_qos())
    deadline = time.monotonic() + a.match_timeout
    while not writer.get_matched_subscriptions():
        if time.monotonic() > deadline:
            print("no reader matched", flush=True)
            return 3
        time.sleep(0.01)
    print("matched", flush=True)
    base = image_base(a.width, a.height) if a.kind == "image" else b""
    period = 1.0 / a.rate
    t0 = time.monotonic()
    for k in range(a.count):
        i = a.start + k
        writer.write(message(a.kind, i, a.rate, a.width, a.height, base))
        wait = t0 + (k + 1) * period - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    if not writer.wait_for_acks(duration(seconds=a.ack_timeout)):
        print("not acknowledged", flush=True)
        return 4
    print(f"done {a.count}", flush=True)
    if a.hold:
        sys.stdin.read()
    part.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
