"""One evaluation in its own judge process: how `batch` and the server's slots run each.

    python -m harness.execution.judge_process < request.json

The request (JSON on standard input, so that the leaderboard secret never sits in an
environment or on a command line; `wire`) is `JudgeRequest.wire()` plus `out`, the file
where the process writes its answer: the result document, or `Unjudged.to_wire()`. `run_judge`
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
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from harness.execution.protocol import Failure, JudgeRequest, Result, Unjudged, result_from_wire
from harness.judging import die_with_parent, run_folder_prefix
from harness.settings import ROOT, Settings

if TYPE_CHECKING:
    from harness.execution.judge_template import ForkedJudge, JudgeTemplate
    from harness.judging import Progress
    from harness.options import RunOptions

# The judge processes this process runs now (`run_judge`), for `stop_judges`.
_running: set[subprocess.Popen] = set()
_stopping = False
_lock = threading.Lock()


def evaluate_request(request: dict[str, Any],
                     secret: Callable[[], str | None] | None = None,
                     progress: Progress | None = None) -> Result:
    """Run one evaluation in this process (its worker started ahead of its imports of the
    task and its GPU work: a fork of this process where that may be, `forked.possible`).
    `secret`: reads the request's secret (hex), called once the worker is started, so
    that a worker forked from this process (harness/judging/sandbox/forked.py) never holds
    it; `progress`: its live events."""
    from contextlib import nullcontext

    from harness.execution.in_process import judge_here
    from harness.judging import DeviceError, HeadStart, UsageError
    from harness.judging.sandbox import forked, zygote
    from harness.loading.cases import CaseError
    from harness.loading.task_folder import TaskError
    from harness.options import RunOptions

    options = RunOptions.from_wire(request)
    try:
        settings = Settings.load(options.config)
    except (ValueError, OSError) as exc:
        return Unjudged(Failure.TASK, f"the settings cannot be read: {exc}")
    file = options.file if options.file is not None and Path(options.file).is_file() else None
    with HeadStart.begin(settings, options.device, file, options.mode) or nullcontext() as head:
        from harness.judging import prepare

        zygote.start()  # a spare fork, without the secret, for every later worker
        forked.allow(False)  # no later worker is a fork of this process itself
        try:
            if secret is not None:
                options = RunOptions.from_wire({**request, "secret": secret()})
            try:
                prepared = prepare(options)
            except DeviceError as exc:
                return Unjudged(Failure.MACHINE, str(exc))
            except (UsageError, TaskError, CaseError, ValueError, OSError) as exc:
                return Unjudged(Failure.TASK, f"the request cannot be run: {exc}")
            return judge_here(prepared, settings, progress, head=head)
        finally:
            zygote.stop()


def main() -> int:
    """A judge process's life (or, with `--template FD`, a slot's judge template's)."""
    from harness.execution.judge_template import restore_withheld

    restore_withheld()
    if sys.argv[1:2] == ["--template"]:
        from harness.execution.judge_template import serve

        return serve(int(sys.argv[2]))
    return judge()


def judge() -> int:
    """Read the request on standard input, evaluate it, write the answer where it says."""
    import traceback

    from harness.execution.stopping import stop_on_sigterm
    from harness.judging.sandbox.procfs import JUDGE_NAME, name_self
    from harness.quiet import hush_numpy_warning

    name_self(JUDGE_NAME)
    stop_on_sigterm()  # the caller's stop: its worker goes with it
    hush_numpy_warning()
    request = json.loads(_read_line(0))  # all but the secret, on the first line
    _work_in(request.get("workdir"))

    def secret() -> str | None:
        return json.loads(_read_line(0))["secret"]

    progress = None
    if request.get("progress"):  # its caller shows it live (progress_relay.py)
        from harness.execution.progress_relay import ProgressWriter

        progress = ProgressWriter(request["progress"])
    try:
        result = evaluate_request(request, secret, progress)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as not judged
        result = Unjudged(Failure.HARNESS, f"internal harness error: {exc!r}",
                          traceback.format_exc())
    finally:
        if progress is not None:
            progress.close()
    answer = result.to_wire() if isinstance(result, Unjudged) else result.document
    Path(request["out"]).write_text(json.dumps(answer, default=str))
    return 0


def _work_in(folder: str | None) -> None:
    """Work in the caller's folder, as an evaluation in the caller's own process would: a
    relative path of the settings (`profile.reports_dir`) is read from there, and it is the
    working directory that the sandbox keeps from the worker (containment.py). A folder
    that is gone leaves the judge in the project's."""
    if folder:
        try:
            os.chdir(folder)
        except OSError:
            pass


