#!/usr/bin/env python3
"""ROS 2 over DDS, live: the issue's workload from DDS publisher processes through the ROS 2
front end (``python3 -m wshard_ros.ros2dds``) into a real ``wshardd``.

    python3 bench/ros/ros2_dds_live.py                 # 60 s (the lead's run)
    python3 bench/ros/ros2_dds_live.py --seconds 3     # smoke

Workload (one publisher process per topic, Cyclone DDS on loopback, reliable + keep-all):
``/joint_states`` sensor_msgs/JointState 7 joints at 1 kHz, ``/camera/left/image_raw`` and
``/camera/right/image_raw`` sensor_msgs/Image 640x480 rgb8 (incompressible pixels) at 30 Hz,
``/imu`` sensor_msgs/Imu at 200 Hz. Messages are built by
ingest-adapters/ros/tests/dds_workload.py.

Reported (a table on stdout, then one JSON line):
- lost: messages published (and acknowledged by the bridge's DDS reader) minus messages
  recorded in the episode, per topic; the bridge's drop counters by reason;
- CPU seconds (user + system, from /proc) of the bridge and of wshardd over the episode
  (start request to the end of stop), per message recorded and per GB of payload recorded
  (the converted channel bytes plus 8 bytes of step time per message, decimal GB); the
  publishers' CPU is shown apart, not counted;
- DURABLE lag: the bridge's ``durable_lag_ms`` per stream (age of the oldest step not yet
  durable), sampled every 0.2 s during the run: median, p99 and max of the samples;
- the wall time from the last publisher finishing to the whole episode being stopped.

The daemon runs with its default durability settings (ack, fsync on its interval) and the
mapping's codecs (``--image-codec``, default ``none``; joints and IMU take the daemon's
default codec).
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ROS = REPO / "ingest-adapters" / "ros"
PYTHONPATH = os.pathsep.join(
    [str(ROS / "src"), str(REPO / "ingest-adapters" / "python" / "src")]
)
PUBLISHER = ROS / "tests" / "dds_publisher.py"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2
WIDTH, HEIGHT = 640, 480
JOINTS = 7

#: topic -> (kind, rate Hz, stream, payload bytes per message incl. the other clock's i64 and the step time)
TOPICS: dict[str, tuple[str, float, str, int]] = {
    "/joint_states": ("joint_state", 1000.0, "joint_states", 3 * JOINTS * 8 + 8 + 8),
    "/camera/left/image_raw": (
        "image",
        30.0,
        "camera_left",
        WIDTH * HEIGHT * 3 + 8 + 8,
    ),
    "/camera/right/image_raw": (
        "image",
        30.0,
        "camera_right",
        WIDTH * HEIGHT * 3 + 8 + 8,
    ),
    "/imu": ("imu", 200.0, "imu", (4 + 3 + 3 + 3 * 9) * 8 + 8 + 8),
}


def mapping_text(image_codec: str) -> str:
    out = []
    for topic, (kind, rate, stream, _) in TOPICS.items():
        typ = {
            "joint_state": "sensor_msgs/JointState",
            "image": "sensor_msgs/Image",
            "imu": "sensor_msgs/Imu",
        }[kind]
        out += [
            f'[topics."{topic}"]',
            f'type = "{typ}"',
            f'stream = "{stream}"',
            f"tick_hz = {rate:g}",
        ]
        if kind == "image":
            out.append(f'codec = "{image_codec}"')
        out.append("")
    return "\n".join(out)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHONPATH + (
        os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else ""
    )
    e.pop("CYCLONEDDS_URI", None)
    return e


def cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` (and its reaped children) in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def wait_for(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def find_wshardd(arg: str | None) -> str:
    for cand in (
        arg,
        os.environ.get("WSHARDD_BIN"),
        REPO / "target/release/wshardd",
        REPO / "target/debug/wshardd",
    ):
        if cand and Path(cand).is_file():
            return str(cand)
    raise SystemExit(
        "wshardd not found: --wshardd PATH, $WSHARDD_BIN, or cargo build --release -p wshard-recorder"
    )


def request(sock: str, req: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(300)
        s.connect(sock)
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    reply: dict[str, Any] = json.loads(buf)
    if not reply.get("ok"):
        raise SystemExit(f"bridge refused {req}: {reply}")
    result: dict[str, Any] = reply["result"]
    return result


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--wshardd")
    p.add_argument(
        "--workdir", help="keep everything here (default: a temporary dir, removed)"
    )
    p.add_argument("--domain", type=int, default=200 + os.getpid() % 30)
    p.add_argument("--image-codec", default="none")
    a = p.parse_args()

    work = Path(a.workdir or tempfile.mkdtemp(prefix="ros2dds-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    sock = work / "wshardd.sock"
    control = work / "wshardd-control.sock"
    (work / "wshardd.toml").write_text(
        f'data_dir = "{data}"\n[socket]\npath = "{sock}"\n[control]\npath = "{control}"\n[log]\nlevel = "warn"\n'
    )
    (work / "bridge.toml").write_text(mapping_text(a.image_codec))
    procs: list[subprocess.Popen[Any]] = []
    logs = contextlib.ExitStack()

    def spawn(name: str, cmd: list[str], **kw: Any) -> "subprocess.Popen[Any]":
        log = logs.enter_context(open(work / f"{name}.log", "wb"))  # noqa: SIM115 - closed by the ExitStack
        proc = subprocess.Popen(cmd, env=env(), stderr=log, **kw)
        procs.append(proc)
        return proc

    try:
        daemon = spawn(
            "wshardd",
            [find_wshardd(a.wshardd), "--config", str(work / "wshardd.toml")],
            stdout=subprocess.DEVNULL,
        )
        wait_for("wshardd's socket", sock.exists, 30)
        bsock = str(work / "bridge.sock")
        bridge = spawn(
            "bridge",
            [
                sys.executable,
                "-m",
                "wshard_ros.ros2dds",
                "--mapping",
                str(work / "bridge.toml"),
                "--socket",
                str(sock),
            ]
            + [
                "--control-socket",
                str(control),
                "--bridge-socket",
                bsock,
                "--domain-id",
                str(a.domain),
                "--loopback",
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for("the bridge socket", lambda: os.path.exists(bsock), 30)
        counts = {t: round(rate * a.seconds) for t, (_, rate, _, _) in TOPICS.items()}
        cpu0 = {"bridge": cpu_s(bridge.pid), "wshardd": cpu_s(daemon.pid)}
        request(bsock, {"cmd": "start", "episode_id": "ros2dds-bench"})
        pubs = {}
        for topic, (kind, rate, _, _) in TOPICS.items():
            cmd = [
                sys.executable,
                str(PUBLISHER),
                "--domain",
                str(a.domain),
                "--loopback",
                "--topic",
                topic,
            ]
            cmd += [
                "--kind",
                kind,
                "--rate",
                str(rate),
                "--count",
                str(counts[topic]),
                "--ack-timeout",
                "300",
            ]
            if kind == "image":
                cmd += ["--width", str(WIDTH), "--height", str(HEIGHT)]
            pubs[topic] = spawn(
                "pub" + topic.replace("/", "_"), cmd, stdout=subprocess.PIPE, text=True
            )
        lags: dict[str, list[float]] = {s: [] for _, _, s, _ in TOPICS.values()}
        pub_cpu: dict[str, float] = {}
        while any(pr.poll() is None for pr in pubs.values()):
            for topic, pr in pubs.items():
                if pr.poll() is None:
                    try:
                        pub_cpu[topic] = cpu_s(
                            pr.pid
                        )  # the last reading before it exits
                    except OSError:
                        pass
            st = request(bsock, {"cmd": "status"})
            for stream, s in st["streams"].items():
                if s.get("joined"):
                    lags[stream].append(float(s.get("durable_lag_ms", 0.0)))
            time.sleep(SAMPLE_S)
        t_pub_done = time.monotonic()
        published = {}
        for topic, pr in pubs.items():
            out = pr.stdout.read() if pr.stdout else ""
            done = [ln for ln in out.splitlines() if ln.startswith("done ")]
            published[topic] = (
                int(done[0].split()[1]) if done and pr.returncode == 0 else 0
            )
            if pr.returncode != 0:
                print(
                    f"publisher {topic} exited {pr.returncode}: {out.strip()}",
                    file=sys.stderr,
                )

        def all_received() -> bool:
            st = request(bsock, {"cmd": "status"})
            return all(st["topics"][t]["received"] >= published[t] for t in TOPICS)

        wait_for("the bridge to receive everything published", all_received, 120)
        status = request(bsock, {"cmd": "status"})
        summary = request(bsock, {"cmd": "stop"})
        stop_s = time.monotonic() - t_pub_done
        cpu = {
            "bridge": cpu_s(bridge.pid) - cpu0["bridge"],
            "wshardd": cpu_s(daemon.pid) - cpu0["wshardd"],
        }
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        logs.close()

    pub_total = sum(pub_cpu.values())
    rows = []
    total_msgs = 0
    total_bytes = 0
    for topic, (_, rate, stream, msg_bytes) in TOPICS.items():
        t = status["topics"][topic]
        recorded = int(summary["streams"].get(stream, {}).get("timesteps", 0))
        total_msgs += recorded
        total_bytes += recorded * msg_bytes
        lag = lags[stream]
        rows.append(
            {
                "topic": topic,
                "rate_hz": rate,
                "published": published[topic],
                "recorded": recorded,
                "lost": published[topic] - recorded,
                "dropped": t["dropped"],
                "drop_reasons": t.get("drop_reasons", {}),
                "late": t["late"],
                "lag_ms_p50": statistics.median(lag) if lag else 0.0,
                "lag_ms_p99": pct(lag, 0.99),
                "lag_ms_max": max(lag) if lag else 0.0,
            }
        )
    cpu_total = cpu["bridge"] + cpu["wshardd"]
    gb = total_bytes / 1e9
    disk = sum(
        f.stat().st_size for f in (data / "ros2dds-bench").rglob("*") if f.is_file()
    )
    print(
        f"ROS 2 over DDS live, {a.seconds:g} s, Cyclone DDS loopback, image codec {a.image_codec}"
    )
    print(
        f"{'topic':<26}{'Hz':>6}{'published':>11}{'recorded':>10}{'lost':>6}{'dropped':>9}{'late':>6}"
        f"{'lag p50 ms':>12}{'p99':>8}{'max':>8}"
    )
    for r in rows:
        print(
            f"{r['topic']:<26}{r['rate_hz']:>6g}{r['published']:>11}{r['recorded']:>10}{r['lost']:>6}"
            f"{r['dropped']:>9}{r['late']:>6}{r['lag_ms_p50']:>12.1f}{r['lag_ms_p99']:>8.1f}{r['lag_ms_max']:>8.1f}"
        )
    print(
        f"recorded: {total_msgs} messages, {gb:.3f} GB payload, {disk / 1e9:.3f} GB on disk"
    )
    print(f"{'CPU s':<26}{'total':>8}{'per msg (us)':>14}{'per GB':>9}")
    for name, sec in (
        ("bridge", cpu["bridge"]),
        ("wshardd", cpu["wshardd"]),
        ("bridge + wshardd", cpu_total),
    ):
        per_msg = 1e6 * sec / total_msgs if total_msgs else 0.0
        per_gb = sec / gb if gb else 0.0
        print(f"{name:<26}{sec:>8.2f}{per_msg:>14.1f}{per_gb:>9.2f}")
    print(
        f"publishers (not counted): {pub_total:.2f} CPU s; stop done {stop_s:.2f} s after the last publisher"
    )
    print(
        json.dumps(
            {
                "bench": "ros2_dds_live",
                "seconds": a.seconds,
                "topics": rows,
                "cpu_s": cpu,
                "messages": total_msgs,
                "payload_bytes": total_bytes,
                "disk_bytes": disk,
                "stop_after_publishers_s": stop_s,
                "publisher_cpu_s": pub_total,
            }
        )
    )
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["lost"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
