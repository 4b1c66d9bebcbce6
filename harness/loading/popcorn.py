"""The public contests' evaluator protocol: a task folder staged as their bot stages it,
`python eval.py MODE CASES` with `POPCORN_FD`, and its `key: value` report read back.

Used to run a folder whose own `eval.py` defines the interface (see
harness/judging/foreign.py), and by the benchmarks and tests that compare the harness with
the public evaluators on the same machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.loading.cases import format_case
from harness.loading.task_folder import Task

EVAL_MODES = ("test", "benchmark", "leaderboard", "profile")


def stage_all(task: Task, submission: Path, dest: Path,
              replace: dict[str, Path] | None = None) -> Path:
    """Copy every file of the task's `files:` list under its name (the contestant's file
    too), as the public bot does; `replace` swaps a file's source (e.g. another `eval.py`)."""
    dest.mkdir(parents=True, exist_ok=True)
    replace = dict(replace or {})
    for f in task.files:
        source = submission if f.is_submission else replace.pop(f.name, f.source)
        shutil.copyfile(source, dest / f.name)
    for name, source in replace.items():  # files the task does not list (an evaluator)
        shutil.copyfile(source, dest / name)
    return dest


def case_lines(cases: list[dict[str, Any]]) -> str:
    """The cases file of the public evaluators: one `k: v; k: v` line per case."""
    return "".join(format_case(c) + "\n" for c in cases)


def parse_report(text: str) -> dict[str, str]:
    """`key: value` lines (the key ends at the first colon), as the public bot reads them."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


@dataclass
class EvalRun:
    """One run of a task's own evaluator."""

    mode: str
    returncode: int
    report: dict[str, str]
    output: str
    wall_seconds: float
    timed_out: bool = False
    cases: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """The evaluator's own verdict: its `check:` line (its exit code lies in some modes)."""
        return self.report.get("check") == "pass"

    def case_means_ns(self) -> list[float | None]:
        """Each benchmark's `mean` (ns), None where it failed."""
        count = int(self.report.get("benchmark-count", "0") or 0)
        out: list[float | None] = []
        for i in range(count):
            mean = self.report.get(f"benchmark.{i}.mean")
            out.append(float(mean) if mean not in (None, "") else None)
        return out

    def case_verdicts(self) -> list[tuple[bool, str]]:
        """Per test (test mode): passed, and the error or message."""
        count = int(self.report.get("test-count", "0") or 0)
        return [(self.report.get(f"test.{i}.status") == "pass",
                 self.report.get(f"test.{i}.error") or self.report.get(f"test.{i}.message") or "")
                for i in range(count)]


@dataclass
class Launch:
    """How an evaluator's process starts: its environment (None: this process's) and what
    runs in it between fork and exec (a worker's limits and sandbox)."""

    env: dict[str, str] | None = None
    preexec_fn: Callable[[], None] | None = None


def run_eval(staged: Path, mode: str, cases: list[dict[str, Any]], timeout: float,
             main: str = "eval.py", launch: Launch | None = None) -> EvalRun:
    """Run `python MAIN MODE cases.txt` in `staged` with `POPCORN_FD` on a pipe."""
    env = launch.env if launch is not None else None
    if mode not in EVAL_MODES:
        raise ValueError(f"unknown evaluator mode {mode!r}")
    cases_file = staged / f"{mode}_cases.txt"
    cases_file.write_text(case_lines(cases))
    read_fd, write_fd = os.pipe()
    run_env = dict(os.environ if env is None else env, POPCORN_FD=str(write_fd))
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, main, mode, cases_file.name], cwd=staged, env=run_env,
                            pass_fds=[write_fd], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            preexec_fn=launch.preexec_fn if launch is not None else None)
    os.close(write_fd)
    report_chunks: list[bytes] = []
    reader = _Drain(read_fd, report_chunks)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
    reader.join()
    text = b"".join(report_chunks).decode("utf-8", "replace")
    return EvalRun(mode, proc.returncode, parse_report(text), out.decode("utf-8", "replace"),
                   time.monotonic() - started, timed_out, list(cases))


class _Drain:
    """Reads a pipe to its end in a thread (the evaluator may write more than a pipe holds)."""

    def __init__(self, fd: int, sink: list[bytes]) -> None:
        import threading

        self.fd, self.sink = fd, sink
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with os.fdopen(self.fd, "rb") as fh:
            for chunk in iter(lambda: fh.read(65536), b""):
                self.sink.append(chunk)

    def join(self) -> None:
        self.thread.join(timeout=30)
