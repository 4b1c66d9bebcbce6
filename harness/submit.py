"""The `submit` command's job: evaluate, record, rank, report, and pick the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from . import results as R
from .cases import CaseError
from .devices import DeviceError
from .evaluate import Request, UsageError, evaluate, prepare
from .report import LiveProgress, print_evaluation
from .settings import Settings
from .tasks import TaskError


@dataclass
class SubmitOptions:
    file: Path
    task: str | None = None
    mode: str = "leaderboard"
    cases: list[str] = field(default_factory=list)
    device: str | None = None
    timeout: float | None = None
    json_path: Path | None = None
    summary_md: Path | None = None
    config: Path | None = None
    db: str | None = None
    user: str | None = None
    record: bool | None = None  # None: record in leaderboard mode only


def run_submit(opts: SubmitOptions, console: Console) -> int:
    """Evaluate one submission end to end; return the process exit code."""
    try:
        settings = Settings.load(opts.config)
        request = Request(opts.file, opts.task, opts.mode, list(opts.cases), opts.device,
                          opts.timeout)
        prepared = prepare(request)
    except (UsageError, TaskError, DeviceError, CaseError, ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return R.EXIT_USAGE
    recorder = None
    if opts.record or (opts.record is None and opts.mode == "leaderboard"):
        from .recording import Recorder
        from .store import StoreError

        try:
            recorder = Recorder.open(opts, settings, prepared)
        except (StoreError, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] cannot open the results database: {exc}")
            return R.EXIT_USAGE
        request.secret = recorder.secret
    try:
        with LiveProgress(console) as progress:
            evaluation = evaluate(prepared, settings, progress)
    except TaskError as exc:
        console.print(f"[red]error:[/] the task is broken: {exc}")
        return R.EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - our bug: say so, keep the details
        import traceback

        console.print(f"[red]internal harness error:[/] {exc!r}; please report it with:\n"
                      + "".join(traceback.format_exc()))
        return R.EXIT_INTERNAL
    if recorder is not None:
        recorder.record(evaluation)
    print_evaluation(console, evaluation)
    if recorder is not None:
        recorder.print_ranking(console, evaluation)
    if opts.json_path:
        R.write_json(opts.json_path, evaluation.to_dict())
    from .summary import write_summary

    write_summary(opts.summary_md, evaluation)
    return evaluation.exit_code
