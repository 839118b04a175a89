#!/usr/bin/python3
"""ROS 1, live: the issue's workload from rospy publisher processes, recorded at the same
time by the bridge (``python3 -m wshard_ros.ros1``) into a real ``wshardd`` and by Debian's
``rosbag record`` (the C++ recorder of python3-rosbag, ``/usr/lib/rosbag/record``).

    /usr/bin/python3 bench/ros/ros1_live.py                  # 60 s (the lead's run)
    /usr/bin/python3 bench/ros/ros1_live.py --seconds 3      # smoke

Needs Debian's python3-rospy, python3-rosmaster, python3-rosbag, message packages and
python3-netifaces (ingest-adapters/ros/README.md), and wshardd (``--wshardd``, else
``$WSHARDD_BIN``, else target/release/wshardd, else target/debug/wshardd).

Workload (one publisher process per topic, ingest-adapters/ros/tests_ros1/ros_pub.py, each
waiting for both recorders to connect): ``/joint_states`` JointState 7 joints at 1 kHz,
``/camera/left/image_raw`` and ``/camera/right/image_raw`` Image 640x480 rgb8 (incompressible
pixels) at 30 Hz, ``/imu`` Imu at 200 Hz.

Reported (a table on stdout, then one JSON line):
- lost per recorder: messages published minus messages recorded (the episode's stream
  counts; the bag's message counts), per topic and in total; the bridge's drop reasons;
- CPU seconds (user + system from /proc/PID/stat, every thread) over the recording window
  (from the episode start request to the end of the stop request; the same instants for
  rosbag record, whose final bag close is left out): bridge + wshardd vs rosbag record, per
  message recorded and per GB recorded (GB = the serialized ROS message bytes kept, the
  same unit for both recorders, decimal);
- DURABLE lag: the bridge's ``durable_lag_ms`` per stream, sampled every 0.2 s on ~status:
  median and max of the samples;
- bytes on disk of the episode and of the bag.

The daemon runs with its default durability (ack, fsync on its interval); image streams use
``--image-codec`` (default ``none``), the others the daemon's default codec.
"""

import argparse
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "ingest-adapters" / "ros" / "tests_ros1"
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(REPO / "ingest-adapters" / "ros" / "src"))
sys.path.insert(0, str(REPO / "ingest-adapters" / "python" / "src"))

from pubgen import make_message  # noqa: E402
from rosharness import BridgeProc, Publisher, RosMaster, wait_for  # noqa: E402

ROSBAG_RECORD = "/usr/lib/rosbag/record"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2
WIDTH, HEIGHT = 640, 480
#: topic -> (publisher kind, rate Hz, stream)
TOPICS: dict[str, tuple[str, float, str]] = {
    "/joint_states": ("joint", 1000.0, "joint_states"),
    "/camera/left/image_raw": ("image_noise", 30.0, "camera_left"),
    "/camera/right/image_raw": ("image_noise", 30.0, "camera_right"),
    "/imu": ("imu", 200.0, "imu"),
}
TYPES = {"joint": "sensor_msgs/JointState", "image_noise": "sensor_msgs/Image", "imu": "sensor_msgs/Imu"}


def mapping_text(image_codec: str) -> str:
    out = []
    for topic, (kind, rate, stream) in TOPICS.items():
        out.append(f'[topics."{topic}"]\ntype = "{TYPES[kind]}"\nstream = "{stream}"\ntick_hz = {rate}')
        if kind == "image_noise":
            out.append(f'codec = "{image_codec}"')
    return "\n".join(out) + "\n"


def serialized_size(kind: str) -> int:
    buf = io.BytesIO()
    make_message(kind, 1, 1_700_000_000_000_000_000, WIDTH, HEIGHT).serialize(buf)
    return len(buf.getvalue())


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of every thread of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def find_wshardd(arg: str) -> Path:
    for cand in (
        arg,
        os.environ.get("WSHARDD_BIN", ""),
        REPO / "target/release/wshardd",
        REPO / "target/debug/wshardd",
    ):
        if cand and Path(cand).is_file():
            return Path(cand)
    sys.exit("wshardd not found: --wshardd PATH, $WSHARDD_BIN, or cargo build --release -p wshard-recorder")


