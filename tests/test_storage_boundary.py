"""No module of the harness outside harness/storage holds SQL: a string that reads as a
statement (SELECT ... FROM, INSERT INTO, UPDATE ... SET, DELETE FROM, CREATE/ALTER/DROP
TABLE or INDEX) anywhere else fails, with where it is."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATEMENT = re.compile(
    r"\bSELECT\b.+\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|"
    r"\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX)\b", re.S)


def sql_outside_storage(root: Path = ROOT) -> list[str]:
    """`path:line` of every string of SQL in harness/ or runner.py outside the storage
    package (adjacent literals are joined, as Python joins them)."""
    found, storage = [], root / "harness" / "storage"
    for path in sorted([*(root / "harness").rglob("*.py"), root / "runner.py"]):
        if storage in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and STATEMENT.search(node.value):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_sql_outside_the_storage_package():
    assert sql_outside_storage() == []


def test_the_check_finds_sql_where_it_is(tmp_path):
    (tmp_path / "harness" / "storage").mkdir(parents=True)
    (tmp_path / "runner.py").write_text("")
    (tmp_path / "harness" / "api.py").write_text(
        'rows = q("SELECT status "\n  "FROM submissions WHERE id = ?")\nsay("select a file")\n')
    (tmp_path / "harness" / "storage" / "store.py").write_text('q("DELETE FROM runs")\n')
    assert sql_outside_storage(tmp_path) == ["harness/api.py:1"]
