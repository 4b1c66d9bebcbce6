"""docs/architecture.md's package tree names every module of harness/, and only real ones.

The tree is the text block under "## The packages". Each entry is a line whose name starts
before the description column (`harness/`, `judging/`, `judge.py`); the lines after it that
start in the description column describe it. A module `harness/a/b/c.py` is documented when
the entry `b/` under `a/` under `harness/` has a child entry `c.py` or names `c` in its
description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
DESCRIPTION_COLUMN = 20  # entries start left of this column, descriptions at or right of it


@dataclass
class Entry:
    name: str
    indent: int
    text: str = ""
    children: list[Entry] = field(default_factory=list)

    def child(self, name: str) -> Entry | None:
        return next((c for c in self.children if c.name == name), None)


def package_tree(doc: str) -> Entry:
    """The entries of the first text block after "## The packages", as a tree."""
    section = doc.split("## The packages", 1)[1]
    block = section.split("```text", 1)[1].split("```", 1)[0]
    root = Entry("", -1)
    stack = [root]
    for line in block.splitlines():
        stripped = line.lstrip()
        if not stripped:
            continue
        indent = len(line) - len(stripped)
        if indent >= DESCRIPTION_COLUMN:
            stack[-1].text += " " + stripped
            continue
        name, _, rest = stripped.partition(" ")
        while stack[-1].indent >= indent:
            stack.pop()
        entry = Entry(name, indent, rest)
        stack[-1].children.append(entry)
        stack.append(entry)
    return root


def documented(tree: Entry, module: Path) -> bool:
    """Whether the tree names `module` (relative to the repository root)."""
    node = tree
    for part in module.parts[:-1]:
        node = node.child(part + "/")
        if node is None:
            return False
    if node.child(module.name) is not None:
        return True
    return re.search(rf"\b{re.escape(module.stem)}\b", node.text) is not None


# Folders the tree names whole: their modules are numbered data (the schema's migrations).
NAMED_WHOLE = {Path("harness/storage/migrations")}


def harness_modules() -> list[Path]:
    return sorted(
        p.relative_to(ROOT)
        for p in (ROOT / "harness").rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
        and p.relative_to(ROOT).parent not in NAMED_WHOLE
    )


def test_every_harness_module_is_in_the_package_tree():
    tree = package_tree(DOC.read_text())
    missing = [str(m) for m in harness_modules() if not documented(tree, m)]
    assert not missing, f"docs/architecture.md's package tree does not name: {missing}"


def test_every_file_the_tree_names_exists():
    tree = package_tree(DOC.read_text())

    def walk(entry: Entry, folder: Path) -> list[str]:
        stale = []
        for child in entry.children:
            path = folder / child.name.rstrip("/")
            if child.name.endswith(".py") or child.name.endswith("/"):
                if not path.exists():
                    stale.append(str(path.relative_to(ROOT)))
                stale += walk(child, path)
        return stale

    stale = walk(tree, ROOT)
    assert not stale, f"docs/architecture.md names files that do not exist: {stale}"


def test_folders_named_whole_are_in_the_tree():
    tree = package_tree(DOC.read_text())
    for folder in NAMED_WHOLE:
        node = tree
        for part in folder.parts:
            node = node.child(part + "/") if node is not None else None
        assert node is not None, f"docs/architecture.md's package tree does not name {folder}/"


def test_the_check_fails_on_a_module_the_tree_leaves_out():
    tree = package_tree(DOC.read_text())
    assert not documented(tree, Path("harness/judging/sandbox/not_a_module.py"))
    assert not documented(tree, Path("harness/no_such_package/x.py"))
    assert documented(tree, Path("harness/judging/judge.py"))


def test_every_harness_path_the_docs_name_exists():
    stale = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for path in set(re.findall(r"\bharness/[\w/]+\.py\b", doc.read_text())):
            if not (ROOT / path).exists():
                stale.append(f"{doc.name}: {path}")
    assert not stale, f"the docs name files that do not exist: {sorted(stale)}"
