#!/usr/bin/env python3
"""Benchmark of the bag import (issue 14): MB/s of a rosbag2 MCAP imported into an
episode vs. reading the same bag end to end with rosbags alone (the floor a Python
reader sets).

1. Generate a rosbag2 MCAP of --size-gb (default 2 GB) with rosbags' writer:
   sensor_msgs/JointState at 1 kHz (7 joints), sensor_msgs/Image 640x480 rgb8 at 30 Hz,
   sensor_msgs/Imu at 200 Hz, in log-time order.
2. (a) Read it with rosbags alone (AnyReader, every message deserialized), in a child
   process: wall and CPU seconds.
   (b) Import it: `python3 -m wshard_ros.bag_import BAG --data-dir D` in a child process
   (which starts and stops its private wshardd): wall and CPU seconds, the daemon's CPU
   included (the import waits for its daemon, so the daemon's CPU is in the child's
   rusage).
3. Print MB/s of both and the ratio (import / read; the target is >= 1x). ``--cold`` drops
   the page cache (root) before each of the two runs, so both read the bag from the disk.

    python3 bench/ros/import_mcap.py                   # 2 GB (the real run; minutes)
    python3 bench/ros/import_mcap.py --cold            # the same, each run reading from the disk
    python3 bench/ros/import_mcap.py --size-gb 0.01    # smoke: a few seconds

wshardd: --wshardd, else target/release/wshardd, else $WSHARDD_BIN, else target/debug/wshardd
(use a release build: a debug wshardd is ~10x slower and becomes the bottleneck).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

REPO = Path(__file__).resolve().parents[2]
SRC = f"{REPO / 'ingest-adapters' / 'ros' / 'src'}:{REPO / 'ingest-adapters' / 'python' / 'src'}"
JOINT_HZ, IMAGE_HZ, IMU_HZ = 1000, 30, 200
H, W = 480, 640
T0 = 1_700_000_000 * 1_000_000_000
MAPPING = """
[topics."/joint_states"]
type = "sensor_msgs/JointState"
tick_hz = 1000

[topics."/camera/image_raw"]
type = "sensor_msgs/Image"
tick_hz = 30
codec = "{image_codec}"

