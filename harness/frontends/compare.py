"""`runner.py compare A.py B.py`: is B faster than A, with an interval (docs/compare.md).

Both files are tested first (test mode, the task's tests). Then benchmark runs of A and B
in pairs, A B then B A (so that neither always goes second), each an evaluation in a judge
of its own with a fresh worker on the same device, as `submit --mode benchmark` runs it:
the judges are forked from one template started for this command
(harness/execution/judge_template.py), so that no run pays an import of torch and this
process imports none. After each pair
past the minimum, the interval of the geometric mean of B's case times over A's
(harness/results/comparison.py) may stop the runs early; the last pair's 95% intervals
make the verdict.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.consts import ExitCode
from harness.execution.protocol import Unjudged
from harness.settings import Settings

if TYPE_CHECKING:
    from harness.execution.judge_template import JudgeTemplate
    from harness.judging.preparation import Checked
    from harness.loading.task_folder import Task
    from harness.options import RunOptions
    from harness.results.comparison import Comparison
    from harness.results.document import Evaluation

SCHEMA = "kernel-harness/compare"
SCHEMA_VERSION = 1


@dataclass
class CompareOptions:
    """What `runner.py compare` was asked: two files (or B alone with a `baseline`)."""

    files: list[Path]
    task: str | None = None
    runs: int = 10  # at most this many benchmark runs of each file
    min_runs: int = 3  # no early stop before this many of each
    threshold: float | None = None  # a change within ±this fraction counts as none
    cases: list[str] = field(default_factory=list)
    device: str | None = None
    timeout: float | None = None
    config: Path | None = None
    json_path: Path | None = None
    baseline: int | None = None  # A: this recorded submission's code
    db: str | None = None
    verbose: bool = False  # warnings and failing reports' notes whole (frontends/brief)


class CompareError(ValueError):
    """A compare that cannot start: a message and exit code 2."""


@dataclass
class Side:
    """A or B: its file, its request checked, its two requests, and its evaluations."""

    label: str
    file: Path
    submission_id: int | None = None  # A from the results database
    checked: Checked | None = None
    test: RunOptions | None = None
    bench: RunOptions | None = None
    tested: Evaluation | None = None
    runs: list[Evaluation] = field(default_factory=list)

    @property
    def title(self) -> str:
        where = f"submission {self.submission_id}, " if self.submission_id is not None else ""
        return f"{self.label} ({where}{self.file.name})"


class Sides(NamedTuple):
    """A, B, and the task A was recorded on where A is a baseline from the database."""

    a: Side
    b: Side
    recorded_task: str | None


def run_compare(opts: CompareOptions, console: Console) -> int:
    """Test both files, time them in pairs, print and write the verdict; the exit code."""
    from harness.execution.judge_process import warm
    from harness.execution.judge_template import JudgeTemplate
    from harness.execution.stopping import stop_on_sigterm
    from harness.judging import UsageError
    from harness.judging import make_run_folder as make_folder
    from harness.loading.cases import CaseError
    from harness.loading.task_folder import TaskError

    stop_on_sigterm()  # the running judge, its worker and the run's folders go with it
    try:
        settings = Settings.load(opts.config)
        _check_options(opts)
    except (CompareError, ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    folder = make_folder("run") if opts.baseline is not None else None  # the baseline's file
    try:
        try:
            sides = _sides(opts, folder)
            _requests(opts, *sides)  # a mistake is told before any process starts
        except (CompareError, UsageError, TaskError, CaseError, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] {exc}")
            return ExitCode.USAGE
        template = JudgeTemplate()
        try:
            warm(template, sides.a.test)  # it imports torch while this process goes on
            return _run(opts, console, settings, template, sides)
        finally:
            template.close()
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _check_options(opts: CompareOptions) -> None:
    if opts.baseline is None and len(opts.files) != 2:
        raise CompareError(f"compare takes two files, A and B (got {len(opts.files)}), or one "
                           "with --baseline SUBMISSION_ID as A")
    if opts.baseline is not None and len(opts.files) != 1:
        raise CompareError(f"with --baseline, give one file, B (got {len(opts.files)})")
    if opts.runs < 2:
        raise CompareError(f"--runs takes 2 or more (an interval needs two pairs), not {opts.runs}")
    if not 2 <= opts.min_runs <= opts.runs:
        raise CompareError(f"--min-runs takes 2 to --runs ({opts.runs}), not {opts.min_runs}")
    if opts.threshold is not None and not 0 < opts.threshold < 1:
        raise CompareError(f"--threshold takes a fraction above 0 and below 1 (0.01 for 1%), "
                           f"not {opts.threshold}")


def _sides(opts: CompareOptions, folder: Path | None) -> Sides:
    """A and B; with a baseline, A is its code written to `folder` under its file name,
    and the task it was recorded on comes third."""
    from harness.frontends.browse import open_store
    from harness.storage.store import StoreError

    b = Side("B", Path(opts.files[-1]))
    if opts.baseline is None:
        return Sides(Side("A", Path(opts.files[0])), b, None)
    try:
        store = open_store(opts.db)
        try:
            sub = store.submission(opts.baseline)
        finally:
            store.close()
    except StoreError as exc:
        raise CompareError(str(exc)) from exc
    if sub is None:
        raise CompareError(f"no submission {opts.baseline} in the results database")
    path = folder / Path(sub["file_name"]).name
    path.write_text(sub["code"], encoding="utf-8")
    return Sides(Side("A", path, submission_id=opts.baseline), b, sub["task"])


def _run(opts: CompareOptions, console: Console, settings: Settings, template: JudgeTemplate,
         sides: Sides) -> int:
    a, b, _ = sides
    task = b.checked.task
    console.print(f"[bold]Compare[/] on task {escape(task.name)}: "
                  f"A = {escape(str(a.file.name))}"
                  + (f" (submission {a.submission_id})" if a.submission_id is not None else "")
                  + f", B = {escape(str(b.file))}")
    started = time.monotonic()
    judge = _Judge(console, settings, template, task)
    try:
        failed = _test_both(console, judge, a, b, opts.verbose)
        if failed is not None:
            message, code = failed
            _write(opts, _document(opts, a, b, None, started, error=message))
            return code
        comparison, error = _time_pairs(opts, console, judge, a, b)
    except _NotJudged as exc:
        from harness.frontends.errors import print_unjudged

        return print_unjudged(console, exc.result)
    except Exception as exc:  # noqa: BLE001 - our bug in the compare: say so, keep the details
        import traceback

        console.print(f"[red]internal harness error:[/] {exc!r}; please report it with:\n"
                      + escape(traceback.format_exc()))
        return ExitCode.INTERNAL
    if error is not None:
        message, code = error
        _write(opts, _document(opts, a, b, None, started, error=message))
        return code
    _print_result(console, opts, a, b, comparison)
    _write(opts, _document(opts, a, b, comparison, started))
    return ExitCode.OK


def _requests(opts: CompareOptions, a: Side, b: Side, recorded_task: str | None) -> None:
    """A's and B's requests (`Side.checked`, `.bench`, and `.test`: the task's own tests,
    whatever cases are timed), on one task and one device. Without --task, the task is the
    one the files' directives (or the baseline's record) name; they must agree. A baseline
    is given its task by B's (its own directive may name it otherwise). Every mistake in
    them is raised here, without torch (`check_request`)."""
    from harness.judging import check_request
    from harness.loading.directives import parse_directives
    from harness.options import RunOptions

    name = opts.task
    if name is None:
        named = {}
        for side in (a, b) if a.submission_id is None else (b,):
            if side.file.is_file():
                named[side.title] = parse_directives(_read(side.file)).leaderboard
        if recorded_task is not None:
            named[a.title] = recorded_task
        names = {n for n in named.values() if n}
        if len(names) > 1:
            said = ", ".join(f"{who} names {n}" for who, n in named.items() if n)
            raise CompareError(f"the files name different tasks ({said}): pass --task")
        name = names.pop() if names else None

    config = Path(opts.config).resolve() if opts.config else None  # judges run elsewhere

    def request(file: Path, task: str | None) -> RunOptions:
        return RunOptions(file=file.resolve(), task=task, mode="benchmark",
                          cases=list(opts.cases), device=opts.device, timeout=opts.timeout,
                          config=config, record=False)

    b.bench = request(b.file, name)
    b.checked = check_request(b.bench)
    b_task = b.checked.task
    if recorded_task is not None and recorded_task != b_task.name:
        raise CompareError(f"submission {a.submission_id} was recorded on task {recorded_task}, "
                           f"and B runs on task {b_task.name}")
    a.bench = request(a.file, str(b_task.root) if a.submission_id is not None else name)
    a.checked = check_request(a.bench)
    for side in (a, b):
        side.test = replace(side.bench, mode="test", cases=[])


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""  # prepare() says what is wrong with the file


class _NotJudged(Exception):
    """A run of either side that was not judged: the compare stops."""

    def __init__(self, result: Unjudged) -> None:
        super().__init__(result.reason)
        self.result = result


@dataclass
class _Judge:
    """Runs one request in a judge forked from the command's template, with its live view."""

    console: Console
    settings: Settings
    template: JudgeTemplate
    task: Task

    def __call__(self, request: RunOptions) -> Evaluation:
        """The request's evaluation; _NotJudged where its judge gave none (a stop, SIGTERM
        or Ctrl-C, ends the judge first, which ends its worker: run_judge)."""
        from harness.execution.judge_process import run_judge
        from harness.execution.protocol import JudgeRequest
        from harness.views.report import LiveProgress

        judged = JudgeRequest.of(request, Path(request.file), self.task, self.settings)
        with LiveProgress(self.console) as progress:
            result = run_judge(judged, self.template, progress if progress.enabled else None)
        if isinstance(result, Unjudged):
            raise _NotJudged(result)
        return result.as_evaluation()