def _read_line(fd: int) -> bytes:
    """One line of `fd`, read a byte at a time: nothing past it is read into memory."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return bytes(line)


def wire(request: JudgeRequest, out: Path, progress: Path | None = None) -> bytes:
    """What a judge process reads on its standard input: the request with `out` (where it
    writes its answer) and `progress` (where it writes its live events, if anywhere) on a
    first line, its leaderboard secret alone on a second, which the judge reads only once
    its worker is started."""
    public = {**request.wire(), "out": str(out)}
    if progress is not None:
        public["progress"] = str(progress)
    secret = public.pop("secret", None)
    return (json.dumps(public) + "\n" + json.dumps({"secret": secret}) + "\n").encode()


def run_judge(request: JudgeRequest, template: JudgeTemplate | None = None,
              progress: Progress | None = None) -> Result:
    """Run one evaluation in a judge process pinned by `request.env`; its Result. With a
    `template` (one per slot, started with that environment), the judge is forked from it
    rather than started from scratch; with `progress`, the judge's live events are relayed
    to it as they come (progress_relay.py)."""
    with tempfile.TemporaryDirectory(prefix=run_folder_prefix("batch")) as tmp:
        out = Path(tmp) / "result.json"
        events = Path(tmp) / "progress.jsonl" if progress is not None else None
        sent = wire(request, out, events)
        with open(Path(tmp) / "judge.log", "w+b") as log, _relayed(events, progress):
            with _lock:
                if _stopping:
                    return Unjudged(Failure.STOPPED, "not run: the run was stopped")
                proc = _start(request, sent, log, template)
                _running.add(proc)
            try:
                proc.wait(timeout=request.wall_limit)
            except subprocess.TimeoutExpired:
                _signal(proc, signal.SIGKILL, group=True)
                proc.wait()
                return Unjudged(Failure.MACHINE, f"the judge process ran past "
                                                 f"{request.wall_limit:.0f} s and was killed")
            except BaseException:  # this thread is stopping (SIGTERM, Ctrl-C): the judge too
                _end([proc])
                raise
            finally:
                with _lock:
                    _running.discard(proc)
            log.seek(0)
            said = log.read().decode(errors="replace")
        if _stopping:
            return Unjudged(Failure.STOPPED, "stopped with the run")
        if not out.exists():
            return Unjudged(Failure.MACHINE, f"the judge process ended without a result "
                                             f"(exit {proc.returncode}): {said[-2000:]}")
        return result_from_wire(json.loads(out.read_text()))


def _relayed(events: Path | None, progress: Progress | None) -> Any:
    """The relay of a judge's live events to `progress` (nothing where there is none)."""
    if events is None or progress is None:
        from contextlib import nullcontext

        return nullcontext()
    from harness.execution.progress_relay import ProgressRelay

    return ProgressRelay(events, progress)


def judge_env(request: JudgeRequest) -> dict[str, str]:
    """The whole environment of a judge process for `request`: this process's, pinned to
    the request's slot."""
    env = {**os.environ, **{k: v for k, v in request.env.items() if not k.startswith("_")}}
    env["PYTHONPATH"] = str(ROOT)
    return env


def template_env_of(request: JudgeRequest, env: dict[str, str] | None = None
                    ) -> dict[str, str] | None:
    """The environment of the template that forks judges of `request` (its slot's pinning,
    its settings' `worker.env_pass`), from `env` (`judge_env(request)` where not given);
    None where its settings cannot be read (a judge from scratch then says what is
    wrong)."""
    from harness.execution.judge_template import template_env

    try:
        extra = Settings.load(request.options.config).worker.env_pass
    except (ValueError, OSError):
        return None
    return template_env(env if env is not None else judge_env(request), extra)


def warm(template: JudgeTemplate, options: RunOptions) -> None:
    """Start `template` for judging `options` now, so that it imports torch while the
    caller goes on (a command's one-shot template: `submit`, `compare`)."""
    env = template_env_of(JudgeRequest(options))
    if env is not None:
        template.start_soon(env)


def _start(request: JudgeRequest, sent: bytes, log: IO[bytes],
           template: JudgeTemplate | None) -> subprocess.Popen | ForkedJudge:
    """The judge process of one request: forked from `template` where it serves this
    environment and is there, else started from scratch (its request on standard input,
    its output in `log`)."""
    from harness.execution.judge_template import TemplateGone

    env = judge_env(request)
    forked_env = template_env_of(request, env) if template is not None else None
    if forked_env is not None:
        try:
            return template.fork(forked_env, sent, log)
        except TemplateGone:
            pass  # started from scratch, as without a template
    parent = os.getpid()

    def prepare() -> None:  # in the child, between fork and exec
        die_with_parent(parent)

    from harness.execution.judge_template import interpreter_env

    proc = subprocess.Popen([sys.executable, "-m", "harness.execution.judge_process"],
                            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                            env=interpreter_env(env), cwd=ROOT, start_new_session=True,
                            preexec_fn=prepare)
    try:
        proc.stdin.write(sent)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # it died at once: its exit says so
    return proc


def stop_judges(grace: float = 10.0) -> int:
    """Stop every judge process this process runs, and start no more (the batch driver is
    stopping): SIGTERM first, so that each ends its worker and removes its folders
    (`stopping.stop_on_sigterm`), then, after `grace` seconds, SIGKILL to the process
    groups of those still there (their workers die with them). How many there were."""
    global _stopping
    with _lock:
        _stopping = True
        procs = list(_running)
    _end(procs, grace)
    return len(procs)


def _end(procs: list[subprocess.Popen | ForkedJudge], grace: float = 10.0) -> None:
    """Stop judges: SIGTERM first (each ends its worker and removes its folders), then
    SIGKILL to the process groups of those still there after `grace` seconds."""
    for proc in procs:
        _signal(proc, signal.SIGTERM, group=False)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL, group=True)
            proc.wait()


def _signal(proc: subprocess.Popen, sig: int, group: bool) -> None:
    try:
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main())
