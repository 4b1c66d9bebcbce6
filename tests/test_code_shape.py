"""Every function in harness/ fits on a screen: at most 60 lines and 6 parameters.

Parameters are counted without `self` and `cls`; `*args` and `**kwargs` count one each. A
function's lines run from its `def` to its last line, nested functions included.
"""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "harness"
MAX_LINES = 60
MAX_PARAMS = 6


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of a function, `self`/`cls` left out, `*args` and `**kwargs` one each."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def offenders(root: Path = HARNESS) -> list[str]:
    """`path:line name (N lines, M parameters)` for every function over either bound."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in sorted(functions, key=lambda n: n.lineno):
            lines = node.end_lineno - node.lineno + 1
            params = parameter_count(node)
            if lines > MAX_LINES or params > MAX_PARAMS:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                             f"({lines} lines, {params} parameters)")
    return found


def test_every_function_fits_on_a_screen():
    found = offenders()
    assert not found, (f"functions over {MAX_LINES} lines or {MAX_PARAMS} parameters:\n  "
                       + "\n  ".join(found))


def test_the_counts_follow_the_rules(tmp_path):
    (tmp_path / "m.py").write_text(
        "class C:\n"
        "    def ok(self, a, b, c, d, e, f): pass\n"
        "    def wide(self, a, b, c, d, e, *rest, **more): pass\n"
        "def long():\n" + "    x = 1\n" * 60)
    assert offenders(tmp_path) == [f"{tmp_path.name}/m.py:3 wide (1 lines, 7 parameters)",
                                   f"{tmp_path.name}/m.py:4 long (61 lines, 0 parameters)"]
