"""`--mode profile` under Nsight Compute: a report per benchmark case, where `ncu` is installed.

The judge's worker cannot be started under `ncu` after the fact, so a separate process
(this module's `main`, run by `ncu`) stages the task, generates the case's input, imports
the submission and runs its calls inside an NVTX range named `custom_kernel`; `ncu`
profiles only the kernels launched in that range and writes its report into
`profile.reports_dir`. Profile mode ranks nothing, so the submission and the reference
sharing this process is no concern; it still gets the worker's stripped environment.
The run is tied to its judge: `ncu` dies with it, this process watches it (`--judge`),
and what the run leaves among the judge's children is killed once it ends (`_run`).

    ncu ... python -m harness.judging.profile.ncu --task DIR --staging DIR --submission NAME \
        --case JSON --calls N --device cuda --judge PID:START
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.consts import Status
from harness.judging.sandbox.leftovers import alive, make_folder
from harness.judging.sandbox.procfs import start_ticks

RANGE = "custom_kernel"
# Calls run under ncu per case, after one warm-up call outside it: ncu replays every
# kernel of the range many times.
NCU_CALLS = 1
# Kernels ncu profiles per case at most: each is replayed many times, so this bounds the run.
NCU_LAUNCH_COUNT = 50
_OUTPUT_TAIL = 2000


def find_ncu() -> str | None:
    """The `ncu` executable on the PATH, or None."""
    return shutil.which("ncu")


def report_path(reports_dir: Path, submission: str, task: str, index: int) -> Path:
    """Where a case's report goes (ncu adds `.ncu-rep`): an absolute path, as ncu runs in a
    scratch folder of its own (`profile.reports_dir` is relative to the judge's)."""
    return Path(reports_dir).absolute() / f"{Path(submission).stem}-{task}-case{index}"


def command(ncu: str, report: Path, launch_count: int, target: list[str]) -> list[str]:
    """The `ncu` command line that profiles the kernels of the NVTX range only."""
    return [ncu, "--target-processes", "all", "--nvtx", "--nvtx-include", f"{RANGE}/",
            "--launch-count", str(launch_count), "--force-overwrite", "--export", str(report),
            sys.executable, "-m", "harness.judging.profile.ncu", *target]


def target_args(task_root: Path, staging: Path, submission: str, case: dict[str, Any],
                calls: int, device: str) -> list[str]:
    """The arguments of `main` for one case (its seed already chosen by the judge); the
    judge is the process that asks."""
    return ["--task", str(task_root), "--staging", str(staging), "--submission", submission,
            "--case", json.dumps(case), "--calls", str(calls), "--device", device,
            "--judge", judge_ref()]


def judge_ref(pid: int | None = None) -> str:
    """`PID:START` naming the judge (this process by default): its start time (clock
    ticks since boot) tells it from a later process given the same number."""
    pid = os.getpid() if pid is None else pid
    started = start_ticks(pid)
    return f"{pid}:{'' if started is None else started}"


@dataclass(frozen=True)
class _Outcome:
    """How an `ncu` run ended."""

    returncode: int | None  # None: killed past its time
    tail: str  # the end of its output (stdout and stderr together)
    left_running: int  # processes still there once it had exited by itself, killed


def _run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> _Outcome:
    """`cmd` in a process group of its own that dies with the judge however the judge ends
    (`sandbox.die_with_parent`). Past `timeout` the whole group is killed, the profiled
    process too, not `ncu` alone. On any way out (a judge stopped while it waits too)
    whatever the run left among the judge's children (`ncu` itself, with its group;
    killed processes and one that left the group, adopted by the judge, a subreaper) is
    killed and reaped; where `ncu` had exited by itself, they are counted."""
    from harness.judging.sandbox.sandbox import children, die_with_parent, kill_strays

    judge, before = os.getpid(), children()
    # Output goes to a nameless file, not pipes: a process the run leaves behind would hold
    # a pipe open, and a judge reading to its end would wait for that process, not `ncu`.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=lambda: die_with_parent(judge))
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # ncu is not reaped yet: its group exists
            proc.wait()
        finally:  # on any way out (the judge stopped too): ncu, its group, what it left
            left = kill_strays(keep=before)
        log.seek(max(0, log.seek(0, os.SEEK_END) - _OUTPUT_TAIL))
        tail = log.read().decode(errors="replace").lstrip("\ufffd")  # a character cut in two
    if timed_out:
        return _Outcome(None, tail, 0)
    return _Outcome(proc.returncode, tail, len(left))


def profile_case(ncu: str | None, report: Path, launch_count: int, target: list[str],
                 env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run one case's calls under `ncu`; what to record in the case's profile: where its
    report went and, read from it, its kernels (`ncu_report.read_report`), or an `error`
    (`failure` makes it the case's verdict)."""
    if ncu is None:
        return {"available": False,
                "note": "ncu (Nsight Compute) is not on the PATH: no kernel-level report"}
    report = Path(report).absolute()  # ncu's working folder is a scratch folder
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return {"available": True, "report": None,
                "error": f"the reports folder {report.parent} cannot be made: {exc}"}
    cmd = command(ncu, report, launch_count, target)
    scratch = make_folder("ncu")
    try:
        run = _run(cmd, env | {"HOME": str(scratch)}, scratch, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if run.returncode is None:
        said = f"; the end of its output:\n{run.tail}" if run.tail.strip() else ""
        return {"available": True, "report": None, "timed_out": True,
                "error": f"ncu ran past {timeout:.0f} s{said}", "output": run.tail}
    written = report.with_name(report.name + ".ncu-rep")
    out = {"available": True, "command": " ".join(cmd[:cmd.index(sys.executable)]),
           "report": str(written) if written.is_file() else None}
    if run.left_running:
        out["left_running"] = run.left_running
    if run.returncode != 0:
        out["error"] = f"ncu exited with {run.returncode}: {_reason(run.tail)}"
    elif out["report"] is None:
        out["error"] = f"ncu exited with 0 but wrote no report at {written}"
    if "error" in out:
        out["output"] = run.tail
        return out
    from harness.judging.profile.ncu_report import read_report

    return out | read_report(ncu, written, min(timeout, 120.0))


def _reason(tail: str) -> str:
    """ncu's own error lines (`==ERROR== ...`) in its output, else its last line."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return " ".join(errors or lines[-1:]) or "no output"


def failure(ncu: dict[str, Any] | None) -> tuple[str, str] | None:
    """A case's verdict where its Nsight Compute run failed (a profile without its report
    does not pass): `timed out` past its time, else `error`; None where it did not fail
    or did not run."""
    if not ncu or not ncu.get("error"):
        return None
    status = Status.TIMED_OUT if ncu.get("timed_out") else Status.ERROR
    return status, (f"Nsight Compute failed, so this case has no kernel report: "
                    f"{ncu['error']}\n(profile.ncu: false in a --config file profiles "
                    "without it)")


def _import_submission(staging: Path, name: str) -> Any:
    sys.path.insert(0, str(staging))
    spec = importlib.util.spec_from_file_location("submission", staging / name)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    return module.custom_kernel


def main(argv: list[str] | None = None) -> int:
    """The process `ncu` runs: one warm-up call, then `--calls` calls in the NVTX range."""
    from harness.quiet import hush_numpy_warning

    hush_numpy_warning()
    parser = argparse.ArgumentParser(prog="python -m harness.judging.profile.ncu")
    for flag in ("--task", "--staging", "--submission", "--case", "--device"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--judge", default=None, help="PID:START of the judge (judge_ref)")
    args = parser.parse_args(argv)
    if args.judge is not None and not _tied_to(args.judge):
        return 1
    import torch

    from harness.loading.task_folder import import_reference, load_task

    task = load_task(args.task)
    tmp = make_folder("ncu")  # named for this process: swept if it is killed (leftovers.py)
    try:
        reference = import_reference(task, task.stage(tmp / "judge"))
        data = reference.generate(json.loads(args.case), args.device)
        kernel = _import_submission(Path(args.staging), args.submission)
        cuda = args.device == "cuda"
        kernel(data)
        for _ in range(args.calls):
            if cuda:
                torch.cuda.nvtx.range_push(RANGE)
            kernel(data)
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"ran {args.calls} calls of {args.submission} on {args.device}")
    return 0


def _tied_to(judge: str) -> bool:
    """End this process when the judge (`PID:START`, `judge_ref`) ends, however `ncu`
    started it (a direct child or behind a launcher of its own): a thread waits on the
    judge's pidfd, readable once the judge has exited (where there is no pidfd, it polls
    the number every 0.5 s), and exits the process then, or if the wait itself fails.
    Whether to go on: not where the judge is gone already, or its number now names
    another process. The exit is bound before the submission is imported, which cannot
    then take it away; processes this one starts are not watched."""
    number, _, start = judge.partition(":")
    pid, started = int(number), int(start) if start else None
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (AttributeError, OSError):  # no pidfd on this system
        fd = None
    if started is not None and start_ticks(pid) != started:
        return False
    exit_now = os._exit

    def watch() -> None:
        try:
            if fd is not None:
                waiting = select.poll()
                waiting.register(fd, select.POLLIN)
                waiting.poll()
            else:
                while alive(pid) and started in (None, start_ticks(pid)):
                    time.sleep(0.5)
        finally:
            exit_now(1)

    threading.Thread(target=watch, name="harness-judge-watch", daemon=True).start()
    return True


if __name__ == "__main__":
    sys.exit(main())
