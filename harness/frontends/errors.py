"""How a front end turns a problem the user can fix into a message and an exit code."""

from __future__ import annotations

from rich.console import Console

from harness.consts import ExitCode
from harness.results.store import StoreError


def guarded(fn, console: Console, *args) -> int:
    """Run a database command; a database problem is a message, not a traceback."""
    try:
        return fn(console, *args) if console is not None else fn(*args)
    except StoreError as exc:
        console.print(f"[red]error:[/] {exc}") if console else print(f"error: {exc}")
        return ExitCode.USAGE
