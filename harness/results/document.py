"""Results of an evaluation, and the versioned JSON document written by `--json`."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.consts import EXIT_BY_STATUS, SEVERITY, ExitCode, Status
from harness.durations import micros

SCHEMA = "kernel-harness/result"
SCHEMA_VERSION = 1

@dataclass
class CaseResult:
    """One case of one phase."""

    index: int
    case: dict[str, Any]
    status: str
    message: str = ""
    stats: dict[str, float] | None = None
    score_ns: float | None = None
    checked_calls: int = 0
    integrity: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0  # the judge's time on this case: inputs, warm-up, timing, checks
    wall_parts: dict[str, float] = field(default_factory=dict)  # seconds per step of it
    host_launch_ns: float | None = None  # the worker's clock around one call (median of probes)
    profile: dict[str, Any] | None = None  # --mode profile: kernels or operators of a few calls
    # timed cases: "ns", "host_ns" per scored sample; "trace" (timing.trace_calls): a record
    # per timed sample, probes too (harness.judging.measure.call_trace)
    samples: dict[str, list[Any]] | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED


@dataclass
class PhaseResult:
    """The cases of `tests` or `benchmarks`, run with public or secret seeds."""

    name: str  # "test", "benchmark" or "profile"
    seeds: str  # "public" or "secret"
    cases: list[CaseResult] = field(default_factory=list)
    score_ns: float | None = None
    wall_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)


@dataclass
class Evaluation:
    """Everything one `submit` learned about one submission."""

    task: dict[str, Any]
    submission: dict[str, Any]
    device: dict[str, Any]
    mode: str
    started: str
    ended: str = ""
    phases: list[PhaseResult] = field(default_factory=list)
    load_error: dict[str, Any] | None = None
    screen: list[dict[str, Any]] = field(default_factory=list)
    worker_output: dict[str, str] = field(default_factory=dict)  # before the secret phases
    secret_output: dict[str, str] = field(default_factory=dict)  # during them: organisers only
    warnings: list[str] = field(default_factory=list)
    harness: dict[str, Any] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    startup_seconds: float = 0.0  # worker start, harness calibration, submission import
    record: dict[str, Any] = field(default_factory=dict)
    gpu_shared: dict[str, Any] | None = None  # other processes seen on the GPU (gpu_share.py)

    @property
    def status(self) -> str:
        """The worst status seen, or `passed`."""
        if self.load_error is not None:
            return self.load_error["status"]
        statuses = [c.status for p in self.phases for c in p.cases]
        if not statuses:
            return Status.SKIPPED
        return max(statuses, key=status_severity)

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def exit_code(self) -> int:
        return int(EXIT_BY_STATUS.get(self.status, ExitCode.FAILED))

    def phase(self, name: str, seeds: str = "public") -> PhaseResult | None:
        return next((p for p in self.phases if p.name == name and p.seeds == seeds), None)

    @property
    def score_ns(self) -> float | None:
        """The ranked score: the secret benchmark run's, else the public one's."""
        for seeds in ("secret", "public"):
            phase = self.phase("benchmark", seeds)
            if phase is not None and phase.score_ns is not None:
                return phase.score_ns
        return None

    def to_dict(self) -> dict[str, Any]:
        doc = {"schema": SCHEMA, "version": SCHEMA_VERSION}
        doc.update(asdict(self))
        doc.update(status=self.status, passed=self.passed, exit_code=self.exit_code,
                   score_ns=self.score_ns)
        return doc


def status_severity(status: str) -> int:
    """A status's place from best (0, passed) to worst."""
    return SEVERITY.index(status) if status in SEVERITY else len(SEVERITY)


def case_flags(doc: dict[str, Any]) -> list[str]:
    """Every integrity flag of every case of a result document, in order."""
    return [f for p in doc.get("phases", []) for c in p["cases"] for f in c["flags"]]


_CHECK_NAMES = {"clocks": "the two clocks on the probes",
                "scored_clocks": "the two clocks on the scored samples",
                "calibration_disturbed": "a calibration above the one before the import"}


def case_notes(integrity: dict[str, Any] | None) -> list[str]:
    """The notes a report prints under a case (from its `integrity` record): long samples
    in its mean, and the attempts timed again after a flag that a slow spell of the host
    can raise (`sampling.NOISE_RETRIES`), and the flags excused because another process
    used the GPU (`integrity.gpu_shared`). Each says what happened first and why after
    (a terminal prints the first part: harness.views.brief)."""
    integrity = integrity or {}
    notes = []
    long = (integrity.get("long_samples") or {}).get("note")
    if long:
        notes.append(long)
    shared = integrity.get("gpu_shared") or {}
    for flag in shared.get("flags") or []:
        n = shared.get("processes", 0)
        notes.append(f"GPU shared (with {n} other process{'es' if n != 1 else ''} while this "
                     f"case was timed), so not held against the submission: {flag}")
    for k, attempt in enumerate(integrity.get("retried") or [], start=1):
        checks = ", ".join(_CHECK_NAMES.get(c, c) for c in attempt.get("flagged_by", []))
        score = attempt.get("score_ns")
        notes.append(f"attempt {k} was flagged by {checks}"
                     + (f" (it read {micros(score)})" if score else "")
                     + " and timed again: the last attempt's time stands; it keeps its own "
                     "flags and any of an earlier attempt; each attempt has a fresh "
                     "calibration and fresh inputs, and work outside the timed region shows "
                     "on every attempt, where a slow spell of the host does not")
    return notes


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write atomically: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=2, default=str)
    os.replace(tmp, path)


def document_to_evaluation(doc: dict[str, Any]) -> Evaluation:
    """Rebuild an Evaluation from its JSON document, checked against the schema first
    (harness/results/schema.py: a `DocumentError` names the field that is wrong)."""
    from harness.results.schema import validate

    validate(doc)
    fields = {k: doc[k] for k in Evaluation.__dataclass_fields__ if k in doc}
    fields["phases"] = [
        PhaseResult(p["name"], p["seeds"], [_case(c) for c in p["cases"]], p["score_ns"],
                    p.get("wall_seconds", 0.0))
        for p in doc["phases"]
    ]
    return Evaluation(**fields)


def _case(data: dict[str, Any]) -> CaseResult:
    """A case of a document; keys a later harness added are left out (as at the top level),
    so that a document written by a newer harness can still be recorded by this one."""
    return CaseResult(**{k: v for k, v in data.items() if k in CaseResult.__dataclass_fields__})
