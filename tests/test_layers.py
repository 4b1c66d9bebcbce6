"""The packages of harness/ stand in layers, and no module imports one above its own (so
none imports a module that imports it back): the commands (frontends) on top, then the web
board, the contest server, the views all three show results with, the execution layer the
commands and the server start evaluations through, the judge, the results, the storage
(every SQL statement), the task and submission loading, and the shared modules at the
bottom."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

# Lowest first; a module may import its own package and any below it.
LAYERS = ["base", "loading", "storage", "results", "judging", "execution", "views", "server", "web",
          "frontends"]
BASE = {"consts", "settings", "options", "durations", "scores", "quiet", "bytecode",
        "__init__"}
# Imports that still run up a layer, each to be moved down (none now).
KNOWN_UP: set[tuple[str, str]] = set()


def layer_of(path: Path) -> str:
    parts = path.relative_to(ROOT / "harness").parts
    return "base" if len(parts) == 1 else parts[0]


def imported_packages(path: Path) -> set[str]:
    """The harness packages a module imports (at its top or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                 [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            parts = name.split(".")
            if parts[0] == "harness" and len(parts) > 1:
                found.add("base" if parts[1] in BASE else parts[1])
    return found


def test_no_module_imports_a_layer_above_its_own():
    up = set()
    for path in sorted((ROOT / "harness").rglob("*.py")):
        mine = LAYERS.index(layer_of(path))
        for package in imported_packages(path):
            if package in LAYERS and LAYERS.index(package) > mine:
                up.add((str(path.relative_to(ROOT)), package))
    assert up <= KNOWN_UP, f"imports that run up a layer: {sorted(up - KNOWN_UP)}"
    assert KNOWN_UP <= up, f"no longer up, drop from KNOWN_UP: {sorted(KNOWN_UP - up)}"


def test_every_package_has_its_layer():
    packages = {p.name for p in (ROOT / "harness").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYERS) - {"base"}
    loose = {p.stem for p in (ROOT / "harness").glob("*.py")}
    assert loose == BASE, f"a module at harness/'s top needs its layer: {loose - BASE}"
