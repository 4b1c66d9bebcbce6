"""A bytecode cache where the interpreter cannot keep one beside the sources.

On a machine whose packages sit on a read-only file system, Python cannot write
`__pycache__` there and compiles every module of torch again in every process. The judge
then keeps compiled bytecode under the user's cache folder
(`sys.pycache_prefix`), and the worker reads it from there (read-only: the worker never
writes bytecode, and the sandbox lets it read only the libraries' part of that folder).
Nothing changes where the bytecode beside the sources is there or can be written, nor
where the environment forbids bytecode (`PYTHONDONTWRITEBYTECODE`, respected). The H200
machines are that case: their torch folder is writable but their environment sets
PYTHONDONTWRITEBYTECODE=1, so every process there, the public evaluators' too, compiles
torch's sources (1.8 s of the judge's time), and this cache stays unused.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

ENV = "PYTHONPYCACHEPREFIX"


def default_prefix() -> Path:
    """The cache folder: `$XDG_CACHE_HOME/kernel-harness/pycache` (or under ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-harness" / "pycache"


def needs_prefix(origin: str | None,
                 writable: Callable[[str], bool] = lambda p: os.access(p, os.W_OK)) -> bool:
    """True when the module at `origin` has no bytecode beside it and none can be written
    there (its folder, or its `__pycache__`, is not writable)."""
    if not origin or not os.path.exists(origin):
        return False
    cached = importlib.util.cache_from_source(origin)
    if os.path.exists(cached):
        return False
    folder = os.path.dirname(cached)
    return not writable(folder if os.path.isdir(folder) else os.path.dirname(origin))


def use_cache_if_needed(package: str = "torch", prefix: Path | None = None) -> Path | None:
    """Call before importing `package`: set `sys.pycache_prefix` (and the environment, for
    child processes) when `package` cannot keep its bytecode beside its sources. The
    prefix in use, or None."""
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix)
    if sys.dont_write_bytecode:
        return None
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not needs_prefix(spec.origin):
        return None
    prefix = prefix or default_prefix()
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    sys.pycache_prefix = str(prefix)
    os.environ[ENV] = str(prefix)
    return prefix


def _mirror(prefix: Path, folder: Path) -> Path:
    """Where the cache under `prefix` keeps the bytecode of `folder`'s sources."""
    return prefix / Path(folder).resolve().relative_to("/")


def mirrored(prefix: Path, folders: list[Path]) -> list[Path]:
    """The parts of the cache that hold bytecode of `folders` (those that exist)."""
    return [part for part in (_mirror(prefix, f) for f in folders) if part.is_dir()]


def forget(folder: Path) -> None:
    """Remove the cache's bytecode of `folder` (a run's staged task, gone after the run)."""
    if sys.pycache_prefix:
        shutil.rmtree(_mirror(Path(sys.pycache_prefix), folder), ignore_errors=True)
