"""One evaluation in its own judge process: how `batch` and the server's slots run each.

    python -m harness.execution.judge_process < request.json

The request (JSON on standard input, so that the leaderboard secret never sits in an
environment or on a command line) is `JudgeRequest.wire()` plus `out`, the file where the
process writes its answer: the result document, or `Unjudged.to_wire()`. `run_judge`
starts one, watches it and reads that answer back as a typed `Result`
(harness/execution/protocol.py); a process that dies or runs past its limit is `Unjudged`
with `Failure.MACHINE`. Nothing is recorded here: the caller records every result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness.execution.protocol import Failure, JudgeRequest, Result, Unjudged, result_from_wire
from harness.judging import die_with_parent, run_folder_prefix
from harness.settings import ROOT

# The judge processes this process runs now (`run_judge`), for `stop_judges`.
_running: set[subprocess.Popen] = set()
_stopping = False
_lock = threading.Lock()


def evaluate_request(request: dict[str, Any]) -> Result:
    """Run one evaluation in this process (its worker started ahead of this process's
    import of torch, as `runner.py submit` does)."""
    from contextlib import nullcontext

    from harness.execution.in_process import judge_here
    from harness.judging import DeviceError, HeadStart, UsageError
    from harness.loading.cases import CaseError
    from harness.loading.task_folder import TaskError
    from harness.options import RunOptions
    from harness.settings import Settings

    options = RunOptions.from_wire(request)
    try:
        settings = Settings.load(options.config)
    except (ValueError, OSError) as exc:
        return Unjudged(Failure.TASK, f"the settings cannot be read: {exc}")
    file = options.file if options.file is not None and Path(options.file).is_file() else None
    with HeadStart.begin(settings, options.device, file, options.mode) or nullcontext() as head:
        from harness.judging import prepare

        try:
            prepared = prepare(options)
        except DeviceError as exc:
            return Unjudged(Failure.MACHINE, str(exc))
        except (UsageError, TaskError, CaseError, ValueError, OSError) as exc:
            return Unjudged(Failure.TASK, f"the request cannot be run: {exc}")
        return judge_here(prepared, settings, head=head)


def main() -> int:
    import traceback

    from harness.execution.stopping import stop_on_sigterm
    from harness.quiet import hush_numpy_warning

    stop_on_sigterm()  # the caller's stop: its worker goes with it
    hush_numpy_warning()
    request = json.loads(sys.stdin.read())
    try:
        result = evaluate_request(request)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as not judged
        result = Unjudged(Failure.HARNESS, f"internal harness error: {exc!r}",
                          traceback.format_exc())
    answer = result.to_wire() if isinstance(result, Unjudged) else result.document
    Path(request["out"]).write_text(json.dumps(answer, default=str))
    return 0


def run_judge(request: JudgeRequest) -> Result:
    """Run one evaluation in a judge subprocess pinned by `request.env`; its Result."""
    with tempfile.TemporaryDirectory(prefix=run_folder_prefix("batch")) as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, **{k: v for k, v in request.env.items() if not k.startswith("_")}}
        env["PYTHONPATH"] = str(ROOT)
        parent = os.getpid()

        def prepare() -> None:  # in the child, between fork and exec
            die_with_parent(parent)

        with _lock:
            if _stopping:
                return Unjudged(Failure.STOPPED, "not run: the run was stopped")
            proc = subprocess.Popen([sys.executable, "-m", "harness.execution.judge_process"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                    start_new_session=True, text=True, preexec_fn=prepare)
            _running.add(proc)
        try:
            said, _ = proc.communicate(json.dumps({**request.wire(), "out": str(out)}),
                                       timeout=request.wall_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return Unjudged(Failure.MACHINE, f"the judge process ran past "
                                             f"{request.wall_limit:.0f} s and was killed")
        finally:
            with _lock:
                _running.discard(proc)
        if _stopping:
            return Unjudged(Failure.STOPPED, "stopped with the run")
        if not out.exists():
            return Unjudged(Failure.MACHINE, f"the judge process ended without a result "
                                             f"(exit {proc.returncode}): {said[-2000:]}")
        return result_from_wire(json.loads(out.read_text()))


def stop_judges(grace: float = 10.0) -> int:
    """Stop every judge process this process runs, and start no more (the batch driver is
    stopping): SIGTERM first, so that each ends its worker and removes its folders
    (`stopping.stop_on_sigterm`), then, after `grace` seconds, SIGKILL to the process
    groups of those still there (their workers die with them). How many there were."""
    global _stopping
    with _lock:
        _stopping = True
        procs = list(_running)
    for proc in procs:
        _signal(proc, signal.SIGTERM, group=False)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL, group=True)
            proc.wait()
    return len(procs)


def _signal(proc: subprocess.Popen, sig: int, group: bool) -> None:
    try:
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main())
