"""harness/judging/phases.py: the loop over a phase's cases shared by one GPU and several."""

from __future__ import annotations

from harness.consts import Status
from harness.judging.phases import AFTER_TIMEOUT, PhaseSpec, Progress, run_cases
from harness.results.document import CaseResult


class Recorded(Progress):
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def case_start(self, spec, index, case) -> None:
        self.events.append(("start", index))

    def case_done(self, spec, result) -> None:
        self.events.append(("done", result.index))


def _run(statuses: list[Status], after=lambda result: "") -> tuple[list[CaseResult], Recorded]:
    spec = PhaseSpec("benchmark", "public", [{"n": i} for i in range(len(statuses))], True, 10.0)
    ticks = iter(range(100))
    progress = Recorded()
    results = run_cases(spec, progress, lambda i, case: CaseResult(i, case, statuses[i]),
                        after, lambda: float(next(ticks)))
    return results, progress


def test_every_case_runs_in_turn_with_its_wall_time_and_progress():
    results, progress = _run([Status.PASSED, Status.FAILED, Status.PASSED])
    assert [r.status for r in results] == [Status.PASSED, Status.FAILED, Status.PASSED]
    assert [r.wall_seconds for r in results] == [1.0, 1.0, 1.0]
    assert progress.events == [("start", 0), ("done", 0), ("start", 1), ("done", 1),
                               ("start", 2), ("done", 2)]


def test_a_timed_out_case_or_a_named_reason_skips_the_rest():
    results, _ = _run([Status.PASSED, Status.TIMED_OUT, Status.PASSED, Status.PASSED])
    assert [r.status for r in results[2:]] == [Status.SKIPPED, Status.SKIPPED]
    assert {r.message for r in results[2:]} == {AFTER_TIMEOUT}
    seen: list[int] = []

    def after(result: CaseResult) -> str:
        seen.append(result.index)
        return "not run: the machine lacks a GPU" if result.index == 0 else ""

    results, progress = _run([Status.NEEDS_GPU, Status.PASSED], after)
    assert seen == [0] and results[1].status == Status.SKIPPED
    assert results[1].message == "not run: the machine lacks a GPU"
    assert progress.events[-1] == ("done", 1)
