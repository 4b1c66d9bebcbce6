"""The `submit` command's job: evaluate, record, rank, report, and pick the exit code.

The evaluation runs in a judge process forked from a template started for this command
(harness/execution/judge_template.py), as a batch's and a server's do: the template
imports torch while this process checks the request and opens the database, and the
judge's first worker is a fork of the judge, so that one import of torch serves the run.
This process imports no torch; the judge's progress is relayed to its live view.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from harness.consts import ExitCode
from harness.judging.sandbox.procfs import start_ticks
from harness.options import RunOptions
from harness.settings import Settings

if TYPE_CHECKING:
    from harness.execution.judge_template import JudgeTemplate
    from harness.execution.protocol import Result
    from harness.judging import Progress
    from harness.judging.preparation import Checked
    from harness.results.document import Evaluation
    from harness.results.recording import Recorder


def run_submit(opts: RunOptions, console: Console) -> int:
    """Evaluate one submission end to end; return the process exit code."""
    from harness.execution.judge_process import warm
    from harness.execution.judge_template import JudgeTemplate
    from harness.execution.stopping import stop_on_sigterm

    stop_on_sigterm()  # the judge, its worker and the run's folders go with it
    try:
        settings = Settings.load(opts.config)
    except (ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    opts = _absolute(opts)  # the judge runs in the project's folder
    opts = replace(opts, started_ticks=start_ticks())  # process_age_s counts from here
    checked = _checked(opts, console)
    if checked is None:
        return ExitCode.USAGE
    template = JudgeTemplate()
    try:
        warm(template, opts)  # it imports torch while this process opens the database
        return _run(opts, console, settings, template, checked)
    finally:
        template.close()


def _absolute(opts: RunOptions) -> RunOptions:
    """The options with their files' paths absolute."""
    config = Path(opts.config).resolve() if opts.config else None
    return replace(opts, file=Path(opts.file).resolve(), config=config)


def _checked(opts: RunOptions, console: Console) -> Checked | None:
    """The request checked, without torch and before any process starts; None (said on
    the console) where it is wrong."""
    from harness.judging import UsageError, check_request
    from harness.loading.cases import CaseError
    from harness.loading.task_folder import TaskError

    try:
        return check_request(opts)
    except (UsageError, TaskError, CaseError, ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return None


def _run(opts: RunOptions, console: Console, settings: Settings, template: JudgeTemplate,
         checked: Checked) -> int:
    recorder = None
    if opts.records:
        from harness.judging import recording_refusal
        from harness.judging.startup.head_start import guess_device

        refused = recording_refusal(settings.worker, opts.mode, opts.allow_partial_containment,
                                    guess_device(opts.device))
        if refused:
            console.print(f"[red]error:[/] {refused}")
            return ExitCode.USAGE
        from harness.results.recording import Recorder
        from harness.storage.store import StoreError

        try:
            recorder = Recorder.open(opts, settings, checked)
        except (StoreError, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] cannot open the results database: {exc}")
            return ExitCode.USAGE
        opts.secret = recorder.secret
    try:
        return _evaluate_and_report(opts, console, settings, template, checked, recorder)
    finally:
        if recorder is not None:  # closed here: the process may end without a teardown
            recorder.close()


def _record_and_show(console: Console, opts: RunOptions, settings: Settings,
                     recorder: Recorder | None, evaluation: Evaluation) -> int | None:
    """Record one run where admission lets it in, and print it (with its ranking once
    recorded); the exit code of a refused record, else None."""
    from harness.results.admission import Outcome, Policy, admit
    from harness.views.report import print_evaluation, print_ranking

    decision = None
    if recorder is not None:
        policy = Policy.of(settings, opts.allow_partial_containment, opts.allow_shared_gpu)
        decision = admit(evaluation.to_dict(), policy)
        if decision.recorded:
            recorder.record(evaluation, decision)
    print_evaluation(console, evaluation, opts.verbose)
    if decision is None:
        return None
    if decision.recorded:
        print_ranking(console, recorder, evaluation)
    elif decision.outcome == Outcome.NOT_RECORDED:
        console.print(f"[red]{decision.reason}[/]")
        return ExitCode.USAGE  # refused a record, as on a partial sandbox
    else:
        console.print(f"[yellow]{decision.reason.split(': ')[0]}: "
                      f"{evaluation.load_error['title']}[/]")
    return None


def _evaluate_and_report(opts: RunOptions, console: Console, settings: Settings,
                         template: JudgeTemplate, checked: Checked,
                         recorder: Recorder | None) -> int:
    """Run the evaluation `opts.repeat` times, record and show each, write the JSON and the
    summary; the exit code."""
    from harness.execution.protocol import Unjudged
    from harness.frontends.errors import print_unjudged
    from harness.results.document import status_severity, write_json
    from harness.views.report import LiveProgress

    evaluations, failure = [], None
    for run in range(opts.repeat):
        if run:
            console.print(f"[bold]run {run + 1} of {opts.repeat}[/] (a fresh worker)")
        with LiveProgress(console) as progress:
            result = _judged(opts, settings, template, checked,
                             progress if progress.enabled else None)
        if isinstance(result, Unjudged):
            failure = print_unjudged(console, result)
            break
        evaluation = result.as_evaluation()
        failure = _record_and_show(console, opts, settings, recorder, evaluation) or failure
        evaluations.append(evaluation)
        if evaluation.load_error is not None:
            break  # a submission that does not load fails the same way every run
    if not evaluations:
        return failure
    # the runs that ended are kept (in the JSON and the table) even where a later one broke
    last = evaluations[-1]
    document, repeats = last.to_dict(), None
    if opts.repeat > 1:
        from harness.views.repeats import print_repeats, summarize_runs

        repeats = summarize_runs(evaluations, checked.task.ranking_by)
        print_repeats(console, repeats)
        document["repeat"] = repeats | {"documents": [ev.to_dict() for ev in evaluations[:-1]]}
    if opts.json_path:
        from harness.results.signing import sign, signing_key

        key = signing_key()  # the organiser's: `record` then refuses an altered copy
        write_json(opts.json_path, sign(document, key) if key else document)
    from harness.views.summary import write_summary

    write_summary(opts.summary_md, last, repeats)
    # the worst run's code: a run that failed is not hidden by the others
    return failure or max(evaluations, key=lambda ev: status_severity(ev.status)).exit_code


def _judged(opts: RunOptions, settings: Settings, template: JudgeTemplate, checked: Checked,
            progress: Progress | None) -> Result:
    """One evaluation in a judge forked from `template` (a stop, SIGTERM or Ctrl-C, ends
    the judge first, which ends its worker and removes its folders: run_judge)."""
    from harness.execution.judge_process import run_judge
    from harness.execution.protocol import JudgeRequest

    request = JudgeRequest.of(opts, Path(opts.file), checked.task, settings, secret=opts.secret)
    return run_judge(request, template, progress)