class Daemon:
    """A wshardd with its own data dir, ingest and control sockets (default durability)."""

    def __init__(self, binary: Path, work: Path) -> None:
        self.data_dir = work / "data"
        self.socket = work / "wshardd.sock"
        self.control = work / "ctl.sock"
        cfg = work / "wshardd.toml"
        cfg.write_text(
            f'data_dir = "{self.data_dir}"\n[socket]\npath = "{self.socket}"\n[control]\npath = "{self.control}"\n'
        )
        self._log = open(work / "wshardd.log", "wb")  # noqa: SIM115 - open for the daemon's life
        self.proc = subprocess.Popen([str(binary), "--config", str(cfg)], stdout=self._log, stderr=subprocess.STDOUT)
        wait_for("wshardd's socket", self.socket.exists, timeout=20)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self._log.close()


def bag_counts(bag: Path) -> dict[str, int]:
    import rosbag

    with rosbag.Bag(str(bag)) as b:
        info = b.get_type_and_topic_info().topics
    return {t: int(info[t].message_count) if t in info else 0 for t in TOPICS}


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    master = RosMaster(work)
    daemon = Daemon(find_wshardd(args.wshardd), work)
    procs: list[Any] = []
    try:
        bridge = BridgeProc(master, work, mapping_text(args.image_codec), daemon.socket, daemon.control)
        procs.append(bridge)
        bag = work / "bench.bag"
        rosbag_log = open(work / "rosbag.log", "wb")  # noqa: SIM115 - open for the recorder's life
        rosbag = subprocess.Popen(
            [ROSBAG_RECORD, "--tcpnodelay", "-O", str(bag), *TOPICS],
            env=master.env,
            stdout=rosbag_log,
            stderr=subprocess.STDOUT,
        )
        counts = {t: int(rate * args.seconds) for t, (_, rate, _) in TOPICS.items()}
        r = bridge.call("start", episode_id="bench", env_id="", metadata_json="")
        if not r.ok:
            raise RuntimeError(f"~start: {r.code} {r.message}")
        pids = {"bridge": bridge.proc.pid, "wshardd": daemon.proc.pid, "rosbag": rosbag.pid}
        cpu0 = {k: cpu_s(p) for k, p in pids.items()}
        t0 = time.monotonic()
        t0_ns = time.time_ns()
        pubs = [
            Publisher(
                master,
                work,
                kind,
                topic,
                count=counts[topic],
                rate=rate,
                t0=t0_ns,
                subs=2,
                width=WIDTH,
                height=HEIGHT,
                node=f"pub_{stream}",
            )
            for topic, (kind, rate, stream) in TOPICS.items()
        ]
        procs += pubs
        lags: dict[str, list[float]] = {s: [] for _, _, s in TOPICS.values()}
        deadline = t0 + args.seconds + 60
        while not all(_ready(p) for p in pubs) and time.monotonic() < deadline:
            st = bridge.status()
            for s, samples in lags.items():
                samples.append(float(st["streams"][s]["durable_lag_ms"]))
            time.sleep(SAMPLE_S)
        published = {t: p.wait_published() for t, p in zip(TOPICS, pubs)}
        pub_cpu = sum(cpu_s(p.proc.pid) for p in pubs)
        t_pub_end = time.monotonic()
        try:
            bridge.wait_received(published, timeout=30)
        except AssertionError as e:
            print(f"warning: {e}", file=sys.stderr)
        stop = bridge.call("stop")
        t_stop = time.monotonic()
        cpu1 = {k: cpu_s(p) for k, p in pids.items()}
        status = bridge.status()
        rosbag.send_signal(signal.SIGINT)
        rosbag.wait(timeout=60)
        rosbag_log.close()
        summary = json.loads(stop.summary_json) if stop.ok else {"error": f"{stop.code} {stop.message}"}
    finally:
        for p in procs:
            p.finish() if isinstance(p, Publisher) else p.stop()
        daemon.stop()
        master.stop()
    index = json.loads((daemon.data_dir / "bench" / "bench_index.json").read_text())
    in_episode = {s["name"]: int(s["steps"]) for s in index["streams"]}
    sizes = {t: serialized_size(kind) for t, (kind, _, _) in TOPICS.items()}
    ours = {t: in_episode.get(stream, 0) for t, (_, _, stream) in TOPICS.items()}
    theirs = bag_counts(bag)
    return {
        "seconds": args.seconds,
        "published": published,
        "recorded": {"wshard": ours, "rosbag": theirs},
        "cpu_s": {
            "wshard": (cpu1["bridge"] - cpu0["bridge"]) + (cpu1["wshardd"] - cpu0["wshardd"]),
            "bridge": cpu1["bridge"] - cpu0["bridge"],
            "wshardd": cpu1["wshardd"] - cpu0["wshardd"],
            "rosbag": cpu1["rosbag"] - cpu0["rosbag"],
            "publishers": pub_cpu,
        },
        "bytes": {
            "wshard": sum(ours[t] * sizes[t] for t in TOPICS),
            "rosbag": sum(theirs[t] * sizes[t] for t in TOPICS),
        },
        "disk_bytes": {"wshard": du(daemon.data_dir / "bench"), "rosbag": du(bag)},
        "durable_lag_ms": {
            s: {"median": statistics.median(v) if v else None, "max": max(v) if v else None} for s, v in lags.items()
        },
        "drops": {t: c["drop_reasons"] for t, c in status["topics"].items() if c["dropped"]},
        "index_status": index["status"],
        "window_s": t_stop - t0,
        "drain_s": t_stop - t_pub_end,
        "stop": {k: v for k, v in summary.items() if k in ("episode", "outcome", "error")},
        "image_codec": args.image_codec,
    }


