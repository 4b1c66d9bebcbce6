"""The judge (harness/judging/judge.py): what it declares to the timing, how it maps a
worker's faults to verdicts, and, with real CPU workers, its phases: a worker that dies
on one case is replaced for the next, and a timed phase's score combines its cases."""

from __future__ import annotations

import inspect
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.consts import Status
from harness.judging.judge import Entry, Judge
from harness.judging.measure.devices import DeviceInfo
from harness.judging.measure.sampling import SamplingHost
from harness.judging.phases import PhaseSpec
from harness.judging.sandbox.sandbox import WorkerDied, WorkerTimeout
from harness.judging.seeds import SeedPlan
from harness.judging.verdicts import CaseFailure
from harness.judging.worker.protocol import ProtocolError
from harness.loading.task_folder import TaskError, import_reference, load_task
from harness.scores import combine
from harness.settings import Settings

CPU = DeviceInfo("cpu", "test CPU", "flag")


def _judge(tmp_path: Path, source: str, task_name: str = "vectoradd") -> Judge:
    """A judge of `source` on the CPU, its task staged under `tmp_path` as an evaluation
    stages it; no worker started yet."""
    task = load_task(task_name)
    submission = tmp_path / "submission.py"
    submission.write_text(source)
    reference = import_reference(task, task.stage(tmp_path / "judge"))
    staging = task.stage(tmp_path / "worker", submission, for_worker=True, text=source)
    settings = Settings.load().for_device("cpu")
    return Judge(task, reference, CPU, settings, Entry(submission, staging))


def _run_test_phase(judge: Judge, cases: list[dict], timed: bool = False, beside=None):
    """Start the judge's worker and run one phase of `cases` (`beside`: a thread started
    once the worker is ready, joined at the end); the judge is closed afterwards."""
    try:
        assert judge.start(120.0)
        if beside is not None:
            beside.start()
        name = "benchmark" if timed else "test"
        return judge.run_phase(PhaseSpec(name, "public", cases, timed, 300.0))
    finally:
        judge.close()
        if beside is not None:
            beside.join()


def test_the_judge_provides_what_sampling_declares_it_needs(tmp_path):
    judge = _judge(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    try:
        declared = set(inspect.get_annotations(SamplingHost)) | {
            name for name, _ in inspect.getmembers(SamplingHost, inspect.isfunction)
            if not name.startswith("_")}
        assert declared >= {"settings", "channel", "clock", "generate"}
        missing = [name for name in declared if not hasattr(judge, name)]
        assert missing == [], missing
    finally:
        judge.close()


def test_faults_become_verdicts(tmp_path):
    judge = _judge(tmp_path, "def custom_kernel(data):\n    return data[0]\n")
    try:
        assert judge._fault(WorkerTimeout("no answer within 3 s")) == (
            Status.TIMED_OUT, "timed out: no answer within 3 s; the worker was killed")
        assert judge._fault(WorkerDied("killed by SIGSEGV")) == (
            Status.CRASHED, "crashed: killed by SIGSEGV")
        assert judge._fault(ProtocolError("forged bytes")) == (
            Status.REJECTED, "rejected: forged bytes")
        assert judge._fault(CaseFailure(Status.FAILED, "wrong output")) == (
            Status.FAILED, "wrong output")
    finally:
        judge.close()


def test_inputs_the_task_cannot_make_are_the_tasks_error(tmp_path):
    judge = _judge(tmp_path, "def custom_kernel(data):\n    return data[0]\n")
    try:
        with pytest.raises(TaskError, match="generate_input failed on case"):
            judge.generate({"size": "not a size"}, SeedPlan(1), 0)
        data = judge.generate({"size": 8, "seed": 1}, SeedPlan(1), 0)
        assert tuple(data[0].shape) == (8, 8)
    finally:
        judge.close()


def test_a_compile_error_is_explained_from_the_workers_stderr(tmp_path):
    judge = _judge(tmp_path, "def custom_kernel(data):\n    return data[0]\n")
    try:
        judge.worker_output["stderr"] = (f"{judge.staging / 'submission.py'}:3: error: bad\n")
        text = judge.explain_compile_error("CompilationError: at 3:4")
        assert "does not compile" in text and "submission.py:3: error: bad" in text
        assert str(judge.staging) not in text  # the staged path is shown as the user's file
    finally:
        judge.close()


CRASHES_ON_256 = """\
import os


def custom_kernel(data):
    a, b = data
    if a.shape[0] == 256:
        os._exit(3)
    return a + b
"""


@pytest.mark.slow
def test_a_worker_that_dies_on_one_case_is_replaced_for_the_next(tmp_path):
    """A crash ends its case only: the judge starts a fresh worker, which loads the
    submission again, and the phase goes on."""
    judge = _judge(tmp_path, CRASHES_ON_256)
    cases = [{"size": 8, "seed": 1}, {"size": 256, "seed": 2}, {"size": 16, "seed": 3}]
    phase = _run_test_phase(judge, cases)
    assert [c.status for c in phase.cases] == [Status.PASSED, Status.CRASHED, Status.PASSED]
    assert "crashed" in phase.cases[1].message and judge.restarts == 1
    assert not phase.passed and phase.score_ns is None


SLEEPS_IN_ITS_FIRST_CALL = """\
import time
from pathlib import Path


def custom_kernel(data):
    called = Path("called")  # in the worker's scratch folder, its working directory
    if not called.exists():
        called.touch()
        time.sleep(4)
    a, b = data
    return a + b
"""

KILLS_ITSELF_ON_16 = """\
import os
import signal


def custom_kernel(data):
    a, b = data
    if a.shape[0] == 16:
        os.kill(os.getpid(), signal.SIGKILL)
    return a + b
"""


@pytest.mark.slow
def test_a_worker_killed_from_outside_runs_its_case_again_in_a_fresh_one(tmp_path):
    """SIGKILL the worker in the middle of a call, as the OOM killer or an operator would:
    nothing the judge can name explains the death, so the case runs again in a fresh
    worker, and the honest submission passes."""
    judge = _judge(tmp_path, SLEEPS_IN_ITS_FIRST_CALL)
    cases = [{"size": 8, "seed": 1}, {"size": 16, "seed": 2}]
    killed: list[int] = []

    def kill_the_first_worker_in_its_call() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            worker = judge.worker
            if worker is not None and (worker.scratch / "called").exists():
                os.kill(worker.proc.pid, signal.SIGKILL)
                killed.append(worker.proc.pid)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_first_worker_in_its_call, daemon=True)
    phase = _run_test_phase(judge, cases, beside=killer)
    assert killed, "the worker was never seen in its call"
    assert [c.status for c in phase.cases] == [Status.PASSED, Status.PASSED], phase.cases
    assert judge.restarts == 1 and phase.passed


