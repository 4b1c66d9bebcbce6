"""`runner.py batch`: many submissions, one evaluation per device at a time.

Each evaluation runs in its own judge process (`python -m harness.execution.judge_process`) pinned to one
GPU with CUDA_VISIBLE_DEVICES (two evaluations never share a GPU), or to one of `--jobs`
CPU slots. With `--backend ray`, each evaluation is a Ray task asking for one GPU (or one
CPU), running the same judge process on its node. Either way the driver records every
result in the database and prints the ranked table at the end.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from harness.consts import TASK_NEEDS, ExitCode, JobState, Status
from harness.durations import readable
from harness.execution.backends import make_backend
from harness.execution.protocol import JudgeRequest, Result, Unjudged
from harness.judging import PhaseSpec, Progress, recording_refusal
from harness.loading.task_folder import TaskError, load_task
from harness.options import RunOptions
from harness.results.admission import Policy, admit
from harness.results.document import CaseResult, case_flags
from harness.results.recording import record_evaluation
from harness.settings import Settings
from harness.storage.store import Store, resolve_db
from harness.views.report import print_ranked


@dataclass
class Job:
    """One submission of the batch and what became of it."""

    file: Path
    task: str = ""
    state: JobState = JobState.QUEUED
    where: str = ""
    started: float = 0.0
    wall: float = 0.0
    doc: dict[str, Any] | None = None
    error: str = ""
    submission_id: int | None = None
    used: list[str] = field(default_factory=list)
    record_seconds: float = 0.0  # the driver's recording of its result
    progress: str = ""  # while it runs on a local slot: its phase and the cases done

    @property
    def status(self) -> str:
        """Its verdict; "harness error" where it has none, or where the harness failed it
        (a worker that could not start: not recorded); a task this machine cannot run keeps
        its document's verdict ("needs a GPU", "cannot run here"), recorded or not."""
        if self.doc is not None and (self.doc.get("load_error") or {}).get("kind") == TASK_NEEDS:
            return self.doc["status"]
        if self.error:
            return "harness error"
        return self.doc["status"] if self.doc else ""

    @property
    def score_ns(self) -> float | None:
        """The job's score, None without one."""
        return self.doc.get("score_ns") if self.doc else None

    @property
    def status_markup(self) -> str:
        """The job's status in rich markup: green when it passed, red otherwise."""
        colour = "green" if self.status == Status.PASSED else "red"
        return f"[{colour}]{escape(self.status)}[/]"


class _JobProgress(Progress):
    """A running job's row: `tests 2/4` (its phase, the cases done of its cases)."""

    def __init__(self, job: Job, on_change: Callable[[], None]) -> None:
        self.job, self.on_change = job, on_change
        self.done = 0

    def phase_start(self, spec: PhaseSpec) -> None:
        self.done = 0
        self._show(spec)

    def case_done(self, spec: PhaseSpec, result: CaseResult) -> None:
        self.done += 1
        self._show(spec)

    def _show(self, spec: PhaseSpec) -> None:
        self.job.progress = f"{spec.name} {self.done}/{len(spec.cases)}"
        self.on_change()


