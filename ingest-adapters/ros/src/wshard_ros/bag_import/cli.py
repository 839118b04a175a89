"""``python3 -m wshard_ros.bag_import`` / ``wshard-ros-import``: the command line, the
summary and the exit codes (ingest-adapters/ros/README.md, "Bag import")."""

import argparse
import json
import resource
import signal
import sys
import threading
from typing import Any, Dict, List, Optional, TextIO

from ..bridge import BridgeError, BridgeOptions
from ..errors import MappingError
from ..mapping import load_mapping
from .daemon import DEFAULT_MAX_TIMESTEPS, PrivateDaemon, find_wshardd
from .determinism import pin_created_time
from .errors import BagError, BagImportError, BagTypeMismatch, DaemonStartError
from .progress import Progress
from .run import CLIENT_NAME, ImportResult, check_types, default_episode_id, open_bags, record

EXIT_OK = 0
EXIT_SKIPPED = 1
EXIT_USAGE = 2
EXIT_BAG = 3
EXIT_TYPE = 4
EXIT_DAMAGED = 5
EXIT_DAEMON = 6
EXIT_INTERRUPTED = 130
#: Steps queued per stream at most (back-pressure beyond): bounds the memory an import
#: can hold when the daemon is slower than the bag reads (256 x 640x480 rgb8 = 236 MB).
QUEUE_STEPS = 256


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wshard-ros-import",
        description="Import ROS bags (ROS 1 .bag, rosbag2 sqlite3 or MCAP) into one wshardd episode.",
    )
    p.add_argument("bags", nargs="+", metavar="BAG", help="a .bag, .db3 or .mcap file or a rosbag2 directory")
    p.add_argument("--mapping", required=True, help="the mapping file (TOML), as for the live bridge")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="ingest socket of a running wshardd")
    where.add_argument("--data-dir", help="start a private wshardd writing to this data dir")
    p.add_argument("--control-socket", help="with --socket: the daemon's control socket (damage annotations)")
    p.add_argument("--episode-id", help="default: the first bag's name without its extension")
    p.add_argument("--env-id", default="")
    p.add_argument("--metadata", default="{}", help="episode metadata, a JSON object")
    p.add_argument("--wshardd", help="the wshardd binary for --data-dir")
    p.add_argument(
        "--chunk-steps",
        type=int,
        default=DEFAULT_MAX_TIMESTEPS,
        help="with --data-dir: steps per chunk at most (the private daemon's rotation.max_timesteps)",
    )
    p.add_argument(
        "--durability",
        choices=("ack", "chunk"),
        default="ack",
        help="durability of the streams (default ack: every step journaled; chunk: only finalized chunks)",
    )
    p.add_argument(
        "--transport",
        choices=("shm", "socket"),
        default="shm",
        help="how steps reach the daemon (default shm: a shared-memory ring per stream, fewer copies; socket)",
    )
    p.add_argument(
        "--queue-steps", type=int, default=QUEUE_STEPS, help=f"steps queued per stream at most (default {QUEUE_STEPS})"
    )
    p.add_argument("--summary-json", help="also write the summary as JSON to this file")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        metadata = json.loads(args.metadata)
    except json.JSONDecodeError as e:
        return _fail(EXIT_USAGE, f"--metadata: not JSON: {e}")
    if not isinstance(metadata, dict):
        return _fail(EXIT_USAGE, "--metadata: must be a JSON object")
    if args.chunk_steps < 1 or args.queue_steps < 1:
        return _fail(EXIT_USAGE, "--chunk-steps and --queue-steps: at least 1")
    try:
        mapping = load_mapping(args.mapping)
    except MappingError as e:
        return _fail(EXIT_USAGE, str(e))
    try:
        sources = open_bags(args.bags)
    except BagError as e:
        return _fail(EXIT_BAG, str(e))
    try:
        try:
            topics = check_types(mapping, sources)
        except BagTypeMismatch as e:
            return _fail(EXIT_TYPE, str(e))
        episode_id = args.episode_id or default_episode_id(args.bags)
        total = sum(s.counts.get(c.key, 0) for s in sources for c in s.connections if topics[c.topic].mapped)
        progress = Progress(total, quiet=args.quiet)
        daemon: Optional[PrivateDaemon] = None
        try:
            if args.data_dir:
                daemon = PrivateDaemon(find_wshardd(args.wshardd), args.data_dir, args.chunk_steps)
                socket_path, control = daemon.socket, daemon.control
            else:
                socket_path, control = args.socket, args.control_socket
            options = BridgeOptions(
                socket_path,
                control,
                client_name=CLIENT_NAME,
                block_when_full=True,
                durability=args.durability,
                queue_steps=args.queue_steps,
                transport=args.transport,
            )
            interrupt = threading.Event()

            def on_signal(signum: int, _frame: object) -> None:
                interrupt.set()
                signal.signal(signum, signal.SIG_DFL)  # a second one ends the process at once

            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, on_signal)
            result = record(mapping, sources, topics, options, episode_id, args.env_id, metadata, progress, interrupt)
            if daemon is not None:
                daemon.stop()
                daemon = None
                if result.outcome in ("completed", "aborted"):
                    pin_created_time(args.data_dir, episode_id, result.first_t_ns)
        except KeyboardInterrupt:
            return _fail(EXIT_INTERRUPTED, "interrupted: the episode was aborted")
        except (DaemonStartError, BridgeError) as e:
            return _fail(EXIT_DAEMON, str(e))
        except BagImportError as e:
            return _fail(EXIT_DAEMON, str(e))
        finally:
            if daemon is not None:
                try:
                    daemon.stop()
                except DaemonStartError as e:
                    print(f"wshard-ros-import: {e}", file=sys.stderr)
    finally:
        for s in sources:
            s.close()
    print_summary(result, sys.stdout)
    if args.summary_json:
        doc = summary_json(result)
        doc["cpu_s"] = {"import": _cpu(resource.RUSAGE_SELF), "daemon": _cpu(resource.RUSAGE_CHILDREN)}
        with open(args.summary_json, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
    if result.outcome == "interrupted":
        print("wshard-ros-import: interrupted: the episode was aborted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.outcome == "failed":
        print(f"wshard-ros-import: the daemon failed: {result.error}", file=sys.stderr)
        return EXIT_DAEMON
    if result.damage:
        for d in result.damage:
            print(f"wshard-ros-import: damaged bag: {d.describe()}", file=sys.stderr)
        return EXIT_DAMAGED
    return EXIT_SKIPPED if result.skipped_mapped else EXIT_OK


def _cpu(who: int) -> float:
    """User + system CPU seconds of this process or of its waited-for children (the
    private daemon)."""
    r = resource.getrusage(who)
    return float(r.ru_utime + r.ru_stime)


def _fail(code: int, text: str) -> int:
    print(f"wshard-ros-import: {text}", file=sys.stderr)
    return code


def summary_json(result: ImportResult) -> Dict[str, Any]:
    """The summary as a JSON-serialisable dict."""
    return {
        "episode_id": result.episode_id,
        "outcome": result.outcome,
        "error": result.error,
        "damage": [d.as_json() for d in result.damage],
        "topics": {
            t.topic: {
                "type": t.bag_type,
                "mapped": t.mapped,
                "read": t.read,
                "recorded": t.recorded,
                "skipped": dict(sorted(t.skipped.items())),
                "last_error": t.last_error,
            }
            for t in sorted(result.topics.values(), key=lambda t: t.topic)
        },
    }


def print_summary(result: ImportResult, out: TextIO) -> None:
    """A table: per topic its type, what the mapping does with it, read / recorded /
    skipped (with reasons)."""
    out.write(f"episode {result.episode_id}: {result.outcome}\n")
    rows = [("topic", "type", "as", "read", "recorded", "skipped")]
    for t in sorted(result.topics.values(), key=lambda t: t.topic):
        why = ", ".join(f"{k} {v}" for k, v in sorted(t.skipped.items()))
        skipped = str(sum(t.skipped.values())) + (f" ({why})" if why else "")
        rows.append((t.topic, t.bag_type, t.mapped or "-", str(t.read), str(t.recorded), skipped))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")
    for t in sorted(result.topics.values(), key=lambda t: t.topic):
        if t.last_error:
            out.write(f"{t.topic}: {t.last_error}\n")
