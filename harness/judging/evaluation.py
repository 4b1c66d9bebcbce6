"""One evaluation of one submission: read it, screen it, stage the task, run the judge.

No database and no printing here: `submit.py` records and `report.py` prints.
"""

from __future__ import annotations

import ast
import hashlib
import os
import platform
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from harness import __version__, bytecode
from harness.consts import Status
from harness.judging import needs
from harness.judging.foreign import MARK, NOT_APPLIED, run_foreign
from harness.judging.judge import Entry, Judge, PhaseSpec, Progress
from harness.judging.measure import gpu_share
from harness.judging.measure.devices import DeviceInfo
from harness.judging.needs import TaskNeeds
from harness.judging.preparation import Prepared, require_benchmarks
from harness.judging.ranks import ranked
from harness.judging.sandbox.containment import expected_containment, refusals
from harness.judging.sandbox.leftovers import make_folder, sweep_once
from harness.judging.sandbox.procfs import start_ticks
from harness.judging.seeds import new_run_nonce, run_key
from harness.judging.startup import compile_cache
from harness.judging.startup.head_start import HeadStart
from harness.judging.verdicts import load_error_verdict
from harness.loading.cases import parse_case
from harness.loading.guard import second_opinion
from harness.loading.screen import screen
from harness.loading.task_folder import Reference, ReferenceImportError, Task, import_reference
from harness.options import RunOptions
from harness.results.document import Evaluation
from harness.settings import Settings


def phase_specs(prepared: Prepared, settings: Settings) -> list[PhaseSpec]:
    """The phases a mode runs, with the task's (or the overridden) timeouts."""
    task, request = prepared.task, prepared.request
    override = [parse_case(c) for c in request.cases]

    def timeout(phase: str) -> float:
        return request.timeout or task.timeout(phase, settings.default_timeout)

    tests = override if override and request.mode == "test" else task.tests
    benchmarks = override if override and request.mode != "test" else task.benchmarks
    require_benchmarks(task, request)
    if request.mode == "test":
        return [PhaseSpec("test", "public", tests, False, timeout("test"))]
    if request.mode == "benchmark":
        return [PhaseSpec("benchmark", "public", benchmarks, True, timeout("benchmark"))]
    if request.mode == "profile":
        return [PhaseSpec("profile", "public", benchmarks, False, timeout("benchmark"),
                          profile=True)]
    specs = []
    for seeds in ("public", "secret"):
        specs.append(PhaseSpec("test", seeds, tests, False, timeout("test")))
        specs.append(PhaseSpec("benchmark", seeds, benchmarks, True, timeout("ranked")))
    return specs


def _run_secret(request: RunOptions, evaluation: Evaluation) -> bytes | None:
    """The key of this run's secret seeds (seeds.run_key), its nonce recorded in the document
    (`harness.secret_nonce`); None without a leaderboard secret."""
    if request.secret is None:
        return None
    nonce = request.secret_nonce or new_run_nonce()
    evaluation.harness["secret_nonce"] = nonce
    return run_key(request.secret, nonce)


def evaluate(prepared: Prepared, settings: Settings, progress: Progress | None = None,
             head: HeadStart | None = None) -> Evaluation:
    """Run every phase of the request's mode and return what was learned.

    `head`: the run's folders and a worker started before the judge imported torch
    (`HeadStart.begin`); the caller closes it afterwards."""
    request, task, device = prepared.request, prepared.task, prepared.device
    settings = settings.for_device(device.kind)
    started = time.monotonic()
    sweep_once()  # what a killed run left: its worker's scratch, its run and shm folders
    evaluation = _new_evaluation(prepared, settings)
    specs = phase_specs(prepared, settings)
    evaluation.load_error = _syntax_error(prepared.source, Path(request.file).name)
    ranks = needs.ranks(task.multi_gpu, [c for s in specs for c in s.cases], device.kind,
                        _gpu_count(device.kind))
    if ranks is not None and evaluation.load_error is None:
        evaluation.load_error = TaskNeeds(ranks, f"{task.root}/task.yml: multi_gpu: true").verdict()
    if evaluation.load_error is not None:
        return _finish(evaluation, started)
    # A folder with its own evaluator runs that instead, a multi-GPU task's ranks start
    # their own: this worker is stopped at once (no idle GPU context beside the run).
    early = (head.take("" if task.own_evaluator or task.multi_gpu else device.kind,
                       prepared.source) if head is not None else None)
    evaluation.harness["head_start"] = early is not None  # False too after a syntax error
    # how that worker started: a fork of this judge (sandbox/forked.py) or a new interpreter
    evaluation.harness["forked_worker"] = early is not None and early.forked
    if task.own_evaluator:
        return _finish(_own_evaluator(prepared, settings, specs, evaluation, progress), started)
    work = head.work if early is not None else make_folder("run")
    cache, warning = _compile_cache(prepared, settings, head if early is not None else None,
                                    evaluation.harness["containment"]["level"] == "full")
    evaluation.harness["compile_cache"] = cache.to_dict() if cache else {"mode": "private"}
    evaluation.warnings += [warning] if warning else []
    try:
        judge_dir = task.stage(work / "judge")
        # The text read, hashed and recorded is the text that runs (not a second read).
        worker_dir = task.stage(work / "worker", Path(request.file), for_worker=True,
                                text=prepared.source)
        reference = _reference(task, judge_dir, device)
        entry = Entry(Path(request.file), worker_dir, _run_secret(request, evaluation),
                      started=early,
                      shm_root=head.shm_root if early is not None else None,
                      compile_cache=cache)
        if task.multi_gpu:  # a judge per rank, per case (ranks/ranked.py)
            _run_ranked(ranked.RankedRun(task, judge_dir, worker_dir, reference, device,
                        settings, entry, work, progress or Progress()), specs, evaluation)
        else:
            judge = Judge(task, reference, device, settings, entry, progress)
            early = None  # the judge's now: judge.close() stops it
            _run_judge(judge, specs, evaluation)
    except TaskNeeds as exc:  # this machine lacks what the task's own code needs
        evaluation.load_error = exc.verdict()
    finally:
        if early is not None:  # the task could not be staged or imported
            early.close()
        shutil.rmtree(work, ignore_errors=True)
        bytecode.forget(work)  # the staged task's bytecode, if a cache holds it
        if cache is not None:  # the workers are gone: bound the folder, let go of it
            evaluation.warnings += filter(None, [compile_cache.tidy(settings.worker, cache)])
    return _finish(evaluation, started)