def _test_both(console: Console, judge: _Judge, a: Side, b: Side,
               verbose: bool = False) -> tuple[str, int] | None:
    """Run both files' tests; print a line each, or a failing one's report. None when both
    pass, else what failed and the first failure's exit code."""
    from harness.views.brief import brief
    from harness.views.report import print_evaluation

    failed: list[str] = []
    code = ExitCode.OK
    for side in (a, b):
        ev = side.tested = judge(side.test)
        for warning in ev.warnings:
            console.print(f"[yellow]warning:[/] {side.label}: "
                          f"{escape(warning if verbose else brief(warning))}")
        if ev.passed:
            cases = sum(len(p.cases) for p in ev.phases)
            console.print(f"{escape(side.title)}: tests [green]passed[/] ({cases} cases)")
            continue
        print_evaluation(console, ev, verbose)
        failed.append(f"{side.title} fails the tests ({ev.status})")
        code = code or ev.exit_code or ExitCode.FAILED
    if not failed:
        return None
    message = "; ".join(failed) + ": nothing was timed"
    console.print(f"[red]error:[/] {escape(message)}")
    return message, code


def _time_pairs(opts: CompareOptions, console: Console, judge: _Judge, a: Side,
                b: Side) -> tuple[Comparison | None, tuple[str, int] | None]:
    """Benchmark runs in pairs, A B then B A, until the interval settles or the last pair;
    the comparison, or why a run stopped it (and the exit code)."""
    from harness.durations import readable
    from harness.results.comparison import (
        INTERIM_CONFIDENCE,
        compare_pairs,
        confidence_words,
        should_stop,
    )
    from harness.views.brief import brief
    from harness.views.report import print_evaluation

    if a.tested.device:
        console.print(f"Device: {escape(str(a.tested.device.get('name')))}")
    console.print(f"Benchmark runs in pairs (A B, B A, ...), each in a fresh worker: up to "
                  f"{opts.runs} of each, stopping from {opts.min_runs} once the "
                  f"{confidence_words(INTERIM_CONFIDENCE)} settles the question")
    means: dict[str, list[list[float]]] = {"A": [], "B": []}
    said = {side.label: set(side.tested.warnings) for side in (a, b)}  # printed once each
    while True:
        pair = len(means["A"])
        for side in (a, b) if pair % 2 == 0 else (b, a):
            ev = judge(side.bench)
            side.runs.append(ev)
            phase = ev.phase("benchmark")
            if not ev.passed or phase is None:
                print_evaluation(console, ev, opts.verbose)
                message = (f"{side.title}'s benchmark run {pair + 1} did not pass ({ev.status}): "
                           "nothing to compare")
                console.print(f"[red]error:[/] {escape(message)}")
                return None, (message, ev.exit_code or ExitCode.FAILED)
            means[side.label].append([c.score_ns for c in phase.cases])
            for warning in dict.fromkeys(ev.warnings):
                if warning not in said[side.label]:
                    said[side.label].add(warning)
                    console.print(f"[yellow]warning:[/] {side.label}: "
                                  f"{escape(warning if opts.verbose else brief(warning))}")
            flagged = sum(bool(c.flags) for c in phase.cases)
            console.print(f"  run {pair + 1} of {escape(side.title)}: score "
                          f"{readable(phase.score_ns)}"
                          + (f" [yellow]({flagged} case(s) flagged: the judge's clock)[/]"
                             if flagged else ""))
        if len(means["A"]) >= 2:
            now = compare_pairs(means["A"], means["B"]).geomean
            console.print(f"  after {len(means['A'])} of each: B/A {now.ratio:.4f} "
                          f"(95% CI {now.low:.4f} to {now.high:.4f})")
        if should_stop(means["A"], means["B"], opts.threshold, opts.min_runs, opts.runs):
            if len(means["A"]) < opts.runs:
                console.print(f"  stopped after {len(means['A'])} of up to {opts.runs} runs of "
                              f"each: the {confidence_words(INTERIM_CONFIDENCE)} settles it")
            return compare_pairs(means["A"], means["B"]), None