[topics."/imu"]
type = "sensor_msgs/Imu"
tick_hz = 200
"""

READ_FLOOR = """
import sys
from pathlib import Path
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
n = 0
with AnyReader([Path(sys.argv[1])], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as r:
    for conn, t, raw in r.messages():
        r.deserialize(raw, conn.msgtype)
        n += 1
print(n)
"""


def generate(path: Path, size_bytes: int) -> Tuple[int, int]:
    """Write the MCAP; returns (messages, bytes of the storage file)."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    T = store.types
    rng = np.random.default_rng(0)
    # a few distinct frames, reused with one changed row each: generating 2 GB of random
    # pixels would dominate; the import does not look at pixel values.
    frames = [rng.integers(0, 256, size=H * W * 3, dtype=np.uint8) for _ in range(8)]

    def header(t: int, frame: str) -> object:
        return T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](sec=t // 1_000_000_000, nanosec=t % 1_000_000_000), frame_id=frame
        )

    n = 0
    written = 0
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        cj = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=store)
        ci = w.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=store)
        cu = w.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=store)
        tick = 0  # 1 ms ticks
        names = [f"joint{k}" for k in range(7)]
        vec = T["geometry_msgs/msg/Vector3"]
        while written < size_bytes:
            t = T0 + tick * 1_000_000
            q = rng.standard_normal(21)
            js = T["sensor_msgs/msg/JointState"](
                header=header(t, "base"), name=names, position=q[:7], velocity=q[7:14], effort=q[14:]
            )
            raw = store.serialize_cdr(js, "sensor_msgs/msg/JointState")
            w.write(cj, t + 100_000, raw)
            written += len(raw)
            n += 1
            if tick % (1000 // IMU_HZ) == 0:
                v = rng.standard_normal(10)
                imu = T["sensor_msgs/msg/Imu"](
                    header=header(t, "imu"),
                    orientation=T["geometry_msgs/msg/Quaternion"](x=v[0], y=v[1], z=v[2], w=v[3]),
                    orientation_covariance=np.zeros(9),
                    angular_velocity=vec(x=v[4], y=v[5], z=v[6]),
                    angular_velocity_covariance=np.zeros(9),
                    linear_acceleration=vec(x=v[7], y=v[8], z=v[9]),
                    linear_acceleration_covariance=np.zeros(9),
                )
                raw = store.serialize_cdr(imu, "sensor_msgs/msg/Imu")
                w.write(cu, t + 150_000, raw)
                written += len(raw)
                n += 1
            if (tick * IMAGE_HZ) % 1000 < IMAGE_HZ:
                k = tick * IMAGE_HZ // 1000
                data = frames[k % len(frames)]
                data[(k % H) * W * 3 : (k % H + 1) * W * 3] = k % 256
                img = T["sensor_msgs/msg/Image"](
                    header=header(t, "cam"), height=H, width=W, encoding="rgb8", is_bigendian=0, step=W * 3, data=data
                )
                raw = store.serialize_cdr(img, "sensor_msgs/msg/Image")
                w.write(ci, t + 2_000_000, raw)
                written += len(raw)
                n += 1
            tick += 1
    storage = next(path.glob("*.mcap"))
    return n, storage.stat().st_size


def timed(cmd: List[str], env: Dict[str, str]) -> Tuple[float, float, str]:
    """Run ``cmd``; (wall s, CPU s of it and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{cmd[:4]} failed with {r.returncode}:\n{r.stdout}\n{r.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.stdout


def drop_page_cache() -> None:
    """Write back dirty pages and drop the page cache (root only)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as e:
        sys.exit(f"--cold: cannot drop the page cache ({e}); run as root")


def find_wshardd(explicit: str) -> str:
    """--wshardd, else a release build, else $WSHARDD_BIN, else a debug build (a debug
    wshardd is ~10x slower and makes the daemon the bottleneck: a warning says so)."""
    for c in (explicit, str(REPO / "target/release/wshardd"), os.environ.get("WSHARDD_BIN", ""),
              str(REPO / "target/debug/wshardd")):
        if c and Path(c).is_file():
            return c
    sys.exit("wshardd not found: build it (cargo build --release -p wshard-recorder) or give --wshardd")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-gb", type=float, default=2.0, help="size of the generated bag (default 2)")
    p.add_argument("--workdir", help="where the bag and the episode go (default: a temporary directory)")
    p.add_argument("--image-codec", default="lz4", help="codec of the image channel (default lz4)")
    p.add_argument("--wshardd", default="")
    p.add_argument("--durability", choices=("ack", "chunk"), default="ack", help="the import's streams (default ack)")
    p.add_argument("--keep", action="store_true", help="keep the bag and the episode")
    p.add_argument(
        "--cold",
        action="store_true",
        help="drop the page cache (as root) before each timed run: the bag is read from the disk, "
        "as an archive of bags not read lately is",
    )
    args = p.parse_args()
    wshardd = find_wshardd(args.wshardd)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    bag, data = work / "bench_bag", work / "data"
    shutil.rmtree(bag, ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=SRC, WSHARDD_BIN=wshardd)
    try:
        t = time.monotonic()
        n, size = generate(bag, int(args.size_gb * 1e9))
        print(f"generated {bag}: {n} messages, {size / 1e6:.1f} MB in {time.monotonic() - t:.1f} s", file=sys.stderr)
        mapping = work / "mapping.toml"
        mapping.write_text(MAPPING.format(image_codec=args.image_codec))
        if args.cold:
            drop_page_cache()
        read_wall, read_cpu, out = timed([sys.executable, "-c", READ_FLOOR, str(bag)], env)
        assert int(out.strip()) == n, f"rosbags read {out.strip()} of {n} messages"
        summary = work / "summary.json"
        imp = [sys.executable, "-m", "wshard_ros.bag_import", str(bag), "--mapping", str(mapping),
               "--data-dir", str(data), "--quiet", "--episode-id", "bench", "--summary-json", str(summary),
               "--durability", args.durability]
        if args.cold:
            drop_page_cache()
        imp_wall, imp_cpu, _ = timed(imp, env)
        split = json.loads(summary.read_text())["cpu_s"]
        rows = [
            ("rosbags read (deserialize all)", read_wall, read_cpu),
            ("bag_import --data-dir (+ wshardd)", imp_wall, imp_cpu),
            ("  of which the import process", imp_wall, split["import"]),
            ("  of which wshardd", imp_wall, split["daemon"]),
        ]
        print(f"\nbag: {size / 1e6:.1f} MB, {n} messages (JointState {JOINT_HZ} Hz, Image {W}x{H} rgb8 "
              f"{IMAGE_HZ} Hz, Imu {IMU_HZ} Hz); image codec {args.image_codec}; durability {args.durability}; "
              f"page cache {'dropped before each run' if args.cold else 'warm (the bag just written)'}; "
              f"wshardd {wshardd}\n")
        if "/debug/" in wshardd or Path(wshardd).stat().st_size > 80_000_000:
            print("warning: this wshardd looks like a debug build (~10x slower): use a release build\n")
        print(f"{'':36} {'wall s':>8} {'CPU s':>8} {'MB/s':>8} {'CPU s/GB':>9} {'us CPU/msg':>10}")
        for name, wall, cpu in rows:
            print(f"{name:36} {wall:8.2f} {cpu:8.2f} {size / 1e6 / wall:8.1f} {cpu / (size / 1e9):9.2f} "
                  f"{cpu / n * 1e6:10.1f}")
        print(f"\nratio import / read (MB/s): {read_wall / imp_wall:.2f}x (target >= 1x)")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
