"""The execution layer's contract (harness/execution/protocol.py): a request to a real judge
process comes back as `Judged` with its document, or `Unjudged` saying why and whether
running it again can help."""

from __future__ import annotations

import time

import pytest

from harness.execution.judge_process import run_judge
from harness.execution.protocol import (
    JUDGE_OVERHEAD_S,
    Failure,
    Judged,
    JudgeRequest,
    Unjudged,
    result_from_wire,
    wall_limit,
)
from harness.loading.task_folder import load_task
from harness.options import RunOptions
from harness.settings import ROOT, Settings

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"
CPU = {"CUDA_VISIBLE_DEVICES": ""}


def _options(file=ADD, task="vectoradd", mode="test") -> RunOptions:
    return RunOptions(file=file, task=task, mode=mode, device="cpu", timeout=30)


@pytest.mark.slow
@pytest.mark.xdist_group("judge")
def test_a_judge_process_answers_judged_or_unjudged_and_says_whether_to_retry(tmp_path):
    """One real judge process each: a passing file is Judged (its document whole); a task
    that does not exist is Unjudged for the task (running it again cannot help); a judge
    past its wall limit is killed and Unjudged for the machine (it may run again)."""
    judged = run_judge(JudgeRequest(_options(), CPU, 300))
    assert isinstance(judged, Judged), judged
    assert judged.document["status"] == "passed" and judged.document["mode"] == "test"
    assert judged.as_evaluation().passed

    broken = run_judge(JudgeRequest(_options(task=str(tmp_path / "no-such-task")), CPU, 300))
    assert isinstance(broken, Unjudged) and broken.failure == Failure.TASK, broken
    assert "no-such-task" in broken.reason and not broken.retry

    began = time.monotonic()
    killed = run_judge(JudgeRequest(_options(), CPU, 0.5))
    assert time.monotonic() - began < 30
    assert isinstance(killed, Unjudged) and killed.failure == Failure.MACHINE, killed
    assert "ran past 0 s and was killed" in killed.reason and killed.retry


def test_an_unjudged_answer_crosses_the_wire_whole():
    """What a judge process writes for an unjudged run reads back the same; anything else
    it writes is a result document."""
    sent = Unjudged(Failure.HARNESS, "internal harness error: KeyError('x')", "Traceback ...")
    back = result_from_wire(sent.to_wire(), where="host GPU 0")
    assert back == Unjudged(sent.failure, sent.reason, sent.detail, "host GPU 0")
    assert back.retry and not Unjudged(Failure.STOPPED, "stopped").retry
    doc = {"status": "passed", "mode": "test"}
    assert result_from_wire(doc) == Judged(doc)


def test_the_wall_limit_covers_every_phase_of_the_mode():
    """A leaderboard run's judge may take its four phases at the task's longest timeout
    (or the user's), its worker's start and the process's own overhead; a test run one."""
    settings, task = Settings.load(), load_task("vectoradd")
    start = settings.worker.start_timeout
    assert wall_limit(task, "leaderboard", settings, 10) == 40 + start + JUDGE_OVERHEAD_S
    assert wall_limit(task, "test", settings, 10) == 10 + start + JUDGE_OVERHEAD_S
    longest = max(task.timeout(p, settings.default_timeout)
                  for p in ("test", "benchmark", "ranked"))
    assert wall_limit(task, "benchmark", settings) == longest + start + JUDGE_OVERHEAD_S
