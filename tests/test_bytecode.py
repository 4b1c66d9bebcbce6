"""The bytecode cache used where packages sit on a read-only file system."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import bytecode
from harness.judging.sandbox.containment import build_policy

ROOT = Path(__file__).resolve().parents[1]


def _module(tmp_path: Path, cached: bool) -> str:
    source = tmp_path / "pkg" / "__init__.py"
    source.parent.mkdir()
    source.write_text("X = 1\n")
    if cached:
        out = Path(importlib.util.cache_from_source(str(source)))
        out.parent.mkdir()
        out.write_bytes(b"")
    return str(source)


def test_no_prefix_where_bytecode_must_not_be_written(monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert bytecode.use_cache_if_needed("torch") is None


def test_a_prefix_only_where_bytecode_can_neither_be_found_nor_written(tmp_path):
    origin = _module(tmp_path, cached=False)
    assert bytecode.needs_prefix(origin, writable=lambda p: False)
    assert not bytecode.needs_prefix(origin, writable=lambda p: True)
    assert not bytecode.needs_prefix(None)
    assert not bytecode.needs_prefix(str(tmp_path / "missing.py"), writable=lambda p: False)


def test_bytecode_beside_the_sources_needs_no_prefix(tmp_path):
    origin = _module(tmp_path, cached=True)
    assert not bytecode.needs_prefix(origin, writable=lambda p: False)


def test_the_writability_asked_is_of_the_folder_python_would_write(tmp_path):
    origin = _module(tmp_path, cached=False)
    asked = []
    bytecode.needs_prefix(origin, writable=lambda p: asked.append(p) or True)
    assert asked == [str(Path(origin).parent)]  # no __pycache__ yet: the package folder


def test_the_worker_reads_only_the_libraries_part_of_the_cache(tmp_path, monkeypatch):
    prefix = tmp_path / "pyc"
    lib = Path(importlib.util.find_spec("click").origin).parent.parent  # a package folder
    staged = tmp_path / "run" / "judge"
    for folder in (lib, staged):
        (prefix / folder.resolve().relative_to("/")).mkdir(parents=True)
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    policy = build_policy(tmp_path / "scratch", [staged], [], "cpu", [])
    read = {str(p) for p in policy.read}
    assert str(prefix / lib.resolve().relative_to("/")) in read
    assert not any(p.startswith(str(prefix / staged.resolve().relative_to("/"))) for p in read)
    assert str(prefix) not in read


def test_forget_removes_a_runs_bytecode(tmp_path, monkeypatch):
    prefix, run = tmp_path / "pyc", tmp_path / "harness-run-x"
    kept = prefix / tmp_path.resolve().relative_to("/") / "other"
    gone = prefix / run.resolve().relative_to("/") / "judge"
    kept.mkdir(parents=True)
    gone.mkdir(parents=True)
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    bytecode.forget(run)
    assert kept.is_dir() and not gone.parent.exists()


@pytest.mark.slow
def test_an_evaluation_with_a_cache_passes_and_leaves_only_library_bytecode(tmp_path):
    """Driven like a user on a machine whose judge keeps bytecode under a prefix: the
    sandboxed worker starts and passes, the cache holds torch's bytecode, and nothing of
    the run's staged task or the worker's scratch."""
    prefix = tmp_path / "pyc"
    env = {**os.environ, bytecode.ENV: str(prefix), "HARNESS_DB": str(tmp_path / "r.db"),
           "COLUMNS": "200"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a judge that may write bytecode
    proc = subprocess.run(
        [sys.executable, str(ROOT / "runner.py"), "submit",
         str(ROOT / "submissions" / "vectoradd" / "add_torch.py"), "--mode", "test",
         "--device", "cpu", "--no-record"],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "PASSED" in proc.stdout
    torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    assert list((prefix / torch_dir.resolve().relative_to("/")).glob("__init__*.pyc"))
    assert not list(prefix.rglob("harness-run-*")) and not list(prefix.rglob("harness-worker-*"))
