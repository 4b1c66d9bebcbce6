"""nvfp4 triton_hopper's case 3: do the judge's shared arenas slow the calls on the GPU?
(written for the next session, not run yet)

Runs 49 and 52 read this case 1.32-1.39x the public evaluator's, and its case 2 at
1.03-1.06, where the large cases match. The worker's inputs and in-place outputs are
views of the judge's arenas (harness.judging.sharing: driver VMM allocations, packed at
512-byte boundaries, mapped in the worker from a file descriptor), where the public
evaluator's are torch's own memory. This times the public way (a 64 GB randn, then the
15 calls back to back, mean per call) with the same 15 inputs in torch's memory and as
the worker maps them (SharedAllocator, then WorkerArenas from its descriptors, in one
process), interleaved sample by sample; then each call's GPU interval (events between
calls, median of 30 samples), whose last calls show the steady state the host no longer
bounds.

    HARNESS_ROOT=. python docs/measurements/2026-11-30/scripts/diag_arena_case3.py [--repeats 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diag_window_case3 import CASE, ROOT, TASK, _load, _refill  # noqa: E402

sys.path.insert(0, str(ROOT))
from harness.judging.sharing import SharedAllocator, WorkerArenas  # noqa: E402
from harness.judging.structure import map_tensors  # noqa: E402


def as_worker_maps(data: list, shm: Path) -> tuple[list, SharedAllocator, WorkerArenas]:
    """The inputs copied into the judge's arenas and mapped back the worker's way (their
    CPU tensors stay this process's own, as the worker's private copies)."""
    alloc = SharedAllocator(shm)
    judge = [map_tensors(d, lambda t: alloc.empty_like_strided(t) if t.is_cuda else t) for d in data]
    for mine, theirs in zip(judge, data):
        _refill(mine, theirs)
    wire = [alloc.to_wire(d) for d in judge]
    notices, fds = alloc.pending()
    worker = WorkerArenas()
    worker.add(notices, [os.dup(fd) for fd in fds])
    alloc.forget_fds()
    return [worker.from_wire(w) for w in wire], alloc, worker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, str(TASK.parent))
    ref = _load(TASK / "reference.py", "reference")
    sub = _load(ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py", "submission")
    local = [ref.generate_input(**dict(CASE, seed=1111 + 42 * (i + 1))) for i in range(15)]
    mapped, _alloc, _worker = as_worker_maps(local, Path(tempfile.mkdtemp()))
    inputs = {"torch": local, "arena": mapped}
    for data in inputs.values():
        for d in data:
            ok, message = ref.check_implementation(d, sub.custom_kernel(d))
            assert ok, message
    torch.cuda.synchronize()

    def sample(name: str, per_call: bool) -> tuple[float, list[float]]:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(16 if per_call else 2)]
        torch.cuda.synchronize()
        dummy = torch.randn((16000, 1024, 1024), device="cuda")
        del dummy
        events[0].record()
        for i, d in enumerate(inputs[name]):
            sub.custom_kernel(d)
            if per_call:
                events[i + 1].record()
        events[-1].record()
        torch.cuda.synchronize()
        total = events[0].elapsed_time(events[-1]) * 1e3 / 15
        calls = [events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(15)] if per_call else []
        return total, calls

    names = list(inputs)
    results: dict[str, list[float]] = {n: [] for n in names}
    started = time.perf_counter()
    for r in range(args.repeats):
        for name in names[r % 2:] + names[: r % 2]:
            results[name].append(sample(name, per_call=False)[0])
    print(f"interleaved, {args.repeats} repeats each ({time.perf_counter() - started:.1f} s)")
    for name in names:
        v = results[name]
        q = statistics.quantiles(v, n=4)
        print(f"{name:6s} per call: median {statistics.median(v):7.1f} mean {statistics.fmean(v):7.1f} "
              f"q1 {q[0]:7.1f} q3 {q[2]:7.1f} µs")
    calls: dict[str, list[list[float]]] = {n: [] for n in names}
    for _ in range(30):
        for name in names:
            calls[name].append(sample(name, per_call=True)[1])
    for name, rows in calls.items():
        medians = [statistics.median(row[i] for row in rows) for i in range(15)]
        print(f"{name:6s} per-call GPU µs (median of 30): " + " ".join(f"{m:.0f}" for m in medians))


if __name__ == "__main__":
    main()