def _new_evaluation(prepared: Prepared, settings: Settings) -> Evaluation:
    """The result as it stands before anything runs: the task, the submission, the device,
    the static screen, the harness."""
    request, task, device = prepared.request, prepared.task, prepared.device
    return Evaluation(
        task={"name": task.name, "path": str(task.root), "content_hash": task.content_hash,
              "ranking_by": task.ranking_by},
        submission={"file": str(request.file), "name": Path(request.file).name,
                    "sha256": hashlib.sha256(prepared.source.encode()).hexdigest(),
                    "code": prepared.source,
                    "directives": {"leaderboard": prepared.directives.leaderboard,
                                   "gpus": prepared.directives.gpus}},
        device=device.to_dict(),
        mode=request.mode,
        started=_now(),
        screen=[f.to_dict() for f in screen(prepared.source)] + second_opinion(prepared.source),
        warnings=list(prepared.warnings),
        harness={"version": __version__, "python": platform.python_version(),
                 "platform": platform.platform(),
                 "containment": expected_containment(settings.worker, device.kind).to_dict(),
                 "head_start": False, "process_age_s": process_age(request.started_ticks)},
    )


def _reference(task: Task, staged: Path, device: DeviceInfo) -> Reference:
    """The task's reference, imported from its staged copy; `TaskNeeds` where its import
    failed for want of what this machine lacks (a package, a GPU), else `TaskError`."""
    try:
        return import_reference(task, staged)
    except ReferenceImportError as exc:
        cause = exc.__cause__ or exc
        need = needs.of_exception(cause, device.kind, device.capability, exc.source)
        if need is None:
            raise
        raise TaskNeeds(need, f"{task.root}: reference.py failed to import: "
                              f"{needs.brief(cause)}") from exc


def _syntax_error(source: str, name: str) -> dict | None:
    """The verdict of a submission Python cannot parse, None for one it can."""
    try:
        ast.parse(source, filename=name)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = f"\n    {exc.text.rstrip()}" if exc.text else ""
        return load_error_verdict("syntax_error", f"{exc.msg} ({where}){text}")
    return None


def _gpu_count(kind: str) -> int:
    """The GPUs this run may use (none on the CPU)."""
    if kind != "cuda":
        return 0
    import torch

    return torch.cuda.device_count()


def _run_judge(judge: Judge, specs: list[PhaseSpec], evaluation: Evaluation) -> None:
    """Start the judge's worker, run the phases (until one times out), close the judge, and
    add what it learned to `evaluation`."""
    try:
        judge_started = time.monotonic()
        first = next((spec.cases[0] for spec in specs if spec.cases), None)
        ready = judge.start(specs[0].timeout, warm_case=first)
        evaluation.startup_seconds = time.monotonic() - judge_started
        if ready:
            _run_phases(judge, specs, evaluation)
        if evaluation.load_error is None:
            evaluation.load_error = judge.load_error if not evaluation.phases else None
    finally:
        judge.close()
    evaluation.worker_output = judge.worker_output
    evaluation.secret_output = judge.secret_output
    if judge.memory_cap is not None:
        evaluation.harness["memory_cap_bytes"] = judge.memory_cap
    if judge.cpu_heap:
        evaluation.harness["cpu_heap_bytes"] = judge.cpu_heap
    evaluation.warnings += judge.warnings
    evaluation.gpu_shared = judge.gpu_watch.summary()
    if evaluation.gpu_shared:
        evaluation.warnings.append(gpu_share.describe(evaluation.gpu_shared))
    elif judge.gpu_watch.unreadable:
        evaluation.warnings.append("which other processes use the GPU could not be read "
                                   "(NVML, nvidia-smi): a shared GPU would go unnoticed")
    _note_containment(evaluation, judge.containment, judge.worker_output)
    _note_strays(evaluation, judge.stray_pids)
    if judge.base_calibration is not None:
        evaluation.calibration = vars(judge.base_calibration)


