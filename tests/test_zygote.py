"""The judge's zygote (harness/judging/sandbox/zygote.py), with real judges forked from a
template on the CPU: a worker after a crash is its fork (no second import of torch),
contained as the first worker is (test_judge_template.py); the zygote never holds the request's secret; a zygote
that is gone costs a new interpreter, not the job."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from test_judge_template import (
    _children_of,
    _readable_memory,
    _request,
    _statuses,
    crashing_first,
)

from harness.execution.judge_process import run_judge
from harness.execution.judge_template import JudgeTemplate
from harness.execution.protocol import Judged
from harness.judging.sandbox.procfs import ZYGOTE_NAME, name_of

pytestmark = [pytest.mark.slow,  # real templates, judges and workers
              pytest.mark.xdist_group("judge")]


def test_a_worker_after_a_crash_is_a_fork_of_the_zygote(tmp_path):
    """The first case's crash is its verdict; the next cases pass in a second worker,
    which is a fork (it has the judge's modules), started in well under the second an
    import of torch takes."""
    file = crashing_first(tmp_path)
    template = JudgeTemplate()
    try:
        began = time.monotonic()
        result = run_judge(_request(file=file), template)
        took = time.monotonic() - began
    finally:
        template.close()
    assert isinstance(result, Judged), result
    doc = result.document
    assert _statuses(doc) == ["crashed", "passed", "passed", "passed"], doc
    assert "SIGSEGV" in doc["phases"][0]["cases"][0]["message"]
    assert "worker: forked" in doc["worker_output"]["stdout"], doc["worker_output"]
    assert took < 20, took


def _job_and_its_zygote(template: JudgeTemplate, file: Path, results: list,
                        secret: bytes | None = None) -> tuple[threading.Thread, int, int]:
    """A job of `file` started on `template` in a thread (its result appended to
    `results`), and the pids of its judge and its zygote once there."""
    job = threading.Thread(target=lambda: results.append(
        run_judge(_request(file=file, secret=secret), template)))
    job.start()
    deadline = time.monotonic() + 60
    while job.is_alive() and time.monotonic() < deadline:
        for judge in _children_of(template.proc.pid) if template.proc is not None else ():
            for child in _children_of(judge):
                if name_of(child) == ZYGOTE_NAME:
                    return job, judge, child
        time.sleep(0.05)
    raise AssertionError(f"no zygote seen: {results}")


def test_the_zygote_never_holds_the_secret_and_dies_with_its_judge(tmp_path):
    """A job carrying a leaderboard secret, its second worker slow: meanwhile the judge
    holds the secret (the scan finds it there) and its zygote does not; once the job
    ends, the zygote is gone too (reaped, not left a zombie)."""
    file = crashing_first(tmp_path, later=1.0)
    secret = os.urandom(24)
    template = JudgeTemplate()
    results: list = []
    try:
        job, judge, spare = _job_and_its_zygote(template, file, results, secret)
        time.sleep(1.5)  # the first case crashed; the second worker runs
        in_spare = _readable_memory(spare).chunks
        in_judge = _readable_memory(judge).chunks
        job.join(60)
    finally:
        template.close()
    assert isinstance(results[0], Judged) and _statuses(results[0].document)[1:] == [
        "passed"] * 3, results
    forms = (secret, secret.hex().encode())
    assert any(form in c for form in forms for c in in_judge)  # the scan finds it there
    for form in forms:
        assert not any(form in chunk for chunk in in_spare), form
    assert not Path(f"/proc/{spare}").exists() or name_of(spare) != ZYGOTE_NAME


def test_a_zygote_gone_costs_a_new_interpreter_not_the_job(tmp_path):
    """The zygote killed while the first worker runs: the next worker is a new
    interpreter, and the job's verdicts are those of a job with its zygote."""
    file = crashing_first(tmp_path, first=2.0)
    template = JudgeTemplate()
    results: list = []
    try:
        job, _, spare = _job_and_its_zygote(template, file, results)
        os.kill(spare, signal.SIGKILL)
        job.join(90)
    finally:
        template.close()
    doc = results[0].document
    assert _statuses(doc) == ["crashed", "passed", "passed", "passed"], doc
    assert "worker: new interpreter" in doc["worker_output"]["stdout"], doc["worker_output"]