def _print_result(console: Console, opts: CompareOptions, a: Side, b: Side,
                  comparison: Comparison) -> None:
    """The table per case (each side's median of its run means, B/A and its interval),
    the geometric mean's row, and the verdict."""
    from harness.durations import readable
    from harness.loading.cases import format_case
    from harness.results.comparison import verdict
    from harness.views.repeats import summarize_runs

    ranking = b.checked.task.ranking_by
    sums = {s.label: summarize_runs(s.runs, ranking) for s in (a, b)}
    table = Table(title=f"B over A, {comparison.pairs} runs of each", title_justify="left")
    for col, just in (("#", "right"), ("case", "left"), ("A (median)", "right"),
                      ("B (median)", "right"), ("B/A", "right"), ("95% CI", "right")):
        table.add_column(col, justify=just)
    for k, iv in enumerate(comparison.cases):
        ca, cb = sums["A"]["cases"][k], sums["B"]["cases"][k]
        table.add_row(str(k), escape(format_case(ca["case"])), readable(ca["median_ns"]),
                      readable(cb["median_ns"]), f"{iv.ratio:.4f}", f"{iv.low:.4f} to {iv.high:.4f}")
    g = comparison.geomean
    table.add_row("", "[bold]geometric mean[/]", "", "", f"[bold]{g.ratio:.4f}[/]",
                  f"{g.low:.4f} to {g.high:.4f}")
    table.caption = ("B/A: the geometric mean over the pairs of runs of B's case mean over A's; "
                     "the interval is Student's t on their logs (docs/compare.md)")
    console.print(table)
    console.print(f"[bold]{escape(verdict(g, opts.threshold))}[/]")


