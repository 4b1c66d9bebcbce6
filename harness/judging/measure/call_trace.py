"""A per-sample trace of a timed case, kept where `timing.trace_calls` is on: what the
judge's and the worker's hosts did around each sample (context switches, page faults,
garbage collections, the CPU each ran on), beside the sample's own times. A diagnostic
for finding where slow samples come from (benchmarks/call_trace.py reads it); the score
never reads it.
"""

from __future__ import annotations

import ctypes
import gc
import math
import resource
from collections.abc import Callable
from typing import Any

# The worker's own breakdown of a sample that a trace keeps (ns; protocol.Mailbox.BREAKDOWN).
_BREAKDOWN = ("host_ns", "pre_ns", "lead_ns", "sync_ns", "copy_ns", "busy_ns")


def _sched_getcpu() -> Callable[[], int]:
    try:
        return ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):  # not glibc: the CPU goes unreported
        return lambda: -1


_collections = [0]  # the interpreter's garbage collections since HostUsage was first made


def _count_collection(phase: str, info: dict) -> None:
    if phase == "stop":
        _collections[0] += 1


class HostUsage:
    """What the calling thread's host did between two points: its voluntary and
    involuntary context switches, minor page faults, the interpreter's garbage
    collections, and the CPU it ran on at each end. Its functions are taken as it is
    made (in the worker, before the submission is imported); collections are counted by a
    `gc.callbacks` hook, a list index per reading rather than `gc.get_stats`' dicts."""

    def __init__(self) -> None:
        self._rusage = resource.getrusage
        self._who = resource.RUSAGE_THREAD
        self._cpu = _sched_getcpu()
        if _count_collection not in gc.callbacks:
            gc.callbacks.append(_count_collection)

    def now(self) -> tuple[int, ...]:
        """A reading, for `since`."""
        ru = self._rusage(self._who)
        return ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, _collections[0], self._cpu()

    def since(self, then: tuple[int, ...]) -> dict[str, int]:
        """What happened since the reading `then`."""
        now = self.now()
        return {"vcsw": now[0] - then[0], "ivcsw": now[1] - then[1],
                "minflt": now[2] - then[2], "gc": now[3] - then[3],
                "cpu_before": then[4], "cpu_after": now[4]}


def sample_record(reply: dict[str, Any], call: int, probe: bool, scored: bool,
                  started: float) -> dict[str, Any]:
    """One timed sample's trace record: its number, whether it was a probe (no GPU sleep
    before it) and whether the score reads it (on the CPU every sample is both), the GPU sleep
    before it (cycles), its event time per call and the judge's round trip (ns), its
    start on the judge's clock since the case's timed samples began and its whole length
    (s), the worker's breakdown (ns), and both hosts' accounts (`HostUsage.since`)."""
    record = {"call": call, "probe": probe, "scored": scored, "ahead": int(reply.get("ahead", 0)),
              "ns": float(reply["ns"]), "rt": float(reply.get("rt", 0.0)),
              "t": float(reply.get("began", started)) - started,
              "wall": float(reply.get("wall", 0.0))}
    for key in _BREAKDOWN:
        value = finite_number(reply.get(key))
        if value is not None:
            record[key] = value
    for side, key in (("worker", "trace"), ("judge", "judge_trace")):
        usage = reply.get(key)
        if isinstance(usage, dict):  # the worker's is its own account: numbers only kept
            record[side] = {k: int(v) for k, v in usage.items()
                            if isinstance(k, str) and finite_number(v) is not None}
    return record


def finite_number(value: Any) -> float | None:
    """A number a process reported, as a finite float; None where it is no number (a
    bool, an infinity, a NaN, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None
