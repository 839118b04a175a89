"""Bag import of damaged and wrong bags: a bag cut short (each storage kind) imports what
is readable, reports the rest and ends the episode ``aborted`` with the damage in its
metadata; a corrupt bag, a bag that is no bag, a mapping whose type differs from the
bag's: a clear error, exit code, and no episode; a message whose shape changes mid-bag
is skipped, counted and named."""

import json
from pathlib import Path
from typing import Any, Dict, List

import bagkit as B
import pytest
from shard_parse import read_episode

CUT_AT = 0.6
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"


def index_of(data: Path, ep: str) -> Dict[str, Any]:
    return dict(json.loads((data / ep / f"{ep}_index.json").read_text()))


def mapping_file(tmp_path: Path, text: str = B.MAPPING) -> Path:
    p = tmp_path / "m.toml"
    p.write_text(text)
    return p


def cut(path: Path, fraction: float) -> int:
    data = path.read_bytes()
    keep = int(len(data) * fraction)
    path.write_bytes(data[:keep])
    return keep


@pytest.mark.parametrize("variant", [*B.KINDS, "ros1-lz4"])
def test_ros_import_truncated_bag_keeps_what_is_readable(
    variant: str, binaries: Dict[str, Path], tmp_path: Path
) -> None:
    kind = variant.split("-")[0]
    msgs = B.workload(kind, joints=600, frames=24)
    bag = B.write_bag(kind, tmp_path / "cut", msgs, lz4=variant == "ros1-lz4")
    if kind != "ros1":
        (bag / "metadata.yaml").unlink()  # a recording cut short has none
    storage = B.storage_file(kind, bag)
    cut(storage, CUT_AT)
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 5, r.stdout + r.stderr
    assert "damaged bag" in r.stderr and storage.name in r.stderr
    assert r.summary is not None and r.summary["outcome"] == "aborted"
    assert r.summary["damage"] and any(storage.name in d["file"] for d in r.summary["damage"])
    if variant == "ros1-lz4":  # a compressed chunk cut short cannot be read at all
        assert "lz4 chunk cut short: its messages are lost" in r.stderr
    index = index_of(data, "cut")
    assert index["status"] == "aborted"
    damage = index["metadata"]["ros_bag_import"]["damage"]
    assert any(storage.name in d["file"] for d in damage), damage

    joints = B.by_topic(msgs)["/joint_states"]
    j = read_episode(data / "cut" / "streams", "joint_states")
    n = len(j.timestamps)
    assert 0 < n < len(joints)
    assert r.summary["topics"]["/joint_states"]["recorded"] == n
    want = {B.stamp_of(m.msg): m for m in joints}
    got: List[B.Msg] = [want[t] for t in j.timestamps]  # every step is a message of the bag ...
    assert j.timestamps == sorted(j.timestamps)  # ... in order ...
    assert j.channel("signal/position") == b"".join(bytes(m.msg.position.astype("<f8").tobytes()) for m in got)
    if kind != "sqlite3":  # ... and for a sequential file the readable part is its head
        assert j.timestamps == [B.stamp_of(m.msg) for m in joints[:n]]
    v = __import__("subprocess").run(
        [str(binaries["wshard"]), "verify", str(data / "cut")], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.parametrize(
    "name, content, what",
    [
        ("garbage.bag", b"#ROSBAG V2.0\n" + b"\xff" * 64, "bag header unreadable"),
        ("garbage.mcap", b"\x89MCAP0\r\n" + b"\x00" * 3, "no channel record readable"),
        ("notabag.bag", b"hello, I am not a bag\n", "unknown magic"),
        ("empty.db3", b"", "empty file"),
        ("garbage.db3", b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 200, "not a database"),
    ],
)
def test_ros_import_corrupt_bag_refused_without_episode(
    name: str, content: bytes, what: str, binaries: Dict[str, Path], tmp_path: Path
) -> None:
    bag = tmp_path / name
    bag.write_bytes(content)
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 3, r.stdout + r.stderr
    assert str(bag) in r.stderr and what in r.stderr, r.stderr
    assert r.summary is None and r.stdout == ""
    assert not data.exists() or not any(p.name != ".wshardd.lock" for p in data.iterdir())


def test_ros_import_missing_bag_refused(binaries: Dict[str, Path], tmp_path: Path) -> None:
    r = B.run_import(
        [tmp_path / "nope.bag"], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(tmp_path / "d")
    )
    assert r.code == 3 and "nope.bag: no such file or directory" in r.stderr


@pytest.mark.parametrize("kind", ["ros1", "mcap"])
def test_ros_import_type_mismatch_names_topic_and_both_types(
    kind: str, binaries: Dict[str, Path], tmp_path: Path
) -> None:
    bag = B.write_bag(kind, tmp_path / "mm", B.workload(kind, joints=20, frames=1))
    wrong = B.MAPPING.replace(
        '[topics."/imu"]\ntype = "sensor_msgs/Imu"', '[topics."/imu"]\ntype = "sensor_msgs/JointState"'
    )
    assert wrong != B.MAPPING
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path, wrong), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 4, r.stdout + r.stderr
    assert "'/imu'" in r.stderr and "sensor_msgs/msg/Imu" in r.stderr and "sensor_msgs/JointState" in r.stderr
    assert not data.exists()


