"""Stopping an evaluation from outside (a CI job's time limit, `kill`, Ctrl-C) without
leaving anything running.

A judge (`runner.py submit`, a batch's judge process) that receives SIGTERM ends as
Ctrl-C would end it: `SystemExit` is raised in its main thread, so every `finally` and
`with` on the way out runs, which kills its worker and the worker's processes, removes
the run's folders and leaves no half-written record (a transaction rolls back). Without
this, SIGTERM ended the judge at once and its worker, in a session of its own, went on
running the submission with nobody to stop it. A worker (and a batch's judge process)
also dies with the process that started it, however that ends (`sandbox.die_with_parent`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, NoReturn

EXIT_CODE = 128 + signal.SIGTERM  # as a shell reports a process ended by SIGTERM


def stop_on_sigterm() -> None:
    """From now on SIGTERM raises `SystemExit` in the main thread (say so on stderr), so
    that the cleanup on the way out runs. Called in the main thread only (elsewhere, and
    where a handler other than the default is installed, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, _stop)


_signalled = threading.Event()  # a SIGTERM came (`stopped_by_sigterm`)


def stopped_by_sigterm() -> bool:
    """Whether this process was told to stop by SIGTERM: for a caller whose loop swallows
    the `SystemExit` (a server's), to exit with `EXIT_CODE` all the same."""
    return _signalled.is_set()


def _stop(signum: int, frame: Any) -> None:
    _signalled.set()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    print("stopped by SIGTERM: cleaning up", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_CODE)


def exit_now(code: int) -> NoReturn:
    """End the process with `code` once its work is done and cleaned up (the worker killed,
    the folders removed, the result written, the database closed), without the
    interpreter's teardown: unloading torch and the rest takes 0.3 s on the 2-core CI
    machine, more where a CUDA context is open, and is all after the result is out. The
    standard streams are flushed first. Only for a command's last step: a `finally` still
    pending, an `atexit` hook, are skipped. Under a profiler, a tracer or a monitoring tool
    (`python -m cProfile -o FILE runner.py submit ...`, coverage) the process exits the
    ordinary way, so that they write what they collected."""
    if _observed():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # none, closed, a reader gone
            pass
    os._exit(code)


def _observed() -> bool:
    """Whether a profiler, a tracer or a `sys.monitoring` tool watches this process."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12 on
    return monitoring is not None and any(
        monitoring.get_tool(i) is not None for i in range(6))
