"""The service types of the bridge (``wshard_ros_msgs``), made by genpy from the ``.srv``
files when ``wshard_ros_msgs.srv`` is imported: the classes and what the live bridge
advertises match the ``.srv`` files (type names, fields, and md5sums computed here from the
``.srv`` text by ROS 1's rule, without genpy); the code is what genpy's own generator writes,
made in memory (nothing written); the ROS tools find the types; a missing genpy or a bad
``.srv`` file is refused naming the package or the file."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import rosservice
from daemon_harness import Daemon
from rosharness import PYTHON, PYTHONPATH, ROS_DIR, BridgeProc, RosMaster

from wshard_ros.ros1.services import SERVICE_NAMES

PACKAGE_DIR = ROS_DIR / "src" / "wshard_ros_msgs"
SRV_DIR = PACKAGE_DIR / "srv"
# ROS 1's built-in field types (genmsg.msgs.BUILTIN_TYPES); the .srv files use no others.
BUILTIN = {
    "bool", "byte", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float32", "float64", "string", "time", "duration",
}  # fmt: skip

Fields = List[Tuple[str, str]]


def _section(lines: List[str]) -> Tuple[List[str], Fields]:
    """One message of a ``.srv`` file: its constants as md5 lines (``TYPE NAME=VALUE``) and its
    fields (type, name). A line is a constant when it has a ``=`` before any comment; a string
    constant's value is the rest of the line, ``#`` included."""
    constants: List[str] = []
    fields: Fields = []
    for line in lines:
        decl = line.split("#", 1)[0].strip()
        if not decl:
            continue
        type_, rest = decl.split(None, 1)
        assert type_.split("[", 1)[0] in BUILTIN, f"{type_}: this check knows the built-in types only"
        if "=" in rest:
            name = rest.split("=", 1)[0].strip()
            value = line.split("=", 1)[1].strip() if type_ == "string" else rest.split("=", 1)[1].strip()
            constants.append(f"{type_} {name}={value}")
        else:
            fields.append((type_, rest.strip()))
    return constants, fields


def _md5_text(constants: List[str], fields: Fields) -> str:
    """ROS 1's md5 text of a message of built-in types: constants first, then ``TYPE NAME``."""
    return "\n".join(constants + [f"{t} {n}" for t, n in fields])


def srv_definitions() -> Dict[str, Dict[str, Any]]:
    """Per ``NAME.srv``: request and response fields and the md5sums of request, response and
    service (the md5 of the request's md5 text followed by the response's), from the text: the
    request is the lines before the first one starting with ``---`` (comments aside)."""
    out: Dict[str, Dict[str, Any]] = {}
    for path in sorted(SRV_DIR.glob("*.srv")):
        lines = path.read_text().splitlines()
        cut = next((i for i, line in enumerate(lines) if line.split("#", 1)[0].strip().startswith("---")), len(lines))
        req, resp = _section(lines[:cut]), _section(lines[cut + 1 :])
        req_text, resp_text = _md5_text(*req), _md5_text(*resp)
        out[path.stem] = {
            "request": req[1],
            "response": resp[1],
            "md5": hashlib.md5((req_text + resp_text).encode()).hexdigest(),
            "request_md5": hashlib.md5(req_text.encode()).hexdigest(),
            "response_md5": hashlib.md5(resp_text.encode()).hexdigest(),
        }
    return out


def _type_of(service: str) -> str:
    """``~start`` -> ``Start``, ``~stop_episode`` -> ``StopEpisode``."""
    return "".join(part.capitalize() for part in service.lstrip("~").split("_"))


def test_ros_live_srv_classes_match_srv_files() -> None:
    import wshard_ros_msgs.srv as srv

    defs = srv_definitions()
    assert sorted(defs) == [
        "Abort",
        "AbortEpisode",
        "Annotate",
        "FlightTrigger",
        "Keep",
        "SplitEpisode",
        "Start",
        "Status",
        "Stop",
        "StopEpisode",
    ]
    assert sorted(_type_of(s) for s in SERVICE_NAMES) == sorted(defs), "a service of the bridge without its .srv"
    assert sorted(srv.__all__) == sorted(n + part for n in defs for part in ("", "Request", "Response"))
    for name, d in defs.items():
        cls = getattr(srv, name)
        assert (cls._type, cls._md5sum) == (f"wshard_ros_msgs/{name}", d["md5"]), name
        for part in ("Request", "Response"):
            msg, key = getattr(srv, name + part), part.lower()
            fields, md5 = d[key], d[f"{key}_md5"]
            assert getattr(cls, f"_{key}_class") is msg
            assert (msg._type, msg._md5sum) == (f"wshard_ros_msgs/{name}{part}", md5), (name, part)
            assert list(zip(msg._slot_types, msg.__slots__)) == fields, (name, part)
            assert msg.__module__ == f"wshard_ros_msgs.srv._{name}"


