"""Conformance: the public pmpp_v2 problems, judged by the harness and by their own eval.py.

Skipped unless $REFERENCE_KERNELS points at a local copy of gpu-mode/reference-kernels
(nothing of it lives in this project) and a GPU is visible. For every problem folder, its
submission.py and every file under solutions/ run in test mode through `runner.py submit
--task FOLDER` and through the folder's own `eval.py` on the same machine: the verdicts must
agree (a problem whose own correct solution fails its own evaluator agrees when both fail).
With $PARITY_OUT set, every pair's verdicts and walls are written there as JSON.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from conftest import gpu, run_cli

from harness.loading.popcorn import run_eval, stage_all
from harness.loading.task_folder import load_task

REFK = os.environ.get("REFERENCE_KERNELS")
PMPP = Path(REFK) / "problems" / "pmpp_v2" if REFK else None


def _pairs() -> list[tuple[str, str]]:
    if PMPP is None or not PMPP.is_dir():
        return []
    out = []
    for folder in sorted(p for p in PMPP.iterdir() if (p / "task.yml").is_file()):
        files = [folder / "submission.py", *sorted((folder / "solutions").rglob("*.py"))]
        out += [(folder.name, str(f.relative_to(folder))) for f in files if f.is_file()]
    return out


pytestmark = [
    gpu,
    pytest.mark.skipif(PMPP is None or not PMPP.is_dir(),
                       reason="set $REFERENCE_KERNELS to a copy of gpu-mode/reference-kernels"),
]


@pytest.mark.parametrize("problem,file", _pairs() or [("none", "none")])
def test_verdict_matches_the_public_evaluator(problem, file, tmp_path):
    folder = PMPP / problem
    submission = folder / file
    task = load_task(str(folder))
    public = run_eval(stage_all(task, submission, Path(tempfile.mkdtemp(dir=tmp_path))),
                      "test", task.tests, timeout=600)
    harness = run_cli("submit", str(submission), "--task", str(folder), "--mode", "test",
                      "--no-record", json_path=tmp_path / "result.json")
    assert harness.rc != 5, harness.out  # never an internal error
    harness_passed = bool(harness.doc) and harness.doc["passed"]
    if os.environ.get("PARITY_OUT"):
        out = Path(os.environ["PARITY_OUT"])
        rows = json.loads(out.read_text()) if out.exists() else []
        rows.append({"problem": problem, "file": file, "public_passed": public.passed,
                     "harness_passed": harness_passed, "harness_status": harness.doc.get("status"),
                     "public_wall_s": public.wall_seconds,
                     "harness_wall_s": harness.wall,  # the process's, as the public's
                     "harness_evaluation_s": harness.doc.get("wall_seconds")})
        out.write_text(json.dumps(rows, indent=2))
    assert harness_passed == public.passed, (
        f"public: {public.report.get('check')} {public.case_verdicts()}\n"
        f"harness: {harness.doc.get('status')}\n{harness.out[-3000:]}")
