"""What Linux's /proc says of a process: the fields of its `stat` file (its state, parent,
process group, start time), read in one place for the judge's process table, the sweep of
dead makers' folders, the ties of a profile run to its judge and the evaluation's start-up
figure."""

from __future__ import annotations

from pathlib import Path

# The names (/proc/PID/comm) the harness gives its processes, whether started from scratch or
# forked from a template (whose command line they share): how a tool or a test tells them.
TEMPLATE_NAME = "judge-template"
ZYGOTE_NAME = "harness-zygote"  # a judge's spare fork, which forks its later workers
WARM_HOST_NAME = "harness-warm"  # runner.py warm, which lends templates (warm_host.py)
JUDGE_NAME = "harness-judge"
WORKER_NAME = "harness-worker"
_PR_SET_NAME = 15


def name_self(name: str) -> None:
    """Give this process the name `name` (at most 15 bytes), as /proc/PID/comm shows it."""
    from harness.judging.sandbox.libc import LIBC

    if LIBC is not None:
        LIBC.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def name_of(pid: int | str) -> str:
    """The process's name (/proc/PID/comm); "" where it cannot be read."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def stat_fields(pid: int | str = "self") -> list[str]:
    """The fields of /proc/PID/stat after the command name, which may hold spaces and
    parentheses itself: the state first, then the parent, the process group, ... (field N
    of proc(5) at index N - 3); [] where it cannot be read (no such process, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return []


def start_ticks(pid: int | str = "self") -> int | None:
    """When the process started, in clock ticks since boot (field 22), or None: with its
    number it names one process, never a later one given the same number."""
    fields = stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else None


def process_table() -> dict[int, tuple[int, int]]:
    """Every process's (parent, process group), read from /proc (zombies too)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = stat_fields(entry.name)
        if len(fields) > 2:
            table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def family(pid: int, table: dict[int, tuple[int, int]] | None = None) -> set[int]:
    """`pid`, every process below it however deep, and every process above it up to the
    first (`table`: `process_table()`, read now where not given)."""
    table = process_table() if table is None else table
    found, frontier = {pid}, {pid}
    while frontier:
        frontier = {p for p, (parent, _) in table.items() if parent in frontier} - found
        found |= frontier
    up = pid
    while up in table and table[up][0] not in found and table[up][0] > 0:
        up = table[up][0]
        found.add(up)
    return found
