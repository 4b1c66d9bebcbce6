"""The console every command prints to: terminal width on a terminal, whole cells elsewhere.

Rich lays tables out for 80 columns when stdout is not a terminal, so a pipe or a CI log
would get "Seed 7998ad… mainta…" for a user name and "2026-1…" for a date. Off a terminal
the console is made wide enough that no cell is cut (tables take their natural width).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TextIO

from rich.console import Console

# Wide enough for any table the harness prints, at its natural width.
PIPE_WIDTH = 400


def pipe_width(environ: Mapping[str, str]) -> int:
    """The width used off a terminal: $COLUMNS when it is wider, else PIPE_WIDTH."""
    try:
        asked = int(environ.get("COLUMNS", "0"))
    except ValueError:
        asked = 0
    return max(asked, PIPE_WIDTH)


def make_console(file: TextIO | None = None, environ: Mapping[str, str] | None = None) -> Console:
    """A console for `file` (stdout by default) that never cuts a cell when it is not a terminal."""
    environ = os.environ if environ is None else environ
    stream = file if file is not None else sys.stdout
    probe = Console(file=stream)
    if probe.is_terminal:
        return Console(file=file, highlight=False)
    return Console(file=file, highlight=False, width=pipe_width(environ))