def test_ros_live_srv_advertised_types_match_srv_files(
    ros: RosMaster, daemon: Daemon, bridge_factory  # type: ignore[no-untyped-def]
) -> None:
    """What the running bridge tells a caller in its TCPROS header (as ``rosservice`` probes
    it): each service's type and md5sum."""
    bridge: BridgeProc = bridge_factory('[topics."/imu"]\ntype = "sensor_msgs/Imu"\n', daemon)
    defs = srv_definitions()
    for service in SERVICE_NAMES:
        name = f"{bridge.node}/{service.lstrip('~')}"
        header = rosservice.get_service_headers(name, rosservice.get_service_uri(name))
        t = _type_of(service)
        assert header["type"] == f"wshard_ros_msgs/{t}", header
        assert header["md5sum"] == defs[t]["md5"], (name, header)
        assert header["service"] == name, header
    # a user's rosservice (wshard_ros_msgs on its PYTHONPATH) loads the type: its arguments
    r = subprocess.run(
        ["rosservice", "args", f"{bridge.node}/annotate"], env=ros.env, capture_output=True, text=True, timeout=60
    )
    assert (r.returncode, r.stdout.split()) == (0, ["label", "text", "json", "at"]), r
    # ... and without it, rosservice cannot (the header gives the type's name only)
    env = dict(ros.env, PYTHONPATH="")
    r = subprocess.run(
        ["rosservice", "call", f"{bridge.node}/status"], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode != 0 and "Unable to load type [wshard_ros_msgs/Status]" in r.stderr, r


def test_ros_live_service_types_found_by_ros_tools() -> None:
    import roslib.message

    for name in (
        "Start",
        "Stop",
        "Abort",
        "Annotate",
        "Status",
        "StopEpisode",
        "AbortEpisode",
        "Keep",
        "SplitEpisode",
        "FlightTrigger",
    ):
        cls = roslib.message.get_service_class(f"wshard_ros_msgs/{name}")
        assert cls is not None, name
        assert cls._type == f"wshard_ros_msgs/{name}"
    from wshard_ros_msgs.srv import AnnotateRequest

    assert AnnotateRequest.__slots__ == ["label", "text", "json", "at"]


def test_ros_live_srv_code_is_genpys_made_in_memory(tmp_path: Path) -> None:
    """The code of each module is what genpy's SrvGenerator (catkin's generator) writes for
    the .srv file, the same at every import; importing writes nothing (a copy of the package,
    its tree compared before and after an import in a fresh process)."""
    from genpy.generator import SrvGenerator

    import wshard_ros_msgs.srv as srv
    from wshard_ros_msgs.generate import generate_source

    reference = tmp_path / "genpy"
    files = sorted(str(p) for p in SRV_DIR.glob("*.srv"))
    assert SrvGenerator().generate_messages("wshard_ros_msgs", files, str(reference), {}) == 0
    for path in SRV_DIR.glob("*.srv"):
        module = getattr(srv, f"_{path.stem}")
        source = module.__loader__.get_source(module.__name__)
        assert source == (reference / f"_{path.stem}.py").read_text(), path.name
        assert generate_source(path) == source

    copy = tmp_path / "site" / "wshard_ros_msgs"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def tree() -> List[Tuple[str, int, int]]:
        return sorted((str(p.relative_to(copy)), p.stat().st_size, p.stat().st_mtime_ns) for p in copy.rglob("*"))

    before = tree()
    code = (
        "import inspect, sys, wshard_ros_msgs.srv as s\n"
        "assert s.Start._md5sum and 'def serialize' in inspect.getsource(s.StartRequest)\n"
        "print(sys.modules['wshard_ros_msgs.srv._Start'].__file__)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(copy.parent), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{copy / 'srv' / 'Start.srv'} (genpy)"
    assert tree() == before, "importing wshard_ros_msgs.srv wrote into the package"


def test_ros_live_srv_without_genpy_names_the_package() -> None:
    code = "import sys\nsys.modules['genpy'] = None  # as on a python without genpy\nimport wshard_ros_msgs.srv\n"
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    r = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "ServiceCodeError" in r.stderr and "apt-get install python3-genpy" in r.stderr, r.stderr


def test_ros_live_srv_bad_srv_file_refused_at_start(ros: RosMaster, tmp_path: Path) -> None:
    """A .srv genpy refuses: the bridge exits 2 naming the file and what is wrong."""
    copy = tmp_path / "site" / "wshard_ros_msgs"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "srv" / "Broken.srv").write_text("strng label\n---\nbool ok\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text('[topics."/imu"]\ntype = "sensor_msgs/Imu"\n')
    r = subprocess.run(
        [PYTHON, "-m", "wshard_ros.ros1", "--mapping", str(mapping), "--socket", str(tmp_path / "none.sock")],
        env=dict(ros.env, PYTHONPATH=f"{copy.parent}:{PYTHONPATH}"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert str(copy / "srv" / "Broken.srv") in r.stderr and "strng" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
