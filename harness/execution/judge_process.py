"""One evaluation in its own judge process: the unit of work of `batch`.

    python -m harness.execution.judge_process < request.json    # writes the result document to request["out"]

The request (JSON on standard input, so the leaderboard secret never sits in an
environment or on a command line) names the file, task, mode, device, cases, timeout,
settings file and, in leaderboard mode, the secret in hex. Nothing is recorded here: the
batch driver records every result in one place.
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

from harness.judging import die_with_parent, run_folder_prefix
from harness.settings import ROOT

# The judge processes this process runs now (`run_judge`), for `stop_judges`.
_running: set[subprocess.Popen] = set()
_stopping = False
_lock = threading.Lock()


def evaluate_request(request: dict[str, Any]) -> dict[str, Any]:
    """Run one evaluation in this process and return its result document (its worker
    started ahead of this process's import of torch, as `runner.py submit` does)."""
    from contextlib import nullcontext

    from harness.judging import HeadStart
    from harness.options import RunOptions
    from harness.settings import Settings

    options = RunOptions.from_wire(request)
    settings = Settings.load(options.config)
    file = options.file if options.file is not None and Path(options.file).is_file() else None
    with HeadStart.begin(settings, options.device, file, options.mode) or nullcontext() as head:
        from harness.judging import evaluate, prepare

        return evaluate(prepare(options), settings, head=head).to_dict()


def main() -> int:
    from harness.execution.stopping import stop_on_sigterm
    from harness.quiet import hush_numpy_warning

    stop_on_sigterm()  # the batch driver's stop: its worker goes with it
    hush_numpy_warning()
    request = json.loads(sys.stdin.read())
    try:
        doc = evaluate_request(request)
    except Exception as exc:  # noqa: BLE001 - reported to the driver as a failed evaluation
        doc = {"error": f"{type(exc).__name__}: {exc}"}
    Path(request["out"]).write_text(json.dumps(doc, default=str))
    return 0


def run_judge(request: dict[str, Any], env_extra: dict[str, str], wall_limit: float) -> dict[str, Any]:
    """Run one evaluation in a judge subprocess; the result document (or an error)."""
    with tempfile.TemporaryDirectory(prefix=run_folder_prefix("batch")) as tmp:
        request = dict(request, out=str(Path(tmp) / "result.json"))
        env = {**os.environ, **{k: v for k, v in env_extra.items() if not k.startswith("_")}}
        env["PYTHONPATH"] = str(ROOT)
        parent = os.getpid()

        def prepare() -> None:  # in the child, between fork and exec
            die_with_parent(parent)

        with _lock:
            if _stopping:
                return {"error": "not run: the batch was stopped"}
            proc = subprocess.Popen([sys.executable, "-m", "harness.execution.judge_process"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                    start_new_session=True, text=True, preexec_fn=prepare)
            _running.add(proc)
        try:
            out, _ = proc.communicate(json.dumps(request), timeout=wall_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return {"error": f"the judge process ran past {wall_limit:.0f} s and was killed"}
        finally:
            with _lock:
                _running.discard(proc)
        if _stopping:
            return {"error": "stopped with the batch"}
        path = Path(request["out"])
        if not path.exists():
            return {"error": f"the judge process ended without a result (exit {proc.returncode}): "
                             f"{out[-2000:]}"}
        return json.loads(path.read_text())


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
