"""How a front end turns a problem the user can fix into a message and an exit code."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from harness.consts import ExitCode
from harness.execution.protocol import Failure, Unjudged
from harness.storage.store import StoreError


def guarded(fn, console: Console, *args) -> int:
    """Run a database command; a database problem is a message, not a traceback."""
    try:
        return fn(console, *args) if console is not None else fn(*args)
    except StoreError as exc:
        console.print(f"[red]error:[/] {exc}") if console else print(f"error: {exc}")
        return ExitCode.USAGE


def print_unjudged(console: Console, result: Unjudged) -> int:
    """Say why an evaluation in this process was not judged; the exit code: a broken task
    is the user's to mend (2), anything else is the harness's (3), with its details."""
    if result.failure == Failure.TASK:
        console.print(f"[red]error:[/] {escape(result.reason)}")
        return ExitCode.USAGE
    console.print(f"[red]{escape(result.reason)}[/]; please report it with:\n"
                  + escape(result.detail))
    return ExitCode.INTERNAL