def test_ros_import_shape_change_skipped_and_counted(binaries: Dict[str, Path], tmp_path: Path) -> None:
    msgs = B.workload("mcap", joints=50, frames=2)
    joints = [m for m in msgs if m.topic == "/joint_states"]
    bad = joints[20].msg
    bad.position = bad.position[:6]  # 6 joints where the first message had 7
    bag = B.write_bag("mcap", tmp_path / "shape", msgs)
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 1, r.stdout + r.stderr
    t = r.summary["topics"]["/joint_states"] if r.summary else {}
    assert (t["read"], t["recorded"], t["skipped"]) == (50, 49, {"error": 1})
    assert "position" in t["last_error"] and "/joint_states" in t["last_error"]
    assert index_of(data, "shape")["status"] == "complete"
    j = read_episode(data / "shape" / "streams", "joint_states")
    assert j.timestamps == [B.stamp_of(m.msg) for m in joints if m.msg is not bad]


def test_ros_import_bad_mapping_and_metadata_are_usage_errors(binaries: Dict[str, Path], tmp_path: Path) -> None:
    bag = B.write_bag("ros1", tmp_path / "u", B.workload("ros1", joints=5, frames=1))
    r = B.run_import(
        [bag], mapping_file(tmp_path, "[topics]\n"), binaries["wshardd"], "--data-dir", str(tmp_path / "d")
    )
    assert r.code == 2 and "m.toml" in r.stderr
    r = B.run_import(
        [bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(tmp_path / "d"), "--metadata", "[1]"
    )
    assert r.code == 2 and "--metadata" in r.stderr


def test_ros_import_sqlite_page_smashed_mid_file(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """A table page destroyed in the middle of a sqlite3 bag: the rows still readable are
    salvaged by row id, the rest reported, the episode aborted."""
    msgs = B.workload("sqlite3", joints=600, frames=24)
    bag = B.write_bag("sqlite3", tmp_path / "smash", msgs)
    db = B.storage_file("sqlite3", bag)
    raw = bytearray(db.read_bytes())
    page = 4096
    # a table b-tree leaf page (type byte 0x0d) past the middle: rows SQLite can no longer
    # find (an overflow page would corrupt an image silently: SQLite has no checksums)
    middle = next(p * page for p in range(len(raw) // page // 2, len(raw) // page) if raw[p * page] == 0x0D)
    raw[middle : middle + 64] = b"\xff" * 64
    db.write_bytes(bytes(raw))
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 5, r.stdout + r.stderr
    assert "unreadable" in r.stderr and db.name in r.stderr and "messages row" in r.stderr
    index = index_of(data, "smash")
    assert index["status"] == "aborted"
    assert any("unreadable" in d["what"] for d in index["metadata"]["ros_bag_import"]["damage"])
    joints = B.by_topic(msgs)["/joint_states"]
    j = read_episode(data / "smash" / "streams", "joint_states")
    want = {B.stamp_of(m.msg): m for m in joints}
    assert len(joints) // 2 < len(j.timestamps) < len(joints) and j.timestamps == sorted(j.timestamps)
    got = [want[t] for t in j.timestamps]
    assert j.channel("signal/position") == b"".join(bytes(m.msg.position.astype("<f8").tobytes()) for m in got)
    assert j.timestamps[-1] == B.stamp_of(joints[-1].msg)  # rows past the bad page were salvaged


def test_ros_import_damage_found_while_reading_is_annotated(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """An MCAP whose footer and index are intact but one zstd chunk is garbled: found only
    when that chunk is read; the rest comes from a sequential scan that skips that chunk;
    the episode is aborted and the damage annotated on it."""
    msgs = B.workload("mcap", joints=600, frames=24)
    bag = B.write_bag("mcap", tmp_path / "garbled", msgs, zstd_chunks=True)
    f = B.storage_file("mcap", bag)
    raw = bytearray(f.read_bytes())
    # the zstd frames of the chunks (random pixels are stored raw inside a frame, so only
    # a broken frame header is detectable: rosbags writes no chunk CRC)
    frames, at = [], raw.find(ZSTD_MAGIC)
    while at >= 0:
        frames.append(at)
        at = raw.find(ZSTD_MAGIC, at + 1)
    assert len(frames) >= 3
    middle = frames[len(frames) // 2]
    raw[middle : middle + 4] = b"\0\0\0\0"
    f.write_bytes(bytes(raw))
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data))
    assert r.code == 5, r.stdout + r.stderr
    assert "the rest is read by a sequential scan" in r.stderr and f.name in r.stderr
    assert "chunk unreadable" in r.stderr
    index = index_of(data, "garbled")
    assert index["status"] == "aborted" and "damage" not in index["metadata"]["ros_bag_import"]
    notes = json.loads((data / "garbled" / "garbled_annotations.json").read_text())["annotations"]
    assert [a["label"] for a in notes] == ["ros_bag_import.damage"]
    whats = [d["what"] for d in notes[0]["data"]["damage"]]
    assert any("the rest is read by a sequential scan" in w for w in whats)
    assert any("chunk unreadable" in w for w in whats)
    by = B.by_topic(msgs)
    for topic, stream, field in (("/joint_states", "joint_states", "signal/position"), ("/imu", "imu", None)):
        want = {B.stamp_of(m.msg): m for m in by[topic]}
        s = read_episode(data / "garbled" / "streams", stream)
        assert 0 < len(s.timestamps) < len(want) and s.timestamps == sorted(s.timestamps)
        assert len(set(s.timestamps)) == len(s.timestamps)  # nothing fed twice
        if field:
            got = [want[t] for t in s.timestamps]
            assert s.channel(field) == b"".join(bytes(m.msg.position.astype("<f8").tobytes()) for m in got)
    c = read_episode(data / "garbled" / "streams", "camera")
    assert c.timestamps[-1] == B.stamp_of(by["/camera/color"][-1].msg)  # read past the bad chunk


def test_ros_import_ros1_bad_chunk_skipped(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """An indexed ROS 1 bag with one lz4 chunk garbled: that chunk's messages are skipped
    and reported, the chunks after it still imported, the episode aborted."""
    msgs = B.workload("ros1", joints=600, frames=24)
    bag = B.write_bag("ros1", tmp_path / "badchunk", msgs, lz4=True)
    raw = bytearray(bag.read_bytes())
    frames, at = [], raw.find(LZ4_MAGIC)
    while at >= 0:
        frames.append(at)
        at = raw.find(LZ4_MAGIC, at + 1)
    assert len(frames) >= 3
    raw[frames[len(frames) // 2] : frames[len(frames) // 2] + 4] = b"\0\0\0\0"
    bag.write_bytes(bytes(raw))
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data), "--quiet")
    assert r.code == 5, r.stdout + r.stderr
    assert "chunk unreadable" in r.stderr and "CHUNK at" in r.stderr
    assert index_of(data, "badchunk")["status"] == "aborted"
    notes = json.loads((data / "badchunk" / "badchunk_annotations.json").read_text())["annotations"]
    assert "chunk unreadable" in notes[0]["data"]["damage"][0]["what"]
    joints = B.by_topic(msgs)["/joint_states"]
    j = read_episode(data / "badchunk" / "streams", "joint_states")
    assert 0 < len(j.timestamps) < len(joints)
    color = B.by_topic(msgs)["/camera/color"]
    c = read_episode(data / "badchunk" / "streams", "camera")
    assert c.timestamps[-1] == B.stamp_of(color[-1].msg)  # the chunk after the bad one was read
    want = {B.stamp_of(m.msg): m for m in joints}
    got = [want[t] for t in j.timestamps]
    assert j.channel("signal/position") == b"".join(bytes(m.msg.position.astype("<f8").tobytes()) for m in got)


def test_ros_import_mcap_scan_skips_a_bad_chunk(binaries: Dict[str, Path], tmp_path: Path) -> None:
    """An MCAP cut short (so scanned) with one zstd chunk garbled before the cut: the scan
    skips that chunk and reads the chunks after it."""
    msgs = B.workload("mcap", joints=600, frames=36)
    bag = B.write_bag("mcap", tmp_path / "scanbad", msgs, zstd_chunks=True)
    (bag / "metadata.yaml").unlink()
    f = B.storage_file("mcap", bag)
    raw = bytearray(f.read_bytes())
    frames, at = [], raw.find(ZSTD_MAGIC)
    while at >= 0:
        frames.append(at)
        at = raw.find(ZSTD_MAGIC, at + 1)
    assert len(frames) >= 4
    raw[frames[1] : frames[1] + 4] = b"\0\0\0\0"  # the second chunk
    f.write_bytes(bytes(raw[: frames[-1] + 16]))  # cut inside the last chunk: no summary, no footer
    data = tmp_path / "data"
    r = B.run_import([bag], mapping_file(tmp_path), binaries["wshardd"], "--data-dir", str(data), "--quiet")
    assert r.code == 5, r.stdout + r.stderr
    assert "chunk unreadable" in r.stderr and "skipped" in r.stderr and "no usable footer" in r.stderr
    damage = index_of(data, "scanbad")["metadata"]["ros_bag_import"]["damage"]
    assert sum("chunk unreadable" in d["what"] for d in damage) == 1
    color = B.by_topic(msgs)["/camera/color"]
    c = read_episode(data / "scanbad" / "streams", "camera")
    stamps = [B.stamp_of(m.msg) for m in color]
    assert c.timestamps[0] == stamps[0]  # the first chunk
    assert [t for t in stamps if t > c.timestamps[0]] != [t for t in c.timestamps[1:]]  # a gap: chunk 2 lost
    assert set(c.timestamps) < set(stamps) and max(c.timestamps) > stamps[len(stamps) // 2]  # chunks after it read
