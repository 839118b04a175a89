"""Bag import end to end: bags of the three storage kinds written with rosbags' writers,
imported by the real command line into a real wshardd, every value read back bit for bit
with the right stamps; events; a topic the mapping does not name skipped and counted;
the same bag imported twice gives byte-identical episode directories."""

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import bagkit as B
import numpy as np
import pytest
from bridgekit import events_of, index_of
from shard_parse import read_episode


def f64(values: Any) -> bytes:
    return bytes(np.asarray(values, dtype="<f8").tobytes())


def i64s(values: List[int]) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


def check_episode(data_dir: Path, ep: str, msgs: List[B.Msg], bag_name: Optional[str], kind: str) -> None:
    """Every stream and event of the episode against the workload ``msgs`` (and the bag's
    name in the metadata unless ``bag_name`` is None)."""
    topics = B.by_topic(msgs)
    index = index_of_dir(data_dir, ep)
    assert index["status"] == "complete"
    assert [s["name"] for s in index["streams"]] == ["joint_states", "imu", "camera"]
    if bag_name is not None:
        assert index["metadata"]["ros_bag_import"]["bags"][0]["file"] == bag_name
    assert index["metadata"]["ros_bag_import"]["bags"][0]["kind"] == kind
    assert "damage" not in index["metadata"]["ros_bag_import"]

    js = topics["/joint_states"]
    j = read_episode(data_dir / ep / "streams", "joint_states")
    assert j.status == "complete"
    assert j.timestamps == [B.stamp_of(m.msg) for m in js]
    for field in ("position", "velocity", "effort"):
        assert j.channel(f"signal/{field}") == b"".join(f64(getattr(m.msg, field)) for m in js), field
    assert j.channel("signal/receive_t_ns") == i64s([m.log_ns for m in js])

    imus = topics["/imu"]
    i = read_episode(data_dir / ep / "streams", "imu")
    assert i.timestamps == [B.stamp_of(m.msg) for m in imus]
    q = [m.msg.orientation for m in imus]
    assert i.channel("signal/orientation") == b"".join(f64([o.x, o.y, o.z, o.w]) for o in q)
    av = [m.msg.angular_velocity for m in imus]
    assert i.channel("signal/angular_velocity") == b"".join(f64([v.x, v.y, v.z]) for v in av)
    assert i.channel("signal/linear_acceleration_covariance") == b"".join(
        f64(m.msg.linear_acceleration_covariance) for m in imus
    )

    color, depth = topics["/camera/color"], topics["/camera/depth"]
    c = read_episode(data_dir / ep / "streams", "camera")
    assert c.timestamps == [B.stamp_of(m.msg) for m in color] == [B.stamp_of(m.msg) for m in depth]
    assert c.channel("signal/rgb/image") == b"".join(bytes(m.msg.data) for m in color)
    assert c.channel("signal/depth/image") == b"".join(bytes(m.msg.data) for m in depth)
    assert c.channel("signal/rgb/receive_t_ns") == i64s([m.log_ns for m in color])
    assert c.channel("signal/depth/receive_t_ns") == i64s([m.log_ns for m in depth])

    events = events_of_dir(data_dir, ep)
    want = [(m.log_ns, m.msg.data) for m in topics["/instruction"]]
    assert [(e["t_ns"], e["data"]) for e in events] == want
    assert {e["label"] for e in events} == {"instruction"} and {e["kind"] for e in events} == {"text"}


def index_of_dir(data_dir: Path, ep: str) -> Dict[str, Any]:
    class D:  # bridgekit's helpers take a daemon; only its data_dir is read
        pass

    d = D()
    d.data_dir = data_dir  # type: ignore[attr-defined]
    return index_of(d, ep)  # type: ignore[arg-type]


def events_of_dir(data_dir: Path, ep: str) -> List[Dict[str, Any]]:
    class D:
        pass

    d = D()
    d.data_dir = data_dir  # type: ignore[attr-defined]
    return events_of(d, ep)  # type: ignore[arg-type]


def check_summary(summary: Dict[str, Any], msgs: List[B.Msg]) -> None:
    counts = {t: len(ms) for t, ms in B.by_topic(msgs).items()}
    topics = summary["topics"]
    for topic, n in counts.items():
        if topic == "/unmapped":
            assert topics[topic] == {
                "type": "std_msgs/Float64",
                "mapped": "",
                "read": n,
                "recorded": 0,
                "skipped": {"not_in_mapping": n},
                "last_error": None,
            }
        else:
            assert (topics[topic]["read"], topics[topic]["recorded"], topics[topic]["skipped"]) == (n, n, {}), topic