def collect(paths: list[Path]) -> list[Path]:
    """Submission files named directly or found (recursively) in folders."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        elif path.suffix == ".py":
            files.append(path)
    return files


class Batch:
    """Runs the jobs on slots, records results, keeps the live view current."""

    def __init__(self, files: list[Path], options: RunOptions, settings: Settings) -> None:
        self.options = options
        self.mode = options.mode
        self.jobs = [Job(f, options.task or _directive_task(f)) for f in files]
        missing = [j.file.name for j in self.jobs if not j.task]
        if missing:
            raise ValueError(f"no task for {', '.join(missing)}: pass --task or start each file "
                             "with '#!POPCORN leaderboard NAME'")
        self.tasks = {name: load_task(name) for name in sorted({j.task for j in self.jobs})}
        self.settings = settings
        self.store = Store(resolve_db(options.db, settings.store_path))
        self.boards = {name: self.store.leaderboard(t.name, t.content_hash)
                       for name, t in self.tasks.items()}
        self.device, self.timeout, self.user = options.device, options.timeout, options.user
        self.lock = threading.Lock()
        self.policy = Policy.of(settings, options.allow_partial_containment,
                                options.allow_shared_gpu)

    def request(self, job: Job) -> JudgeRequest:
        """The job's evaluation, as a backend runs it."""
        board, task = self.boards[job.task], self.tasks[job.task]
        secret = board.secret if self.mode == "leaderboard" else None
        return JudgeRequest.of(self.options, job.file.resolve(), task, self.settings,
                               secret=secret)

    def slots(self, job: Job) -> int:
        """The slots `job` takes at once: a multi-GPU task's largest case's ranks (one GPU,
        or one CPU slot, each), else one."""
        from harness.execution.slot_queue import ranks_of

        return ranks_of(self.tasks[job.task], self.options.cases)

    def progress(self, job: Job, on_change: Callable[[], None]) -> Progress:
        """The live progress of `job` as its judge process relays it: its phase and the
        cases done, shown in its row."""
        return _JobProgress(job, on_change)

    def finish(self, job: Job, result: Result) -> None:
        """Record one result (in the driver: one writer for the whole batch)."""
        with self.lock:
            job.wall = time.time() - job.started
            job.state = JobState.DONE
            if isinstance(result, Unjudged):
                job.error = f"not judged: {result.reason}"
                return
            job.doc = doc = result.document
            # a judge on another node (Ray) may run without the sandbox, or share its GPU
            decision = admit(doc, self.policy)
            if not decision.recorded:
                job.error = decision.reason
                return
            ev = result.as_evaluation()
            who = self.user or job.file.stem
            began = time.perf_counter()
            job.submission_id = record_evaluation(self.store, self.boards[job.task], who, ev,
                                                  decision)
            job.record_seconds = time.perf_counter() - began

    def line(self, job: Job) -> str:
        """One finished job as a line (a log's view of the live table's row)."""
        score = f" {readable(job.score_ns)}" if job.score_ns else ""
        where = f" on {job.where}" if job.where else ""
        return (f"{escape(job.file.name)} ({job.task}): {job.status_markup}{score}{where}, "
                f"{job.wall:.1f} s")

    def view(self) -> Table:
        """The live table: a row per job, its state, and its result once done."""
        tasks = ", ".join(self.tasks)
        table = Table(title=f"Batch: {len(self.jobs)} submissions to {tasks} ({self.mode})",
                      title_justify="left")
        for col in ("submission", "task", "state", "where", "result", "score", "time"):
            table.add_column(col)
        for job in self.jobs:
            score = readable(job.score_ns) if job.doc else ""
            wall = f"{job.wall:.1f} s" if job.state == JobState.DONE else (
                f"{time.time() - job.started:.0f} s" if job.state == JobState.RUNNING else "")
            result = job.status_markup if job.state == JobState.DONE else (
                escape(job.progress) if job.state == JobState.RUNNING else "")
            table.add_row(escape(str(job.file.name)), job.task, job.state, job.where, result,
                          score, wall)
        return table


def _print_remarks(console: Console, batch: Batch) -> None:
    """`--verbose`: each submission's warnings, flags and notes, whole."""
    from harness.views.brief import Teller
    from harness.views.report import case_remarks

    whole = Teller(verbose=True)
    for job in batch.jobs:
        if not job.doc:
            continue
        lines = [f"[yellow]warning:[/] {escape(w)}" for w in job.doc.get("warnings") or []]
        lines += [line for p in job.doc.get("phases") or [] for c in p["cases"]
                  for line in case_remarks(p["name"], c["index"], c.get("flags") or [],
                                           c.get("integrity"), whole)]
        if lines:
            console.print(f"[bold]{escape(job.file.name)}[/]")
            for line in lines:
                console.print(f"  {line}")


def _directive_task(path: Path) -> str:
    from harness.loading.directives import parse_directives

    try:
        return parse_directives(path.read_text()).leaderboard or ""
    except (OSError, UnicodeDecodeError):
        return ""


