"""Helpers for benchmark scripts: load a task's reference and a submission in-process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_task_modules(task: str) -> tuple[ModuleType, list[dict], list[dict]]:
    """(reference module, tests, benchmarks) of a task under tasks/, from a staged copy."""
    import atexit
    import shutil
    import tempfile

    from harness.loading.task_folder import import_reference, load_task

    loaded = load_task(task)
    folder = Path(tempfile.mkdtemp(prefix="bench-task-"))
    atexit.register(shutil.rmtree, folder, True)  # on sys.path until the process ends
    staged = loaded.stage(folder)
    # Submissions import `task` (and may import `utils`): keep the staged folder on the path.
    sys.path.insert(0, str(staged))
    return import_reference(loaded, staged).module, loaded.tests, loaded.benchmarks


def load_submission(path: str | Path) -> ModuleType:
    """Import a submission file as a module (the task's folder must be on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"sub_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def judge_env() -> dict[str, str]:
    """This process's environment, plus `$PARITY_JUDGE_ENV` ("NAME=VALUE,NAME=VALUE"): set
    for the harness's own processes only (the judge; the worker sees what its settings
    pass), never for the public evaluator's, to tell which process a setting acts on."""
    env = dict(os.environ)
    for item in filter(None, env.pop("PARITY_JUDGE_ENV", "").split(",")):
        name, _, value = item.partition("=")
        env[name.strip()] = value
    return env


def run_submit(submission: Path, out: Path, *args: str, root: Path = ROOT,
               ) -> tuple[dict, subprocess.CompletedProcess, float]:
    """`runner.py submit SUBMISSION --json OUT ARGS...` in a fresh process, from the checkout
    at `root` (this one by default; another commit's to set two side by side).

    Returns the result document ({} when none was written), the process and the wall time.
    A document left at OUT by an earlier run is removed first: a run that writes none must
    not read as that one's."""
    out.unlink(missing_ok=True)
    t0 = time.time()
    cmd = [sys.executable, str(root / "runner.py"), "submit", str(submission), "--json", str(out),
           *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=judge_env())
    wall = time.time() - t0
    return (json.loads(out.read_text()) if out.exists() else {}), proc, wall
