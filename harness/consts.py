"""Statuses and exit codes: the words and numbers every part of the harness shares."""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Status(StrEnum):
    """The verdict of a case (and of a run: its worst case)."""

    PASSED = "passed"
    FAILED = "failed"  # wrong output
    ERROR = "error"  # an exception in the submission (load or call)
    COMPILE_ERROR = "compile error"
    NEEDS_GPU = "needs a GPU"
    CANNOT_RUN = "cannot run here"  # needs what this machine lacks: ROCm, a B200, a package
    REJECTED = "rejected"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    CUDA_ERROR = "CUDA error"
    SKIPPED = "skipped"


class ExitCode(IntEnum):
    """What `runner.py` returns to the shell (the README's table)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    CRASHED = 3
    REJECTED = 4
    INTERNAL = 5


# From best to worst: a run's status is the worst of its cases'.
SEVERITY = [Status.PASSED, Status.SKIPPED, Status.FAILED, Status.ERROR, Status.COMPILE_ERROR,
            Status.NEEDS_GPU, Status.CANNOT_RUN, Status.REJECTED, Status.CUDA_ERROR, Status.TIMED_OUT,
            Status.CRASHED]

EXIT_BY_STATUS = {
    Status.PASSED: ExitCode.OK, Status.SKIPPED: ExitCode.FAILED, Status.FAILED: ExitCode.FAILED,
    Status.ERROR: ExitCode.FAILED, Status.COMPILE_ERROR: ExitCode.FAILED,
    Status.NEEDS_GPU: ExitCode.FAILED, Status.CANNOT_RUN: ExitCode.FAILED,
    Status.REJECTED: ExitCode.REJECTED,
    Status.CRASHED: ExitCode.CRASHED, Status.TIMED_OUT: ExitCode.CRASHED,
    Status.CUDA_ERROR: ExitCode.CRASHED,
}


# Kinds of load error that judged nothing of the submission: never recorded against it.
WORKER_START = "worker_start"  # the worker could not start, or ended before the import
TASK_NEEDS = "task_needs"  # the task's own code needs what this machine lacks


class Mark(StrEnum):
    """What the database says of a submission: an organiser may mark it hacked."""

    OK = "ok"
    SUSPICIOUS = "suspicious"  # flagged by the screen or an integrity check
    HACKED = "hacked"  # never ranked
    PENDING = "rejudging"  # a rejudging's new result, not applied yet: never ranked
    SUPERSEDED = "superseded"  # replaced by an applied rejudging's result: never ranked


class JobState(StrEnum):
    """Where one submission of a batch is."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


# The static screen's severities, and the second opinion's (kernelguard: harness/loading/
# guard.py); `integrity.refuse_ranking_on` names what counts from either.
SCREEN_SEVERITIES = ("hard", "flag", "info")
GUARD = "kernelguard"
GUARD_SEVERITIES = ("critical", "high", "medium", "low")
COUNTABLE = (*SCREEN_SEVERITIES, *(f"{GUARD}:{s}" for s in GUARD_SEVERITIES))
