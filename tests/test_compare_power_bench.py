"""benchmarks/compare_power.py: the padded file it builds, how it reads a compare's verdict,
and one real compare of each kind at its smallest on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, warm_env

sys.path.insert(0, str(ROOT / "benchmarks"))

import compare_power  # noqa: E402


def test_the_padded_file_waits_after_the_kernel_on_the_host(tmp_path):
    source = "def custom_kernel(data):\n    return data\n"
    namespace: dict = {}
    exec(compile(compare_power.padded(source, 2e6, "cpu"), "b.py", "exec"), namespace)
    import time
    began = time.perf_counter_ns()
    assert namespace["custom_kernel"]("x") == "x"
    assert time.perf_counter_ns() - began >= 2e6


def test_verdicts_are_read_by_their_interval_and_words():
    slower = {"verdict": "B is 2.0% slower than A (95% CI 1.0% to 3.0%)", "ci95": [1.01, 1.03]}
    unsure = {"verdict": "no difference detectable at this noise (95% CI -1.2% to +0.9%)",
              "ci95": [0.988, 1.009]}
    failed = {"verdict": None, "ci95": None}
    assert compare_power.ordered_right(slower)
    assert not compare_power.ordered_right(unsure) and not compare_power.ordered_right(failed)
    assert compare_power.copies_right(unsure)
    assert not compare_power.copies_right(slower) and not compare_power.copies_right(failed)


@pytest.mark.slow
def test_one_compare_of_each_kind_on_the_cpu_then_one_more_resumed(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_power.py"), "--compares", "1",
         "--runs", "2", "--min-runs", "2", "--device", "cpu", "--case", "size: 256; seed: 1",
         "--slower", "9", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "compare_power.json").read_text())
    assert report["b_score_ns"] > 2 * report["a_score_ns"] and report["pad_ns"] > 0
    assert [len(report["different"]), len(report["copies"])] == [1, 1]
    assert all(r["exit_code"] == 0 and r["runs"] == 2
               for r in report["different"] + report["copies"])
    assert report["different"][0]["ratio"] > 2  # ten times A's time, whatever the CPU's noise
    assert "ordered right" in proc.stdout
    resumed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_power.py"), "--compares", "2",
         "--runs", "2", "--min-runs", "2", "--device", "cpu", "--case", "size: 256; seed: 1",
         "--out", str(tmp_path / "more"), "--resume", str(tmp_path / "compare_power.json")],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, **warm_env()})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    more = json.loads((tmp_path / "more" / "compare_power.json").read_text())
    assert more["pad_ns"] == report["pad_ns"] and len(more["rechecks"]) == 1
    assert more["different"][0] == report["different"][0]  # kept, one more of each added
    assert [len(more["different"]), len(more["copies"])] == [2, 2]
    assert more["different"][1]["ratio"] > 2
