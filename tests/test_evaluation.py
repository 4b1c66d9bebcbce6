"""One evaluation (harness/judging/evaluation.py): the phases a mode runs, what a
submission Python cannot parse gets without any process started, what the sandbox's
report adds, and one whole evaluation on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.consts import Status
from harness.judging.evaluation import _note_containment, evaluate, phase_specs, process_age
from harness.judging.preparation import UsageError, prepare
from harness.judging.sandbox.landlock import Report
from harness.options import RunOptions
from harness.results.document import CaseResult, Evaluation, PhaseResult
from harness.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"


def _prepared(file: Path = ADD, **options):
    return prepare(RunOptions(file=file, task="vectoradd", device="cpu", **options))


def _phases(mode: str, **options) -> list[tuple]:
    prepared = _prepared(mode=mode, **options)
    return [(s.name, s.seeds, s.timed, s.profile, s.timeout, len(s.cases))
            for s in phase_specs(prepared, Settings.load())]


def test_each_mode_runs_its_phases_with_the_tasks_timeouts():
    """vectoradd's timeouts: 120 s (test), 180 (benchmark), 240 (ranked). A leaderboard run
    is the test and the timed phase, public then secret."""
    task = _prepared().task
    tests, benchmarks = len(task.tests), len(task.benchmarks)
    assert _phases("test") == [("test", "public", False, False, 120.0, tests)]
    assert _phases("benchmark") == [("benchmark", "public", True, False, 180.0, benchmarks)]
    assert _phases("profile") == [("profile", "public", False, True, 180.0, benchmarks)]
    assert _phases("leaderboard") == [
        ("test", "public", False, False, 120.0, tests),
        ("benchmark", "public", True, False, 240.0, benchmarks),
        ("test", "secret", False, False, 120.0, tests),
        ("benchmark", "secret", True, False, 240.0, benchmarks)]


def test_given_cases_and_timeout_replace_the_tasks_own():
    assert _phases("test", cases=["size: 8; seed: 1"], timeout=9.0) == [
        ("test", "public", False, False, 9.0, 1)]
    # given cases replace the benchmarks in a timed mode, the tests stay the task's
    tests = len(_prepared().task.tests)
    assert _phases("leaderboard", cases=["size: 8; seed: 1"])[:2] == [
        ("test", "public", False, False, 120.0, tests),
        ("benchmark", "public", True, False, 240.0, 1)]


def test_a_timed_mode_needs_benchmarks():
    prepared = _prepared(mode="benchmark")
    prepared.task.benchmarks = []
    with pytest.raises(UsageError, match="has no benchmarks to time"):
        phase_specs(prepared, Settings.load())


def test_a_submission_python_cannot_parse_is_judged_without_a_worker(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def custom_kernel(data)\n    return data\n")
    evaluation = evaluate(_prepared(broken, mode="test"), Settings.load())
    assert evaluation.load_error["kind"] == "syntax_error"
    assert "line 1" in evaluation.load_error["message"]
    assert evaluation.phases == [] and evaluation.harness["head_start"] is False
    assert evaluation.startup_seconds == 0.0  # no worker was started
    assert evaluation.ended and evaluation.wall_seconds >= 0


def test_a_partial_sandbox_and_its_refusals_are_noted():
    evaluation = Evaluation(task={}, submission={}, device={}, mode="test", started="")
    evaluation.phases = [PhaseResult("test", "public", [
        CaseResult(0, {}, Status.ERROR, "PermissionError: [Errno 13] Permission denied: '/x'")])]
    partial = Report("partial", 3, ["filesystem"], ["tcp (Landlock ABI 4; the kernel has 3)"])
    _note_containment(evaluation, partial, {"stderr": "sandbox refused: read /etc/shadow\n"})
    assert evaluation.harness["containment"]["level"] == "partial"
    assert evaluation.warnings[0] == partial.summary
    assert evaluation.warnings[1].startswith("the sandbox refused: read /etc/shadow; ")
    assert "Permission denied: '/x'" in evaluation.warnings[1]


def test_the_process_age_is_read_from_proc():
    age = process_age()
    assert age is None or 0 < age < 10 * 24 * 3600


@pytest.mark.slow
def test_one_evaluation_on_the_cpu():
    """A test-mode run of two given cases: the phase's verdicts, the worker's start and
    calibration, the device and the harness in the result."""
    evaluation = evaluate(_prepared(mode="test", cases=["size: 8; seed: 1", "size: 16; seed: 2"]),
                          Settings.load())
    (phase,) = evaluation.phases
    assert isinstance(phase, PhaseResult) and phase.passed
    assert [c.status for c in phase.cases] == [Status.PASSED, Status.PASSED]
    assert evaluation.load_error is None and evaluation.startup_seconds > 0
    assert evaluation.calibration["calls"] > 0
    assert evaluation.device["kind"] == "cpu" and evaluation.harness["head_start"] is False
    assert evaluation.submission["name"] == "add_torch.py"
    assert evaluation.harness["containment"]["level"] in ("full", "partial", "off")


PROBE = ROOT / "tests" / "submissions" / "vectoradd" / "print_inputs.py"


@pytest.mark.slow  # three leaderboard evaluations
def test_each_ranked_run_gets_other_secret_inputs_and_its_nonce_runs_them_again():
    """Two leaderboard evaluations with one leaderboard secret: the public phases see the
    same inputs, the secret phases none of the same; the first run's recorded nonce, given
    back, gives its secret inputs again."""
    secret = b"k" * 32

    def run(nonce=None):
        options = {"mode": "leaderboard", "cases": ["size: 8; seed: 5"], "secret": secret,
                   "secret_nonce": nonce}
        ev = evaluate(_prepared(PROBE, **options), Settings.load())
        assert ev.passed, ev.status
        return ev

    def inputs(output: dict) -> set[str]:
        return {line for line in output["stdout"].splitlines() if line.startswith("INPUT")}

    first, second = run(), run()
    assert first.harness["secret_nonce"] != second.harness["secret_nonce"]
    public = inputs(first.worker_output) & inputs(second.worker_output)
    assert len(public) >= 3  # the public calls' inputs are the same in every run
    assert inputs(first.secret_output) and not inputs(first.secret_output) & inputs(
        second.secret_output)
    again = run(first.harness["secret_nonce"])
    assert len(inputs(again.secret_output) & inputs(first.secret_output)) >= 3