def _run_ranked(run: ranked.RankedRun, specs: list[PhaseSpec], evaluation: Evaluation) -> None:
    """A multi-GPU task's phases, each case on its ranks, until one times out; what the
    ranks' judges learned, into `evaluation`."""
    evaluation.startup_seconds = 0.0  # each case starts its own workers
    _run_phases(run, specs, evaluation)
    evaluation.worker_output = run.output
    evaluation.warnings += run.warnings
    _note_containment(evaluation, run.containment, run.output)
    _note_strays(evaluation, run.stray_pids)


def _note_strays(evaluation: Evaluation, pids: list[int]) -> None:
    if pids:
        evaluation.warnings.append(f"killed {len(pids)} process(es) the submission left running")


def _run_phases(judge: Judge | ranked.RankedRun, specs: list[PhaseSpec],
                evaluation: Evaluation) -> None:
    """Run the phases in turn (`judge`: one GPU's judge, or a multi-GPU task's ranked run),
    until one times out or the task's own code shows that this machine lacks what it needs
    (the run's verdict then: never recorded)."""
    for spec in specs:
        try:
            phase = judge.run_phase(spec)
        except TaskNeeds as exc:
            evaluation.load_error = exc.verdict()
            return
        evaluation.phases.append(phase)
        if any(c.status == Status.TIMED_OUT for c in phase.cases):
            evaluation.warnings.append("later phases were not run: this one timed out")
            return


def _compile_cache(prepared: Prepared, settings: Settings, head: HeadStart | None,
                   contained: bool) -> tuple[compile_cache.CompileCache | None, str | None]:
    """The submission's compiler-cache folder (compile_cache.py), held for the run: the
    started worker's, or one made now; none for a ranked or uncontained run."""
    if head is not None:
        return head.take_cache()
    return compile_cache.for_run(settings.worker, prepared.request.mode, contained,
                                 prepared.source)


def _own_evaluator(prepared: Prepared, settings: Settings, specs: list[PhaseSpec],
                   evaluation: Evaluation, progress: Progress | None) -> Evaluation:
    """A folder whose own eval.py judges: run it contained, mark the result as such."""
    task = prepared.task
    started = time.monotonic()
    try:
        evaluation.phases, tail, report, cap = run_foreign(prepared, specs, settings, progress)
    except TaskNeeds as exc:  # the evaluator failed for want of what this machine lacks
        evaluation.load_error = exc.verdict()
        return evaluation
    if cap:
        evaluation.harness["memory_cap_bytes"] = cap
    evaluation.startup_seconds = 0.0
    evaluation.worker_output = {"stdout": tail, "stderr": ""}
    _note_containment(evaluation, report, evaluation.worker_output)
    evaluation.harness["evaluator"] = {"kind": MARK, "main": task.main,
                                       "not_applied": list(NOT_APPLIED),
                                       "wall_seconds": time.monotonic() - started}
    evaluation.warnings.append(
        f"judged by {MARK} ({task.main}), run in the contained worker as the public bot runs "
        "it; the harness's own checks were not applied: " + "; ".join(NOT_APPLIED))
    return evaluation


def _note_containment(evaluation: Evaluation, report, output: dict[str, str]) -> None:
    """Record what the sandbox enforced; warn when it is partial, and say what it refused."""
    if report is not None:
        evaluation.harness["containment"] = report.to_dict()
        if report.level != "full":
            evaluation.warnings.append(report.summary)
    messages = [c.message for p in evaluation.phases for c in p.cases]
    messages.append(str((evaluation.load_error or {}).get("message", "")))
    refused = refusals(output.get("stderr", ""), output.get("stdout", ""), *messages)
    if refused:
        evaluation.warnings.append("the sandbox refused: " + "; ".join(refused))


def _finish(evaluation: Evaluation, started: float) -> Evaluation:
    evaluation.ended = _now()
    evaluation.wall_seconds = time.monotonic() - started
    return evaluation


def process_age(ticks: int | None = None) -> float | None:
    """Seconds since this process started (Linux: its start time in /proc/self/stat, to a
    clock tick), or since `ticks` (the start of the command that asked for the run, where
    the judge is a fork made for it), or None where that cannot be read. At the
    evaluation's start it is what the command spent before it: the interpreter, the
    imports, the judge's start, the task's loading."""
    if ticks is None:
        ticks = start_ticks()  # field 22 of /proc/self/stat
    if ticks is None:
        return None
    try:
        return round(time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, AttributeError):  # no such clock or setting here
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
