"""The modules of ``wshard_ros`` and ``wshard_ros_msgs`` import one another without a
circle, so the packages read bottom up; in the recording core (``wshard_ros.bridge``) the
``Bridge`` (``core.py``) is at the top: only the package, its ``__main__`` and the
control socket import it. Every import counts, at the top of a file, inside a function
or under ``typing.TYPE_CHECKING``. No daemon needed."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = ("wshard_ros", "wshard_ros_msgs")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    """For every module, the modules of the package it imports (``from . import x``
    imports ``x``; ``from .x import name`` imports ``x``, or ``x.name`` when that is a
    module)."""
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: List[str] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        found = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
        graph[name] = found
    return graph


def _circle(graph: Dict[str, Set[str]], start: str) -> List[str]:
    """A path of imports from ``start`` back to itself, or ``[]``."""
    stack = [(start, [start])]
    seen: Set[str] = set()
    while stack:
        module, path = stack.pop()
        for imported in sorted(graph[module]):
            if imported == start:
                return path + [start]
            if imported not in seen:
                seen.add(imported)
                stack.append((imported, path + [imported]))
    return []


def test_ros_modules_import_no_circle() -> None:
    modules = {_module_name(p): p for package in PACKAGES for p in sorted((SRC / package).rglob("*.py"))}
    assert "wshard_ros.bridge.core" in modules and "wshard_ros.bridge.state" in modules
    graph = _imports(modules)
    circles = [" -> ".join(c) for c in (_circle(graph, m) for m in sorted(graph)) if c]
    assert not circles, "modules that import themselves through others:\n" + "\n".join(circles)
    # The recording core's layers: below the Bridge, nothing imports core.py.
    above = {"wshard_ros.bridge", "wshard_ros.bridge.__main__", "wshard_ros.bridge.control_socket"}
    assert {m for m, imported in graph.items() if "wshard_ros.bridge.core" in imported} <= above
