"""A request checked before any work: the submission read, its task and device resolved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.loading.cases import parse_case
from harness.loading.directives import Directives, parse_directives
from harness.loading.task_folder import Task, given_by_name, load_task
from harness.options import MODES, UNRECORDED_MODES, RunOptions

if TYPE_CHECKING:
    from harness.judging.measure.devices import DeviceInfo


class UsageError(ValueError):
    """A mistake in how the harness was called: a message and exit code 2."""


@dataclass
class Prepared:
    """A request checked and resolved: the task, the source, the device."""

    request: RunOptions
    task: Task
    source: str
    directives: Directives
    device: DeviceInfo
    warnings: list[str]


@dataclass
class Checked:
    """A request whose mistakes are ruled out: the source read, its directives, the task
    loaded; warnings about it so far."""

    source: str
    directives: Directives
    task: Task
    warnings: list[str]


def prepare(request: RunOptions) -> Prepared:
    """Resolve the task (flag or directive) and device; raise UsageError on mistakes."""
    from harness.judging.measure.devices import pick_device

    checked = check_request(request)
    device = pick_device(request.device)
    warnings, directives = checked.warnings, checked.directives
    if directives.gpus and device.kind == "cuda" and not any(
        g.upper() in device.name.upper() for g in directives.gpus
    ):
        warnings.append(f"the submission targets {', '.join(directives.gpus)}; "
                        f"this run is on {device.name}")
    return Prepared(request, checked.task, checked.source, directives, device, warnings)


def check_request(request: RunOptions) -> Checked:
    """The request's mistakes (no such file, which task, a task named twice, a mode, a
    repeat or a case string that cannot be), as a UsageError, TaskError or CaseError;
    without torch, so that a mistake is told before any worker starts."""
    path = Path(request.file)
    if not path.is_file():
        raise UsageError(f"no such submission file: {path}")
    try:
        source = path.read_text()
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not a text file: {exc}") from exc
    directives = parse_directives(source)
    name = request.task or directives.leaderboard
    if name is None:
        raise UsageError(
            f"which task? pass --task NAME, or start {path.name} with "
            "'#!POPCORN leaderboard NAME'"
        )
    task = load_task(name)
    warnings = []
    declared = directives.leaderboard
    if request.task and declared and declared != task.name:
        # A task name that disagrees is a mistake; a folder's path is a choice (a public
        # folder named otherwise than its leaderboard, as the public evaluator runs it).
        if given_by_name(request.task, task.root):
            raise UsageError(f"{path.name} says '#!POPCORN leaderboard {declared}' but --task "
                             f"is {request.task!r}: remove one of them")
        warnings.append(f"{path.name} says '#!POPCORN leaderboard {declared}'; it runs on the "
                        f"task folder {task.root} (task {task.name}) that --task names")
    if request.mode not in MODES:
        raise UsageError(f"unknown mode {request.mode!r}: use one of {', '.join(MODES)}")
    if request.record and request.mode in UNRECORDED_MODES:
        raise UsageError(f"--mode {request.mode} records nothing: leave out --record")
    if not isinstance(request.repeat, int) or request.repeat < 1:
        raise UsageError(f"--repeat takes a whole number of runs, 1 or more, not {request.repeat!r}")
    if request.repeat > 1 and request.mode != "benchmark":
        raise UsageError(f"--repeat runs benchmark mode only, not {request.mode}: a leaderboard "
                         "run is ranked on its own (the board takes the median of a program's "
                         "evaluations), and test and profile runs time nothing to compare")
    for text in request.cases:
        parse_case(text)  # a malformed case string is a usage error, found before any work
    require_benchmarks(task, request)
    return Checked(source, directives, task, warnings)


def require_benchmarks(task: Task, request: RunOptions) -> None:
    """A timed mode needs cases to time: the request's own, else the task's benchmarks."""
    if request.mode in ("benchmark", "leaderboard", "profile") and not request.cases \
            and not task.benchmarks:
        raise UsageError(f"task {task.name} has no benchmarks to time")
