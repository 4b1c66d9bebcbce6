"""benchmarks/server_throughput.py: the gaps and overlaps it reads from job times, and one
real run at its smallest on the CPU (a server fed by `submit --server`, then a batch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, warm_env

sys.path.insert(0, str(ROOT / "benchmarks"))

import server_throughput  # noqa: E402


def test_gaps_are_the_idle_between_jobs_and_overlaps_are_counted():
    idle, most = server_throughput.gaps([(10.0, 12.0), (0.0, 4.0), (5.0, 9.0)])
    assert idle == [1.0, 1.0] and most == 1
    idle, most = server_throughput.gaps([(0.0, 4.0), (3.0, 6.0), (3.5, 5.0)])
    assert idle == [0.0, 0.0] and most == 3


def test_files_are_distinct_copies_of_the_examples(tmp_path):
    files = server_throughput.make_files(tmp_path, 4, "cpu")
    assert len({f.read_text() for f in files}) == 4
    assert not any("triton" in f.name for f in files)  # a CPU run cannot compile Triton
    assert all(f.read_text().startswith("#!POPCORN leaderboard vectoradd") for f in files)


@pytest.mark.slow
def test_a_small_run_judges_every_file_both_ways_one_at_a_time(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "server_throughput.py"), "--submissions", "3",
         "--users", "2", "--device", "cpu", "--case", "size: 64; seed: 1", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "server_throughput.json").read_text())
    assert report["server"]["statuses"] == ["done"] * 3
    assert report["server"]["exit_codes"] == [0] * 3
    assert report["batch"]["statuses"] == ["passed"] * 3
    assert report["server"]["most_running"] == report["batch"]["most_running"] == 1
    assert report["server"]["ranking_equal"] is True
    assert report["ratio"] == pytest.approx(report["batch"]["wall_s"] / report["server"]["wall_s"])
    assert "throughput ratio server / batch" in proc.stdout