def _batch_device(options: RunOptions) -> str:
    """The device kind the batch's judges will pick (as harness.judging.measure.devices does)."""
    if options.device:
        return options.device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def run_batch(console: Console, paths: list[Path], options: RunOptions, jobs: int | None,
              backend: str, address: str | None) -> int:
    """The `batch` command; exit 0 when every submission passed."""
    files = collect(paths)
    if not files:
        console.print("[red]error:[/] no submission files found")
        return ExitCode.USAGE
    try:
        settings = Settings.load(options.config)
        refused = recording_refusal(settings.worker, options.mode,
                                    options.allow_partial_containment, _batch_device(options))
        if refused:  # before the database is opened
            raise ValueError(refused)
        batch = Batch(files, options, settings)
    except (ValueError, TaskError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    from harness.execution.stopping import stop_on_sigterm

    stop_on_sigterm()
    t0 = time.time()
    _run_live(console, batch, make_backend(backend, address, jobs))
    wall = time.time() - t0
    _print_results(console, batch)
    console.print(f"{len(files)} submissions in {wall:.1f} s ({backend} backend)")
    if options.json_path:
        options.json_path.write_text(json.dumps(_batch_json(batch, options, backend, wall),
                                                indent=2))
    return ExitCode.OK if all(j.status == Status.PASSED for j in batch.jobs) else ExitCode.FAILED


def _run_live(console: Console, batch: Batch, runner: Any) -> None:
    """Run the batch on `runner` (a backend) under a live table; into a pipe or a CI log,
    where the live table shows only at the end, a line per evaluation as it ends."""
    from harness.execution.judge_process import stop_judges

    told: set[int] = set()
    telling = threading.Lock()
    with Live(batch.view(), console=console, refresh_per_second=4, transient=False) as live:
        def on_change() -> None:
            live.update(batch.view())
            if console.is_terminal:
                return
            with telling:
                for i, job in enumerate(batch.jobs):
                    if job.state == JobState.DONE and i not in told:
                        told.add(i)
                        console.print(batch.line(job))

        try:
            runner.run(batch, on_change)
        except BaseException:  # SIGTERM (stopping.py) or Ctrl-C: no judge left running
            stopped = stop_judges()
            console.print(f"[red]stopped:[/] {stopped} running evaluation(s) ended, nothing more "
                          "started; the results recorded so far stay")
            raise
        live.update(batch.view())
    if not console.is_terminal:
        console.line()  # the live table's last render ends without one there


def _print_results(console: Console, batch: Batch) -> None:
    """The jobs' errors (with --verbose, each one's remarks whole), then each task's
    ranking per device kind."""
    for job in batch.jobs:
        if job.error:
            console.print(f"[red]{escape(job.file.name)}:[/] {escape(job.error)}")
    if batch.options.verbose:
        _print_remarks(console, batch)
    from harness.results.ranking import rank

    for name, t in batch.tasks.items():
        kinds = sorted({j.doc["device"]["ranking_kind"] for j in batch.jobs if j.doc and j.task == name})
        for kind in kinds:
            print_ranked(console, rank(batch.store.entries(t.name, t.content_hash), kind),
                         f"{name} on {kind}")


def job_parts(job: Job) -> dict[str, float]:
    """Where a finished job's wall time went (s): `judge` (its judge process outside the
    evaluation: the process's start, its imports, reading the request, writing the
    answer), `startup` (the evaluation's wait for its worker), each phase's cases
    (`test`, `benchmark`, `ranked`, ...), `other` (the rest of the evaluation: loading the
    task and the submission, the screen, the checks between phases), which add up to its
    `wall_seconds`, and `record` (the driver's recording, after that); {} for a job with
    no result document."""
    doc = job.doc
    if not doc or doc.get("wall_seconds") is None:
        return {}
    phases: dict[str, float] = {}
    for phase in doc.get("phases") or []:
        phases[phase["name"]] = phases.get(phase["name"], 0.0) + sum(
            c.get("wall_seconds") or 0.0 for c in phase["cases"])
    evaluation, startup = doc["wall_seconds"], doc.get("startup_seconds") or 0.0
    return {"judge": max(job.wall - evaluation, 0.0), "startup": startup,
            **phases, "other": max(evaluation - startup - sum(phases.values()), 0.0),
            "record": job.record_seconds}


def _batch_json(batch: Batch, options: RunOptions, backend: str, wall: float) -> dict[str, Any]:
    """What `--json` writes: the batch and each job's outcome."""
    return {
        "tasks": list(batch.tasks), "mode": options.mode, "backend": backend, "wall_seconds": wall,
        "results": [{"file": str(j.file), "task": j.task, "status": j.status, "where": j.used,
                     "started": j.started, "wall_seconds": j.wall,
                     "score_ns": j.doc.get("score_ns") if j.doc else None,
                     "submission_id": j.submission_id, "error": j.error,
                     "cases": [[c.get("score_ns") for c in p["cases"]] for p in j.doc["phases"]]
                     if j.doc else [],
                     "flags": case_flags(j.doc) if j.doc else [],
                     "screen": [{"rule": f["rule"], "severity": f["severity"]}
                                for f in j.doc.get("screen", [])] if j.doc else [],
                     "parts": job_parts(j),
                     "device_uuid": j.doc["device"].get("uuid", "") if j.doc else ""}
                    for j in batch.jobs]}
