"""What a phase runs, and the callbacks for live progress (no torch here: light imports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.results.document import CaseResult


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
