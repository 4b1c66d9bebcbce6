"""The address-space cap of a process that runs submitted code on the CPU (RLIMIT_AS).

`worker.cpu_memory_limit_gb` is what the submission may map beyond what the process needs
to start: torch's libraries, the BLAS and OpenMP threads' buffers (about 72 MiB of address
space a thread here; a 16-core machine's pool alone maps over 1 GiB). A cap on the whole
process from its first instruction would depend on the machine: 3 GiB killed the worker
before it was ready on a 16-core H200 host (OpenBLAS could not allocate its buffers).

- The worker caps itself (`cap_self`) once started, torch imported and its thread pool
  running, before the submission is imported: the cap is what it maps then plus the
  setting.
- A task's own evaluator (foreign.py) imports the submission in a process the harness
  cannot enter before that: it is capped between fork and exec at what the judge maps
  (torch imported, the same libraries and threads) plus the setting (`whole_process_cap`).

An organiser's lower limit (`ulimit -v`) is kept, never raised. This module imports no
torch.
"""

from __future__ import annotations

import os
import resource


def mapped_bytes() -> int:
    """The address space this process maps now (VmSize)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def gb_to_bytes(gb: float) -> int:
    """The setting in bytes; 0 where it is off (0 or less)."""
    return int(gb * (1 << 30)) if gb > 0 else 0


def _within_current(cap: int) -> int:
    """`cap`, or the limit already in force where that is lower (soft or hard)."""
    for limit in resource.getrlimit(resource.RLIMIT_AS):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    return cap


def cap_self(extra: int) -> int | None:
    """Cap this process's address space at what it maps now plus `extra` bytes (soft and
    hard: it cannot be raised again); nothing when `extra` is 0. Returns the cap set."""
    if extra <= 0:
        return None
    cap = _within_current(mapped_bytes() + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return cap


def whole_process_cap(extra: int) -> int | None:
    """The cap for a child whose start the harness cannot enter: what this process (the
    judge, torch imported) maps now plus `extra`; None when `extra` is 0."""
    return _within_current(mapped_bytes() + extra) if extra > 0 else None