def _ready(p: Publisher) -> bool:
    """Whether publisher ``p`` printed its ``published N`` line, or ended (not consumed)."""
    import select

    assert p.proc.stdout is not None
    return bool(select.select([p.proc.stdout], [], [], 0)[0])


def table(res: dict[str, Any]) -> str:
    pub_total = sum(res["published"].values())
    rows = []
    for who, label in (("wshard", "bridge + wshardd"), ("rosbag", "rosbag record (C++)")):
        rec = sum(res["recorded"][who].values())
        cpu = res["cpu_s"][who]
        gb = res["bytes"][who] / 1e9
        rows.append(
            f"| {label} | {pub_total} | {rec} | {pub_total - rec} | {cpu:.2f} | "
            f"{cpu / gb if gb else float('nan'):.2f} | {1e6 * cpu / rec if rec else float('nan'):.1f} | "
            f"{res['disk_bytes'][who] / 1e6:.1f} |"
        )
    lines = [
        f"ROS 1 live, {res['seconds']} s, images codec {res['image_codec']}, episode {res['index_status']}",
        "| recorder | published | recorded | lost | CPU s | CPU s/GB | CPU us/msg | disk MB |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "| topic | published | lost (wshard) | lost (rosbag) |",
        "|---|---|---|---|",
    ]
    for t, n in res["published"].items():
        lines.append(f"| {t} | {n} | {n - res['recorded']['wshard'][t]} | {n - res['recorded']['rosbag'][t]} |")
    lines += ["", "| stream | DURABLE lag median ms | max ms |", "|---|---|---|"]
    for s, v in res["durable_lag_ms"].items():
        med, top = v["median"], v["max"]
        lines.append(f"| {s} | {'-' if med is None else f'{med:.1f}'} | {'-' if top is None else f'{top:.1f}'} |")
    c = res["cpu_s"]
    lines.append(
        f"\nCPU s: bridge {c['bridge']:.2f}, wshardd {c['wshardd']:.2f}, rosbag {c['rosbag']:.2f} "
        f"(publishers {c['publishers']:.2f}, not counted); drain after the last publish {res['drain_s']:.2f} s; "
        f"drops {res['drops'] or 'none'}"
    )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--wshardd", default="")
    p.add_argument("--image-codec", default="none")
    p.add_argument("--keep", action="store_true", help="keep the work dir (episode, bag, logs)")
    args = p.parse_args()
    if not Path(ROSBAG_RECORD).is_file():
        sys.exit(f"{ROSBAG_RECORD} not found: apt-get install python3-rosbag")
    work = Path(tempfile.mkdtemp(prefix="ros1-bench-"))
    try:
        res = run(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir: {work}", file=sys.stderr)
    print(table(res))
    print(json.dumps(res, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
