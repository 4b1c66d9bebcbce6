"""`--mode profile`: a few calls of the submission under the PyTorch profiler.

The worker runs the calls and sends back a small JSON summary (never a trace): on a GPU
the kernels launched, with their calls and GPU time; on the CPU the operators, with their
calls and CPU (self) time. With it, the wall time of a call and the share of it that the
device was not busy with those kernels or operators: the host's share (Python, dispatch,
launches, synchronisation). The judge reads the summary as untrusted input (`clean`).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

ROWS = 20  # kernels (GPU) or operators (CPU) listed per case, longest first
NAME_LIMIT = 300  # characters of a kernel or operator name kept (C++ templates run long)
TOOL = "torch.profiler"
# Lines the profiler's own libraries write to stderr (kineto), not the submission.
_PROFILER_LOG = re.compile(r"^(USDT|INFO|WARNING|ERROR):\d{4}-\d\d-\d\d [\d:]+ \d+:\d+ \S+\.cpp:\d+\]")


def profile_calls(torch: Any, fn: Callable[[Any], Any], inputs: Sequence[Any], calls: int,
                  cuda: bool, rows: int) -> dict[str, Any]:
    """Run `fn` once unrecorded, then `calls` times under the profiler (inputs in turn);
    return the JSON-able summary (`summarize`)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    walls: list[float] = []
    plan = schedule(wait=0, warmup=1, active=calls, repeat=1)
    # One cycle: keeping its events (acc_events, newer torch) changes nothing but silences
    # torch's warning that a cycle's end clears them, which the submission's stderr showed.
    extra = ({"acc_events": True}
             if "acc_events" in inspect.signature(profile.__init__).parameters else {})
    with _stderr_without_profiler_logs(), profile(activities=activities, schedule=plan,
                                                  **extra) as prof:
        for i in range(calls + 1):
            data = inputs[i % len(inputs)] if inputs else None
            t0 = time.perf_counter_ns()
            fn(data)
            if cuda:
                torch.cuda.synchronize()
            if i:  # the first call is the profiler's warm-up
                walls.append(float(time.perf_counter_ns() - t0))
            prof.step()
    return summarize(prof.key_averages(), walls, cuda, rows, torch.__version__)


def summarize(events: Any, walls: list[float], cuda: bool, rows: int,
              version: str = "") -> dict[str, Any]:
    """The summary of profiled calls from torch's averaged events.

    On a GPU the rows are the kernels (and copies) that ran on the device, with their GPU
    time; on the CPU the operators, with their self CPU time (no double counting of
    nested operators). `device_ns_per_call` sums every row, `host_share` is the rest of
    the call's wall time."""
    picked = []
    for e in events:
        name = str(e.key)
        if name.startswith("ProfilerStep") or getattr(e, "is_user_annotation", False):
            continue
        on_device = str(getattr(e, "device_type", "")).endswith("CUDA")
        if cuda and not on_device:
            continue
        us = (_device_us(e) if cuda else float(e.self_cpu_time_total))
        if cuda or not on_device:
            picked.append((name, int(e.count), us * 1e3))
    picked.sort(key=lambda r: r[2], reverse=True)
    calls = max(len(walls), 1)
    busy = sum(ns for _, _, ns in picked) / calls
    wall = statistics.mean(walls) if walls else 0.0
    return {
        "tool": TOOL, "version": version, "kind": "kernels" if cuda else "operators",
        "calls": len(walls), "wall_ns_per_call": wall, "device_ns_per_call": busy,
        "host_share": max(0.0, 1.0 - busy / wall) if wall > 0 else None,
        "rows": [{"name": name[:NAME_LIMIT], "calls": n, "total_ns": ns,
                  "mean_ns": ns / n if n else 0.0} for name, n, ns in picked[:rows]],
        "rows_left_out": max(0, len(picked) - rows),
    }


def _device_us(event: Any) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total", "device_time_total"):
        value = getattr(event, attr, None)
        if isinstance(value, (int, float)):
            return float(value)
    return 0.0


def clean(raw: Any, rows: int) -> dict[str, Any]:
    """The worker's summary rebuilt from checked fields only (it comes from untrusted code).

    Raises ValueError when it is not shaped like `summarize`'s output."""
    if not isinstance(raw, dict) or not isinstance(raw.get("rows"), list):
        raise ValueError("the worker's profile is not a summary")
    out = {
        "tool": TOOL, "version": str(raw.get("version", ""))[:40],
        "kind": "kernels" if raw.get("kind") == "kernels" else "operators",
        "calls": int(_checked_number(raw.get("calls"))),
        "wall_ns_per_call": _checked_number(raw.get("wall_ns_per_call")),
        "device_ns_per_call": _checked_number(raw.get("device_ns_per_call")),
        "host_share": (min(1.0, _checked_number(raw.get("host_share")))
                       if raw.get("host_share") is not None else None),
        "rows": [], "rows_left_out": int(_checked_number(raw.get("rows_left_out"))),
    }
    for row in raw["rows"][:rows]:
        if not isinstance(row, dict):
            raise ValueError("a row of the worker's profile is not a mapping")
        out["rows"].append({"name": str(row.get("name", ""))[:NAME_LIMIT],
                            "calls": int(_checked_number(row.get("calls"))),
                            "total_ns": _checked_number(row.get("total_ns")),
                            "mean_ns": _checked_number(row.get("mean_ns"))})
    return out


def _checked_number(value: Any) -> float:
    """A finite, non-negative number of the worker's profile; anything else is refused
    (ValueError: the judge reads the profile as a protocol error)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"the worker's profile holds {value!r} where a number belongs")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"the worker's profile holds an impossible number {value!r}")
    return float(value)


@contextlib.contextmanager
def _stderr_without_profiler_logs() -> Iterator[None]:
    """Send file descriptor 2 to a file while the profiler runs, then pass on every line
    but the profiler's own log lines (the worker's stderr is shown as the submission's)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [line for line in tmp.read().decode(errors="replace").splitlines(True)
                    if not _PROFILER_LOG.match(line)]
            if kept:
                os.write(2, "".join(kept).encode())