def _document(opts: CompareOptions, a: Side, b: Side, comparison: Comparison | None,
              started: float, error: str | None = None) -> dict[str, Any]:
    """The `--json` document: each side's per-run case means, the ratios with their 95%
    intervals (ratio = time(B) / time(A)) and the verdict."""
    from harness.results.comparison import CONFIDENCE, INTERIM_CONFIDENCE, verdict

    task = b.checked.task
    doc: dict[str, Any] = {
        "schema": SCHEMA, "version": SCHEMA_VERSION,
        "task": {"name": task.name, "path": str(task.root), "content_hash": task.content_hash},
        "device": (b.tested or a.tested).device if (b.tested or a.tested) else None,
        "a": _side_document(a, task.ranking_by), "b": _side_document(b, task.ranking_by),
        "runs": min(len(a.runs), len(b.runs)),
        "order": _order(len(a.runs) + len(b.runs)),
        "max_runs": opts.runs, "min_runs": opts.min_runs, "threshold": opts.threshold,
        "confidence": CONFIDENCE, "interim_confidence": INTERIM_CONFIDENCE,
        "wall_seconds": round(time.monotonic() - started, 3),
        "ratio": None, "cases": [], "verdict": None, "error": error,
    }
    if comparison is not None:
        g = comparison.geomean
        doc["ratio"] = {"geomean": g.ratio, "ci95": g.to_list()}
        cases = b.runs[0].phase("benchmark").cases
        doc["cases"] = [{"index": k, "case": cases[k].case, "ratio": iv.ratio,
                         "ci95": iv.to_list()} for k, iv in enumerate(comparison.cases)]
        doc["verdict"] = verdict(g, opts.threshold)
        doc["settled"] = g.settles(opts.threshold)
        doc["stopped_early"] = comparison.pairs < opts.runs
    return doc


def _order(count: int) -> list[str]:
    """The first `count` runs' sides, in the order they ran: A B B A A B ..."""
    return [("AB" if k // 2 % 2 == 0 else "BA")[k % 2] for k in range(count)]


def _side_document(side: Side, ranking_by: str) -> dict[str, Any]:
    from harness.views.repeats import summarize_runs

    source = side.checked.source if side.checked is not None else _read(side.file)
    out: dict[str, Any] = {
        "file": str(side.file) if side.submission_id is None else side.file.name,
        "sha256": hashlib.sha256(source.encode()).hexdigest(),
        "submission_id": side.submission_id,
        "test_status": side.tested.status if side.tested else None,
        "means_ns": [], "scores_ns": [], "median_ns": [],
    }
    if side.runs:
        summary = summarize_runs(side.runs, ranking_by)
        out["means_ns"] = [[c["means_ns"][k] for c in summary["cases"]]
                           for k in range(summary["runs"])]
        out["scores_ns"] = summary["scores_ns"]
        out["median_ns"] = [c["median_ns"] for c in summary["cases"]]
        out["statuses"] = summary["statuses"]
    return out


def _write(opts: CompareOptions, doc: dict[str, Any]) -> None:
    if opts.json_path:
        from harness.results.document import write_json

        write_json(opts.json_path, doc)
