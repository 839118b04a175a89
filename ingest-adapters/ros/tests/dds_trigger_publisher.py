"""A DDS publisher process of trigger messages for the tests (no ROS install): writes
``--count`` messages on one topic, of a type the bridge knows (``std_msgs/String`` with
``--text``) or of one it does not (``fault``: a test-only struct, which the bridge reads
with the type its writer describes).

    python3 dds_trigger_publisher.py --domain D --topic /fault --kind string --text "jam"

Prints ``matched`` once a reader is matched (it waits for one), writes, waits until every
reader acknowledged, prints ``done N``. Exit 3: no reader matched in time; 4: not
acknowledged in time.
"""

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent.parent / "python" / "src"))

import cyclonedds.idl.types as types  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402

from wshard_ros.ros2dds.idl import String_  # noqa: E402
from wshard_ros.ros2dds.names import dds_topic_name  # noqa: E402
from wshard_ros.ros2dds.participant import DdsOptions, Participant, writer_qos  # noqa: E402

#: The DDS type name of the test-only message (a ROS 2 package the bridge has no IDL of).
FAULT_TYPE = "wshard_test_msgs::msg::dds_::Fault_"


@dataclass
class Fault_(IdlStruct, typename=FAULT_TYPE):
    code: types.int32
    severity: types.uint8
    text: str


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--domain", type=int, required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--kind", required=True, choices=("string", "fault"))
    p.add_argument("--text", default="")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--match-timeout", type=float, default=20.0)
    p.add_argument("--ack-timeout", type=float, default=30.0)
    a = p.parse_args()

    part = Participant(DdsOptions(domain_id=a.domain, loopback=True))
    cls = String_ if a.kind == "string" else Fault_
    writer = DataWriter(part.dp, Topic(part.dp, dds_topic_name(a.topic), cls), qos=writer_qos())
    deadline = time.monotonic() + a.match_timeout
    while not writer.get_matched_subscriptions():
        if time.monotonic() > deadline:
            print("no reader matched", flush=True)
            return 3
        time.sleep(0.01)
    print("matched", flush=True)
    for i in range(a.count):
        writer.write(String_(data=a.text) if a.kind == "string" else Fault_(code=i, severity=2, text=a.text))
    if not writer.wait_for_acks(duration(seconds=a.ack_timeout)):
        print("not acknowledged", flush=True)
        return 4
    print(f"done {a.count}", flush=True)
    part.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
