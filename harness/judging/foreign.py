"""A task folder whose own `eval.py` defines the interface (no `custom_kernel` contract).

The folder's evaluator runs as the public bot runs it (`python eval.py MODE CASES` with
`POPCORN_FD`), in a scratch folder with the worker's containment (its environment and
limits), and its `key: value` report becomes the result. The submission and the evaluator
share one process there, so the judge's own checks cannot apply: the result says which,
and such a result never ranks.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from harness.consts import Status
from harness.judging import needs
from harness.judging.needs import TaskNeeds
from harness.judging.phases import PhaseSpec, Progress
from harness.judging.sandbox import landlock
from harness.judging.sandbox.bounds import Quota, kill_user
from harness.judging.sandbox.leftovers import make_folder
from harness.judging.sandbox.memory_cap import gb_to_bytes, whole_process_cap
from harness.judging.sandbox.sandbox import Folders, contain
from harness.judging.seeds import SeedPlan
from harness.loading.popcorn import EvalRun, Launch, run_eval, stage_all
from harness.results.document import CaseResult, PhaseResult
from harness.scores import combine
from harness.settings import Settings

if TYPE_CHECKING:
    from harness.judging.preparation import Prepared

NOT_APPLIED = [
    "fresh inputs every call (the evaluator chooses its inputs)",
    "the check in the judge's own process (the evaluator checks beside the submission)",
    "the two-clock check and the physics floor (the evaluator keeps its own clock)",
    "secret seeds the submission cannot read (the seed reaches the evaluator's process)",
]
MARK = "the task's own evaluator"


def run_foreign(prepared: Prepared, specs: list[PhaseSpec], settings: Settings,
                progress: Progress | None = None,
                ) -> tuple[list[PhaseResult], str, landlock.Report | None, int | None]:
    """Each phase through the task's evaluator, contained as a worker is (on the CPU its
    address space capped from its start: what the judge maps plus the setting, since the
    harness cannot enter it before the submission's import): the phases, the evaluator's
    output, what the sandbox enforced, and the address-space cap (None: none)."""
    task, device, secret = prepared.task, prepared.device.kind, prepared.request.secret
    progress = progress or Progress()
    scratch = make_folder("foreign")
    quota = Quota(scratch, settings.worker.scratch_mb)
    outputs: list[str] = []
    phases: list[PhaseResult] = []
    limits, report = None, None
    try:
        staged = stage_all(task, Path(prepared.request.file), scratch / "task")
        extra = gb_to_bytes(settings.worker.cpu_memory_limit_gb) if device == "cpu" else 0
        env, limits, report = contain(settings.worker, device, Folders(scratch, [staged]),
                                      address_space=whole_process_cap(extra))
        if quota.held:
            report.enforced.append(quota.describe())
        for spec in specs:
            progress.phase_start(spec)
            mode = "test" if not spec.timed else (
                "leaderboard" if spec.seeds == "secret" else "benchmark")
            run_env = dict(env)
            if spec.seeds == "secret" and secret is not None:
                run_env["POPCORN_SEED"] = str(SeedPlan(0, secret, stream="own-evaluator").seed(0))
            run = run_eval(staged, mode, spec.cases, spec.timeout, main=task.main,
                           launch=Launch(run_env, limits.apply))
            outputs.append(f"$ python {task.main} {mode}\n{run.output}")
            phase = to_phase(run, spec, task.ranking_by)
            for case in phase.cases:
                progress.case_done(spec, case)
            if not phase.passed:
                _raise_if_this_machine_lacks(run, task.main, mode, prepared)
                phases.append(phase)
                break
            phases.append(phase)
    finally:
        if limits is not None:
            limits.close()
            kill_user(limits.bound and limits.bound.uid)  # what the evaluator left running
        quota.release()
        shutil.rmtree(scratch, ignore_errors=True)
    tail = "\n".join(outputs)[-settings.worker.output_limit_bytes:]
    return phases, tail, report, limits.address_space if limits is not None else None


def _raise_if_this_machine_lacks(run: EvalRun, main: str, mode: str,
                                 prepared: Prepared) -> None:
    """`TaskNeeds` where the evaluator failed only because this machine lacks what it
    needs (its report's `error`, its output: "No CUDA GPU available")."""
    said = run.report.get("error", "")
    device = prepared.device
    need = needs.of_failure(f"{said}\n{run.output}", device.kind, device.capability,
                            prepared.source)
    if need is not None:
        first = (said or run.output).strip().splitlines()
        raise TaskNeeds(need, f"{main} {mode}: {first[-1] if first else 'failed'}")


def to_phase(run: EvalRun, spec: PhaseSpec, ranking_by: str) -> PhaseResult:
    """The evaluator's report as a phase of cases."""
    phase = PhaseResult(spec.name, spec.seeds)
    if run.timed_out or "check" not in run.report:
        status = Status.TIMED_OUT if run.timed_out else Status.CRASHED
        why = ("the evaluator ran past the time limit" if run.timed_out else
               f"the evaluator ended (exit {run.returncode}) without a verdict")
        phase.cases = [CaseResult(i, c, status, why) for i, c in enumerate(spec.cases)]
        return phase
    if not spec.timed:
        verdicts = run.case_verdicts()
        for i, case in enumerate(spec.cases):
            missing = run.report.get("error") or "no verdict for this case"
            ok, message = verdicts[i] if i < len(verdicts) else (False, missing)
            phase.cases.append(CaseResult(i, case, Status.PASSED if ok else Status.FAILED,
                                          "" if ok else message))
        return phase
    for i, case in enumerate(spec.cases):
        phase.cases.append(_benchmark_case(run.report, i, case))
    scores = [c.score_ns for c in phase.cases]
    if phase.passed and scores and all(s is not None for s in scores):
        phase.score_ns = combine(scores, ranking_by)
    return phase


def _benchmark_case(report: dict[str, str], i: int, case: dict) -> CaseResult:
    key = f"benchmark.{i}"
    if report.get(f"{key}.status") == "fail" or f"{key}.mean" not in report:
        why = report.get(f"{key}.error") or "the evaluator reported no time for this case"
        return CaseResult(i, case, Status.FAILED, why)
    number = {k: _float(report.get(f"{key}.{k}")) for k in ("mean", "std", "err", "best", "worst")}
    calls = int(_float(report.get(f"{key}.runs")) or 0)
    result = CaseResult(i, case, Status.PASSED, score_ns=number["mean"], checked_calls=calls)
    result.stats = {"calls": calls, "mean": number["mean"], "std": number["std"],
                    "stderr": number["err"], "median": number["mean"], "best": number["best"],
                    "worst": number["worst"],
                    "rse": number["err"] / number["mean"] if number["mean"] else math.inf}
    result.integrity = {"evaluator": MARK}
    return result


def _float(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else 0.0
    except ValueError:
        return 0.0
