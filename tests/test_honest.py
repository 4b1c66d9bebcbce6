"""Honest code is never flagged: the CPU vectoradd examples, ten leaderboard runs each."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, warm_env

pytestmark = [pytest.mark.slow,  # ten leaderboard runs through the judge per test
              pytest.mark.xdist_group("loud")]  # away from the loads of the host (conftest.py)


@pytest.mark.parametrize("name", ["add_torch", "add_inplace"])
def test_ten_leaderboard_runs_without_a_flag(tmp_path, name):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "honest_runs.py"), "--runs", "10",
                           "--rounds-per-batch", "10", "--device", "cpu", "--small", "--only",
                           f"vectoradd/{name}", "--out", str(out)],
                          capture_output=True, text=True, timeout=900,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["submissions"][f"vectoradd/{name}.py"]
    assert len(rows) == 10 and all(r["status"] == "passed" and not r["flags"] for r in rows)
