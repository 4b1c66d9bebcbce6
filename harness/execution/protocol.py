"""The one contract of an evaluation: a request goes in, a typed result comes back.

Every evaluation, whoever asks for it (`submit`, `compare`, `batch`, the server's slots),
ends in one of two answers:

- `Judged`: the submission was evaluated; its result document (and, where it ran in this
  process, the `Evaluation` itself). Whatever the submission did, a verdict is in it.
- `Unjudged`: nothing was learned of the submission, and it was not its doing: the task
  cannot be run, the judge process died, the harness broke. `Failure` says which, and so
  whether running it again can help (`retry`).

A backend (`in_process.judge_here`, `judge_process.run_judge`, a Ray task) takes a
`JudgeRequest` and gives back a `Result`; how long a judge process may run is decided here
once (`wall_limit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.options import RunOptions

if TYPE_CHECKING:
    from harness.loading.task_folder import Task
    from harness.results.document import Evaluation
    from harness.settings import Settings

# What a judge process may take past its phases' own timeouts: its worker's start and the
# import of torch and the task around them.
JUDGE_OVERHEAD_S = 60.0
# The phases each mode runs (leaderboard: test, benchmark, ranked, and the checks between).
PHASES_PER_MODE = {"leaderboard": 4}


class Failure(StrEnum):
    """Why an evaluation was not judged."""

    TASK = "task"        # the task or the request cannot be run: the same every time
    MACHINE = "machine"  # the judge process died, ran past its limit, or found no device
    HARNESS = "harness"  # an exception in the harness: our bug
    STOPPED = "stopped"  # the run was stopped before it ended

    @property
    def retry(self) -> bool:
        """Whether running the same request again may judge it."""
        return self in (Failure.MACHINE, Failure.HARNESS)


@dataclass(frozen=True)
class JudgeRequest:
    """One evaluation to run: its options (file, task, mode, device, limits, settings
    file, the leaderboard secret), the environment that pins it to its GPU or CPU slot,
    and how long its judge process may take in all."""

    options: RunOptions
    env: Mapping[str, str] = field(default_factory=dict)
    wall_limit: float = 3600.0

    @classmethod
    def of(cls, options: RunOptions, file: Path, task: Task, settings: Settings,
           mode: str | None = None, secret: bytes | None = None) -> JudgeRequest:
        """The request to judge `file` on `task` with the caller's `options` (as
        `RunOptions.for_judge` narrows them), in `mode` (the options' by default), with the
        leaderboard's `secret` where ranked, and the wall limit of that task and mode; the
        environment that pins it to a slot is the backend's to add."""
        judged = options.for_judge(file, str(task.root), mode, secret)
        return cls(judged, {}, wall_limit(task, judged.mode, settings, options.timeout))

    def wire(self) -> dict[str, Any]:
        """The options as a judge process reads them on its standard input."""
        return self.options.to_wire()


@dataclass(frozen=True)
class Judged:
    """An evaluation that ended with a result document."""

    document: dict[str, Any]
    evaluation: Evaluation | None = None  # where it ran in this process
    where: str | None = None  # the machine and slot that ran it, where not this one

    def as_evaluation(self) -> Evaluation:
        """The evaluation (read back from the document where it ran elsewhere)."""
        if self.evaluation is not None:
            return self.evaluation
        from harness.results.document import document_to_evaluation

        return document_to_evaluation(self.document)


@dataclass(frozen=True)
class Unjudged:
    """An evaluation that learned nothing of the submission, through no fault of its."""

    failure: Failure
    reason: str
    detail: str = ""  # a traceback, for a harness error
    where: str | None = None

    @property
    def retry(self) -> bool:
        return self.failure.retry

    def to_wire(self) -> dict[str, Any]:
        return {"unjudged": {"failure": str(self.failure), "reason": self.reason,
                             "detail": self.detail}}


Result = Judged | Unjudged


def result_from_wire(data: Mapping[str, Any], where: str | None = None) -> Result:
    """A judge process's answer (a result document, or `Unjudged.to_wire`) as a Result."""
    if "unjudged" in data:
        un = data["unjudged"]
        return Unjudged(Failure(un["failure"]), un["reason"], un.get("detail", ""), where)
    return Judged(dict(data), where=where)


def wall_limit(task: Task, mode: str, settings: Settings, timeout: float | None = None
               ) -> float:
    """How long a judge process may run: each phase of `mode` at the task's longest phase
    timeout (or the user's `timeout`), its worker's start, and the overhead of a process
    that imports torch."""
    per = timeout or max(task.timeout(p, settings.default_timeout)
                         for p in ("test", "benchmark", "ranked"))
    return (PHASES_PER_MODE.get(mode, 1) * per + settings.worker.start_timeout
            + JUDGE_OVERHEAD_S)
