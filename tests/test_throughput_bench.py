"""benchmarks/throughput.py: its ratios, and one real run on the CPU (this tree beside its
own HEAD, extracted with git archive), where each job's parts add up to its wall."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, warm_env

sys.path.insert(0, str(ROOT / "benchmarks"))

import throughput  # noqa: E402


def _run(job_wall, scores, busy=None):
    return {"job_wall_s": job_wall, "batch_wall_s": job_wall * 2, "runs_per_hour": 3600 / job_wall,
            "gpu_busy": busy, "scores_ns": scores}


def test_ratios_are_this_tree_over_the_baseline_medians():
    new = [_run(1.0, {"a": 100.0}), _run(3.0, {"a": 104.0}), _run(2.0, {"a": 102.0})]
    old = [_run(4.0, {"a": 100.0, "b": 5.0})]
    ratio = throughput.compare(new, old)
    assert ratio["job_wall_s"] == pytest.approx(0.5)
    assert ratio["runs_per_hour"] == pytest.approx(2.0)
    assert ratio["gpu_busy"] is None  # no GPU, no figure
    assert ratio["scores"] == {"a": pytest.approx(1.02)}


def test_the_cpu_examples_exist_and_need_no_gpu_compiler():
    files = throughput.examples("cpu")
    assert files and all(f.is_file() for f in files)
    assert not any("triton" in f.name for f in files)
    one_gpu = [p for p in (ROOT / "submissions").glob("*/*.py") if p.parent.name != "all_gather"]
    assert len(throughput.examples("cuda")) == len(one_gpu)  # every one-GPU task's example


@pytest.mark.slow
def test_a_small_run_judges_every_example_in_both_trees(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "throughput.py"), "--baseline", "HEAD",
         "--device", "cpu", "--modes", "test", "--case", "size: 64; seed: 1",
         "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "throughput.json").read_text())
    mode = report["modes"]["test"]
    for tree in ("baseline", "new"):
        (run,) = mode[tree]
        assert set(run["verdicts"].values()) == {"passed"}, run["verdicts"]
        assert run["runs_per_hour"] > 0 and run["gpu_busy"] is None
    parts = mode["new"][0]["parts_s"]  # HEAD may predate them: this tree reports them
    assert {"judge", "startup", "test", "other", "record"} <= set(parts)
    assert mode["new_over_baseline"]["job_wall_s"] > 0
    assert "test: new / baseline: job wall" in proc.stdout
