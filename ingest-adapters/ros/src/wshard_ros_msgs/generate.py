"""The Python of the service types, made by genpy from the ``.srv`` files when
:mod:`wshard_ros_msgs.srv` is imported.

The ``.srv`` files in ``wshard_ros_msgs/srv/`` are the only source: no generated code is
kept in the tree or written anywhere. For each ``NAME.srv``, :func:`generate_source` runs
genpy's service generator (Debian ``python3-genpy``, which ``python3-rospy`` depends on)
on the file's text and gives the very code genpy's ``SrvGenerator`` (catkin's
``genpy_main``) would write to ``srv/_NAME.py``; :func:`import_services` compiles it into
the module ``wshard_ros_msgs.srv._NAME`` in memory (nothing is written, so a read-only
install works) once per process.

A generated module's ``__file__`` is ``.../srv/NAME.srv (genpy)``, a name that is not a
file: tracebacks and :func:`inspect.getsource` get its code from the module's loader.
``python3 -m wshard_ros_msgs [NAME ...]`` prints the generated code.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any, Dict, List

#: The ROS package name of the service types (``wshard_ros_msgs/Start``, ...).
PACKAGE = "wshard_ros_msgs"
#: Where the ``.srv`` files are (package data, installed with the package).
SRV_DIR = Path(__file__).resolve().parent / "srv"
#: What installs genpy (named by the error when it is missing).
GENPY_PACKAGE = "python3-genpy"

# genpy's generator keeps its state in module globals (variable counters, struct patterns):
# one generation at a time in this process.
_genpy_lock = threading.Lock()


class ServiceCodeError(ImportError):
    """The service classes cannot be made: genpy is not installed (the text names the
    package that installs it), there is no ``.srv`` file, or genpy refuses one (``path``
    names the file, the text says what is wrong)."""


def srv_files(srv_dir: Path = SRV_DIR) -> List[Path]:
    """The ``.srv`` files of ``srv_dir``, sorted by name (the order of generation and export).

    Raises:
        ServiceCodeError: the directory holds none (an install without its package data).
    """
    files = sorted(srv_dir.glob("*.srv"))
    if not files:
        raise ServiceCodeError(
            f"{srv_dir}: no .srv files (the service definitions are package data of wshard_ros_msgs: "
            "install the package with them, or copy the whole directory)",
            path=str(srv_dir),
        )
    return files


def _genpy() -> Any:
    """genpy's service generator and genmsg's loader, or :class:`ServiceCodeError`."""
    try:
        import genmsg
        import genmsg.msg_loader
        import genpy.generator
    except ImportError as e:
        raise ServiceCodeError(
            f"genpy cannot be imported by {sys.executable} ({e}); wshard_ros_msgs makes its service "
            f"classes from its .srv files with it: apt-get install {GENPY_PACKAGE} "
            "(Debian's ROS 1, with its python3-genmsg; python3-rospy depends on it)",
            name="genpy",
        ) from e
    return genmsg, genpy.generator


def generate_source(srv: Path, package: str = PACKAGE) -> str:
    """The Python genpy generates for one ``.srv`` file: the text genpy's ``SrvGenerator``
    writes to ``_NAME.py``, byte for byte. Deterministic: the same text and genpy give the
    same code.

    Raises:
        ServiceCodeError: genpy missing, the file unreadable, its name not a ROS type name,
            or its text refused by genpy (a bad declaration, a type genpy cannot find: only
            the built-in types are available, no other package's messages).
    """
    genmsg, generator = _genpy()
    name = srv.name[: -len(".srv")]
    if not genmsg.is_legal_resource_base_name(name):
        raise ServiceCodeError(f"{srv}: {name!r} is not a legal ROS type name", path=str(srv))
    try:
        text = srv.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ServiceCodeError(f"{srv}: cannot read it: {e}", path=str(srv)) from e
    with _genpy_lock:
        try:
            context = genmsg.MsgContext.create_default()
            spec = genmsg.msg_loader.load_srv_from_string(context, text, f"{package}/{name}")
            lines = list(generator.srv_generator(context, spec, {}))
        except Exception as e:  # noqa: BLE001 - genmsg raises unrelated kinds (InvalidMsgSpec, MsgNotFound, ...)
            raise ServiceCodeError(f"{srv}: genpy cannot make a service from it: {e}", path=str(srv)) from e
    return "".join(line + "\n" for line in lines)


class GeneratedSource(importlib.abc.InspectLoader):
    """The loader of one generated module: executes its code, and gives it to tracebacks,
    :mod:`linecache` and :func:`inspect.getsource` (``get_source``)."""

    def __init__(self, source: str, filename: str) -> None:
        self.source = source
        self.filename = filename

    def get_source(self, fullname: str) -> str:
        return self.source

    def get_code(self, fullname: str) -> types.CodeType:
        return compile(self.source, self.filename, "exec", dont_inherit=True)

    def is_package(self, fullname: str) -> bool:
        return False

    def exec_module(self, module: types.ModuleType) -> None:
        exec(self.get_code(module.__name__), module.__dict__)


def import_services(srv_package: str, srv_dir: Path, package: str = PACKAGE) -> Dict[str, Any]:
    """Generate and import ``srv_package._NAME`` for every ``NAME.srv`` of ``srv_dir``
    (in :data:`sys.modules`, nothing written); returns the classes of every service for
    the package to export: ``NAME``, ``NAMERequest``, ``NAMEResponse``.

    Raises:
        ServiceCodeError: see :func:`srv_files` and :func:`generate_source`.
    """
    exported: Dict[str, Any] = {}
    parent = sys.modules.get(srv_package)
    made: List[str] = []
    try:
        for srv in srv_files(srv_dir):
            name = srv.name[: -len(".srv")]
            fullname = f"{srv_package}._{name}"
            loader = GeneratedSource(generate_source(srv, package), f"{srv} (genpy)")
            spec = importlib.machinery.ModuleSpec(fullname, loader, origin=loader.filename)
            spec.has_location = True  # __file__: tracebacks and inspect find the code through the loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[fullname] = module
            made.append(fullname)
            loader.exec_module(module)
            if parent is not None:
                setattr(parent, f"_{name}", module)
            for cls in (name, f"{name}Request", f"{name}Response"):
                exported[cls] = getattr(module, cls)
    except BaseException:
        for fullname in made:  # as a failed import leaves nothing behind
            sys.modules.pop(fullname, None)
        raise
    return exported

