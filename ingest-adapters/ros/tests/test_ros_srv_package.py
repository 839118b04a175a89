"""The ROS 1 service package ``wshard_ros_msgs`` is installed whole: its ``.srv`` files are
package data, and ``wshard_ros_msgs.srv`` makes its classes from them when imported, so an
install without them has no service types. setuptools' build of the distribution (its
``build_py``, the files a wheel or ``pip install`` holds) must have every file of the package
(the live import itself: tests_ros1/test_ros_live_srv.py)."""

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

ROS_DIR = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROS_DIR / "src" / "wshard_ros_msgs"


def _files(root: Path) -> Dict[str, bytes]:
    """Every file under ``root`` (no ``__pycache__``) by relative path, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_ros_srv_package_built_with_its_srv_files(tmp_path: Path) -> None:
    work = tmp_path / "dist"
    work.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROS_DIR / name, work / name)
    shutil.copytree(ROS_DIR / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path / "build"
    r = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "build_py", "--build-lib", str(out)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"setuptools build_py failed (python3 -m pip install setuptools):\n{r.stderr[-3000:]}"
    built, source = _files(out / "wshard_ros_msgs"), _files(PACKAGE_DIR)
    assert sorted(built) == sorted(source)
    assert built == source
    assert sum(name.endswith(".srv") for name in built) == 10
