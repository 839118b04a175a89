"""Bags written by the real ROS 1 ``rosbag`` library (Debian's python3-rosbag, under
/usr/bin/python3), closed and left unclosed as a killed ``rosbag record`` leaves them
(no index: ``index_pos`` 0, the last chunk never written), imported bit for bit."""

import struct
import subprocess
from pathlib import Path
from typing import Dict

import bagkit as B
import pytest
from shard_parse import read_episode

ROS_PYTHON = "/usr/bin/python3"
N = 100
CHUNK = 4096

WRITER = """
import os, struct, sys
import rosbag, rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
bag = rosbag.Bag(sys.argv[1], "w", chunk_threshold={chunk})
for i in range({n}):
    # awkward doubles: -0.0, the smallest subnormal, a NaN payload, huge
    pos = [-0.0, 5e-324, struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0], i * 1e300]
    m = JointState(header=Header(stamp=rospy.Time(1700000000, i * 1000000)), name=["a", "b", "c", "d"],
                   position=pos, velocity=[float(i)] * 4, effort=[])
    bag.write("/joint_states", m, rospy.Time(1700000000, i * 1000000 + 250))
if sys.argv[2] == "close":
    bag.close()
else:
    bag._file.flush()
    os._exit(0)  # never closed, as a killed rosbag record
"""

MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
"""


def have_rosbag() -> bool:
    try:
        r = subprocess.run([ROS_PYTHON, "-c", "import rosbag, sensor_msgs.msg"], capture_output=True, timeout=60)
    except OSError:
        return False
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not have_rosbag(), reason="Debian's python3-rosbag is not installed")


def positions(i: int) -> bytes:
    return struct.pack("<4d", -0.0, 5e-324, struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0], i * 1e300)


@pytest.mark.parametrize("how", ["close", "kill"])
def test_ros_import_real_rosbag_closed_and_unclosed(how: str, binaries: Dict[str, Path], tmp_path: Path) -> None:
    bag = tmp_path / f"rosbag_{how}.bag"
    w = subprocess.run(
        [ROS_PYTHON, "-c", WRITER.format(chunk=CHUNK, n=N), str(bag), how], capture_output=True, text=True, timeout=60
    )
    assert w.returncode == 0, w.stderr
    mapping = tmp_path / "m.toml"
    mapping.write_text(MAPPING)
    data = tmp_path / "data"
    r = B.run_import([bag], mapping, binaries["wshardd"], "--data-dir", str(data), "--quiet")
    ep = bag.stem
    j = read_episode(data / ep / "streams", "joint_states")
    n = len(j.timestamps)
    if how == "close":
        assert r.code == 0, r.stderr
        assert n == N
    else:
        assert r.code == 5, r.stderr
        assert "no index (the recording was not closed)" in r.stderr
        assert 0 < n < N  # the chunk in memory when it was killed is lost
    assert j.status == ("complete" if how == "close" else "aborted")
    assert j.timestamps == [1_700_000_000 * 10**9 + i * 1_000_000 for i in range(n)]
    assert j.channel("signal/position") == b"".join(positions(i) for i in range(n))
    assert j.channel("signal/velocity") == b"".join(struct.pack("<4d", *[float(i)] * 4) for i in range(n))
    assert "signal/effort" not in j.blocks  # empty in the first message: no channel
    assert j.channel("signal/receive_t_ns") == b"".join(
        struct.pack("<q", 1_700_000_000 * 10**9 + i * 1_000_000 + 250) for i in range(n)
    )
