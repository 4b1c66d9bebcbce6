"""What a phase runs, the loop over its cases (one GPU or several), and the callbacks for
live progress (no torch here: light imports)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.consts import Status
from harness.results.document import CaseResult

# Why the cases after a timed-out one are skipped (on one GPU as on several).
AFTER_TIMEOUT = "not run: an earlier case of this phase timed out"


@dataclass
class PhaseSpec:
    """What to run: a list of cases, their seeds, whether to time them (every timed
    output is checked, in every mode that times)."""

    name: str
    seeds: str
    cases: list[dict[str, Any]]
    timed: bool
    timeout: float
    profile: bool = False  # after each case's checked first call, profile a few calls


class Progress:
    """Callbacks for live output; the default does nothing."""

    def phase_start(self, spec: PhaseSpec) -> None: ...
    def case_start(self, spec: PhaseSpec, index: int, case: dict[str, Any]) -> None: ...
    def case_done(self, spec: PhaseSpec, result: CaseResult) -> None: ...
    def call_done(self) -> None:
        """One more call of the current case (warm-up or timed); called between calls, so
        an implementation must stay cheap (LiveProgress redraws at most every 0.25 s)."""


def run_cases(spec: PhaseSpec, progress: Progress, run_one: Callable[[int, dict], CaseResult],
              after: Callable[[CaseResult], str], clock: Callable[[], float]) -> list[CaseResult]:
    """Each case of `spec` in turn, between its progress callbacks: `run_one(index, case)`
    gives its result, whose wall time is set here; after a timed-out case, or once
    `after(result)` names a reason, the cases left are skipped with that reason."""
    results: list[CaseResult] = []
    stop = ""
    for index, case in enumerate(spec.cases):
        progress.case_start(spec, index, case)
        if stop:
            result = CaseResult(index, case, Status.SKIPPED, stop)
        else:
            started = clock()
            result = run_one(index, case)
            result.wall_seconds = clock() - started
            reason = after(result)
            stop = AFTER_TIMEOUT if result.status == Status.TIMED_OUT else reason
        results.append(result)
        progress.case_done(spec, result)
    return results