@pytest.mark.parametrize("kind", B.KINDS)
def test_ros_import_each_storage_kind_bit_exact(kind: str, binaries: Dict[str, Path], tmp_path: Path) -> None:
    msgs = B.workload(kind)
    bag = B.write_bag(kind, tmp_path / f"run_{kind}", msgs)
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    data = tmp_path / "data"
    r = B.run_import(
        [bag], mapping, binaries["wshardd"], "--data-dir", str(data), "--env-id", "arm", "--metadata", '{"robot": "r1"}'
    )
    assert r.code == 0, r.stderr
    assert r.summary is not None and r.summary["outcome"] == "completed"
    check_summary(r.summary, msgs)
    ep = f"run_{kind}"  # the default episode id: the bag's name
    assert r.summary["episode_id"] == ep
    check_episode(data, ep, msgs, B.storage_file(kind, bag).name, kind)
    index = index_of_dir(data, ep)
    assert index["env_id"] == "arm" and index["metadata"]["robot"] == "r1"
    assert "episode run_" in r.stdout and "/unmapped" in r.stdout
    v = subprocess.run([str(binaries["wshard"]), "verify", str(data / ep)], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr


def test_ros_import_into_a_running_daemon(daemon: Any, binaries: Dict[str, Path], tmp_path: Path) -> None:
    msgs = B.workload("mcap", joints=100, frames=4)
    bag = B.write_bag("mcap", tmp_path / "live", msgs)
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    r = B.run_import(
        [bag], mapping, binaries["wshardd"], "--socket", str(daemon.socket), "--episode-id", "from-bag", "--quiet"
    )
    assert r.code == 0, r.stderr
    assert r.stderr == ""  # --quiet: no progress
    check_episode(daemon.data_dir, "from-bag", msgs, "live.mcap", "mcap")
    daemon.assert_verified()


@pytest.mark.parametrize("kind", B.KINDS)
def test_ros_import_same_bag_same_bytes(kind: str, binaries: Dict[str, Path], tmp_path: Path) -> None:
    msgs = B.workload(kind, joints=200, frames=12)
    bag = B.write_bag(kind, tmp_path / "det", msgs)
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    trees = []
    for n in range(2):
        data = tmp_path / f"data{n}"
        # small chunks: chunk boundaries must not depend on how the client batched steps
        r = B.run_import([bag], mapping, binaries["wshardd"], "--data-dir", str(data), "--quiet", "--chunk-steps", "37")
        assert r.code == 0, r.stderr
        trees.append(B.tree_bytes(data / "det"))
    assert [name for name, _ in trees[0]] == [name for name, _ in trees[1]]
    assert sum(1 for name, _ in trees[0] if "joint_states_chunk_" in name) == -(-200 // 37)
    for (name, a), (_, b) in zip(trees[0], trees[1]):
        assert a == b, f"{name} differs between two imports of the same bag"
    index = index_of_dir(tmp_path / "data0", "det")
    assert index["created_unix_ns"] == min(m.log_ns for m in msgs if m.topic != "/unmapped")


def test_ros_import_ros1_lz4_chunks_and_two_bags_in_one_episode(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """lz4-compressed ROS 1 chunks; the workload split over two bags (the camera in one,
    the rest in the other) gives the same episode as one bag: merged by log time."""
    msgs = B.workload("ros1")
    cam = [m for m in msgs if m.topic.startswith("/camera/")]
    rest = [m for m in msgs if not m.topic.startswith("/camera/")]
    a = B.write_bag("ros1", tmp_path / "part_a", rest, lz4=True)
    b = B.write_bag("ros1", tmp_path / "part_b", cam, lz4=True)
    assert b"compression=lz4" in a.read_bytes()
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    data = tmp_path / "data"
    r = B.run_import([a, b], mapping, binaries["wshardd"], "--data-dir", str(data), "--episode-id", "two", "--quiet")
    assert r.code == 0, r.stderr
    assert r.summary is not None
    check_summary(r.summary, msgs)
    index = index_of_dir(data, "two")
    assert [x["file"] for x in index["metadata"]["ros_bag_import"]["bags"]] == ["part_a.bag", "part_b.bag"]
    check_episode(data, "two", msgs, None, "ros1")


def test_ros_import_sqlite_without_definitions_uses_the_distro_store(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """A rosbag2 sqlite3 bag without message definitions (older rosbag2) is read with the
    built-in types of its distribution: the values are the same."""
    import sqlite3

    msgs = B.workload("sqlite3", joints=60, frames=3)
    bag = B.write_bag("sqlite3", tmp_path / "nodefs", msgs)
    db = sqlite3.connect(B.storage_file("sqlite3", bag))
    with db:
        db.execute("DELETE FROM message_definitions")
    db.close()
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    data = tmp_path / "data"
    r = B.run_import([bag], mapping, binaries["wshardd"], "--data-dir", str(data), "--quiet")
    assert r.code == 0, r.stderr
    check_episode(data, "nodefs", msgs, "nodefs.db3", "sqlite3")


def test_ros_import_through_wshard_import(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """`wshard import` (the operator CLI) runs the importer, which finds the wshardd beside
    that `wshard` for --data-dir with neither $WSHARDD_BIN nor $WSHARD_BIN set."""
    msgs = B.workload("mcap")
    bag = B.write_bag("mcap", tmp_path / "cli_run", msgs)
    mapping = tmp_path / "m.toml"
    mapping.write_text(B.MAPPING)
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("WSHARDD_BIN", "WSHARD_BIN")}
    env["PYTHONPATH"] = f"{B.SRC}:{B.CLIENT_SRC}"
    env["WSHARD_PYTHON"] = sys.executable
    r = subprocess.run(
        [str(binaries["wshard"]), "import", str(bag), "--mapping", str(mapping), "--data-dir", str(data), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    check_episode(data, "cli_run", msgs, B.storage_file("mcap", bag).name, "mcap")
