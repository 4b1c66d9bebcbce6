"""The contest server under faults (issue: no accepted job lost, judged twice or blamed):
benchmarks/server_faults.py at 8 uploads from 8 clients, with judge processes, judge
templates, sandboxed workers, a worker slot's process and the server itself killed with SIGKILL at random
moments and started again. Every accepted job ends once: done with one recorded
submission, or failed for the machine's reasons after its attempts; no honest submission
gets a verdict but `passed`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import server_faults  # noqa: E402

pytest.importorskip("flask", reason="the server needs Flask")


def test_the_tally_counts_lost_duplicated_and_blamed_jobs():
    jobs = [{"id": 1, "status": "done", "verdict": "passed", "submission_id": 10,
             "attempts": 1, "error": None},
            {"id": 2, "status": "done", "verdict": "crashed", "submission_id": 11,
             "attempts": 2, "error": None},
            {"id": 3, "status": "failed", "verdict": None, "submission_id": None,
             "attempts": 5, "error": "not judged after 5 attempts"},
            {"id": 4, "status": "running", "verdict": None, "submission_id": None,
             "attempts": 1, "error": None},
            {"id": 5, "status": "done", "verdict": "passed", "submission_id": 10,
             "attempts": 1, "error": None}]
    counts = server_faults.tally(jobs, [10, 11, 12], accepted=[1, 2, 3, 4, 6])
    assert counts["lost"] == 2 and counts["lost_jobs"] == [4, 6]
    assert counts["duplicated"] == 2  # submission 10 twice, 12 with no job
    assert counts["blamed_jobs"] == [2] and len(counts["failed"]) == 1
    assert counts["replies_lost"] == 1  # job 5: made, but its client never heard


@pytest.mark.xdist_group("loud")  # never beside another test of the group (conftest.py)
@pytest.mark.slow  # 8 real jobs judged on 2 cores while their processes are killed
def test_every_job_ends_once_whatever_is_killed(tmp_path):
    """Eight uploads judged while a process is killed every 3 s or so: about 20 faults in
    a minute on 2 cores, each kind several times (a run of 15 uploads every 4 s took three
    minutes to show the same)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "server_faults.py"), "--uploads", "8",
         "--clients", "8", "--fault-every", "3", "--seed", "7", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=1200,
        env={**os.environ, "HARNESS_WARM_HOST": "off"})  # every template below the server
    report = json.loads((tmp_path / "server_faults.json").read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["accepted"] == 8 and report["refused"] == []
    assert (report["lost"], report["duplicated"], report["blamed"]) == (0, 0, 0), report
    assert all(f["error"].startswith("not judged") for f in report["failed"])
    assert all(n >= 1 for n in report["faults"].values()), report["faults"]  # each kind
    assert "lost 0, duplicated 0, blamed 0" in proc.stdout