@pytest.mark.slow
def test_a_worker_that_dies_the_same_way_twice_is_the_verdict_and_says_so(tmp_path):
    """A submission that SIGKILLs itself looks, to the judge, like a kill from outside: its
    case runs once more, and the second death is the verdict, which says it died twice."""
    judge = _judge(tmp_path, KILLS_ITSELF_ON_16)
    cases = [{"size": 8, "seed": 1}, {"size": 16, "seed": 2}, {"size": 32, "seed": 3}]
    phase = _run_test_phase(judge, cases)
    assert [c.status for c in phase.cases] == [Status.PASSED, Status.CRASHED, Status.PASSED]
    message = phase.cases[1].message
    assert "killed by SIGKILL" in message and "the worker died twice" in message
    assert judge.restarts == 2  # a fresh worker for the case run again, one for size 32


@pytest.mark.slow
def test_a_timed_phase_is_scored_by_the_tasks_combination_of_its_cases(tmp_path):
    judge = _judge(tmp_path, "def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    cases = [{"size": 8, "seed": 1}, {"size": 64, "seed": 2}]
    phase = _run_test_phase(judge, cases, timed=True)
    assert phase.passed and all(c.status == Status.PASSED for c in phase.cases)
    scores = [c.score_ns for c in phase.cases]
    assert phase.score_ns == pytest.approx(combine(scores, judge.task.ranking_by))
    assert all(c.integrity["calls_per_sample"] == 1 for c in phase.cases)
    assert judge.base_calibration is not None and judge.base_calibration.calls > 0


@pytest.mark.slow
def test_a_submission_that_fails_to_import_is_a_load_error(tmp_path):
    judge = _judge(tmp_path, "import not_a_module_anywhere\n")
    try:
        assert judge.start(120.0) is False
    finally:
        judge.close()
    assert judge.load_error["status"] == Status.ERROR
    assert judge.load_error["kind"] == "import_error"
    assert "not_a_module_anywhere" in judge.load_error["message"]
    assert judge.worker is None  # stopped: nothing left running


@pytest.mark.slow
def test_a_worker_killed_while_it_loads_the_submission_is_started_once_more(tmp_path):
    """A death while importing the submission that nothing explains (a SIGKILL) starts a
    fresh worker, which imports it again; a second death is the load's verdict."""
    judge = _judge(tmp_path, "import os\nimport signal\n\nos.kill(os.getpid(), signal.SIGKILL)\n")
    try:
        assert judge.start(120.0) is False
    finally:
        judge.close()
    assert judge.load_error["status"] == Status.CRASHED and judge.restarts == 1
    assert "killed by SIGKILL" in judge.load_error["message"]
    assert "the worker died twice, the first time the same way" in judge.load_error["message"]
