"""Case 3 of triton_hopper: does what runs on the GPU before the start event matter? (run 34)

Run 33 (diag_case3.py) found no effect of fresh inputs, refreshed CPU inputs or a second
CUDA context, but its rounds moved 90-197 µs per call: a slow drift larger than the effect
sought. Run 25 (diag_window.py) found no clock effect of a sleep window on plain matmuls;
this submission differs: each call waits for the previous call's table copy. This
interleaves the variants repeat by repeat, so that a drift weighs on all alike:

  public   what eval_better_bench_grouped_gemm.py does: a 64 GB randn, freed, then the
           start event (the GPU busy at full memory bandwidth for tens of ms);
  harness  what the harness does: its L2 flush (2x L2, zero_), a synchronize, then GPU sleep
           for 1.5 x 15 x the host time per call + 20 µs (the worker's `ahead`), then start;
  sleep20  the flush, then 20 ms of GPU sleep (the task's whole window);
  busy     the flush, a 4 GB randn (about a ms of full load), then the sleep of `harness`;
  fresh    `public`, with the 15 inputs rewritten in place first (GPU and CPU tensors), as
           the judge writes fresh inputs into the same slots before every sample.

Each variant's samples are printed as median and mean per call; then, for `public` and
`harness`, the GPU time of each of the 15 calls (events between calls), to see whether a
difference sits in the first calls (clocks ramping after the window) or in all of them.

    python docs/measurements/2026-11-30/scripts/diag_window_case3.py [--repeats 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
TASK = ROOT / "tasks" / "nvfp4_group_gemm"
CASE = {"g": 2, "m": [128, 384], "n": [4096, 4096], "k": [1536, 1536], "seed": 1111}
SM_MHZ = 1980.0


def _load(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _refill(data, fresh) -> None:
    """Copy `fresh`'s tensors into `data`'s, in place (the judge's refill of a slot)."""
    if isinstance(data, torch.Tensor):
        data.copy_(fresh)
    elif isinstance(data, (list, tuple)):
        for a, b in zip(data, fresh):
            _refill(a, b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, str(TASK.parent))
    ref = _load(TASK / "reference.py", "reference")
    sub = _load(ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py", "submission")
    data = [ref.generate_input(**dict(CASE, seed=1111 + 42 * (i + 1))) for i in range(15)]
    for d in data:
        ok, message = ref.check_implementation(d, sub.custom_kernel(d))
        assert ok, message
    torch.cuda.synchronize()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(l2, 50 << 20) * 2 // 4, dtype=torch.int32, device="cuda")
    spares = [[ref.generate_input(**dict(CASE, seed=7000 + 97 * r + i)) for i in range(15)]
              for r in range(3)]
    turn = [0]
    host_ns = [170e3]  # per call, updated from the `harness` samples as the worker does

    def before(name: str) -> None:
        torch.cuda.synchronize()
        if name == "fresh":
            turn[0] += 1
            _refill(data, spares[turn[0] % len(spares)])
            torch.cuda.synchronize()
        if name in ("public", "fresh"):
            dummy = torch.randn((16000, 1024, 1024), device="cuda")
            del dummy
            return
        flush.zero_()
        torch.cuda.synchronize()
        if name == "busy":
            dummy = torch.randn((1000, 1024, 1024), device="cuda")
            del dummy
        ahead_us = 20000.0 if name == "sleep20" else min(
            20000.0, 1.5 * 15 * statistics.median(host_ns[-20:]) / 1e3 + 20)
        torch.cuda._sleep(int(ahead_us * SM_MHZ))

    def sample(name: str, per_call: bool) -> tuple[float, list[float]]:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(16 if per_call else 2)]
        before(name)
        events[0].record()
        t0 = time.perf_counter_ns()
        for i, d in enumerate(data):
            sub.custom_kernel(d)
            if per_call:
                events[i + 1].record()
        host = (time.perf_counter_ns() - t0) / len(data)
        events[-1].record()
        torch.cuda.synchronize()
        if name == "harness":
            host_ns.append(host)
        total = events[0].elapsed_time(events[-1]) * 1e3 / len(data)
        calls = [events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(15)] if per_call else []
        return total, calls

    names = ["public", "harness", "sleep20", "busy", "fresh"]
    results: dict[str, list[float]] = {n: [] for n in names}
    started = time.perf_counter()
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:  # rotate the order too
            results[name].append(sample(name, per_call=False)[0])
    print(f"interleaved, {args.repeats} repeats each ({time.perf_counter() - started:.1f} s); "
          f"harness ahead from host {statistics.median(host_ns[-20:]) / 1e3:.1f} µs per call")
    for name in names:
        v = results[name]
        q = statistics.quantiles(v, n=4)
        print(f"{name:8s} per call: median {statistics.median(v):7.1f} mean {statistics.fmean(v):7.1f} "
              f"q1 {q[0]:7.1f} q3 {q[2]:7.1f} µs")
    calls: dict[str, list[list[float]]] = {"public": [], "harness": []}
    for _ in range(30):
        for name in calls:
            calls[name].append(sample(name, per_call=True)[1])
    for name, rows in calls.items():
        medians = [statistics.median(row[i] for row in rows) for i in range(15)]
        print(f"{name:8s} per-call GPU µs (median of 30): " + " ".join(f"{m:.0f}" for m in medians))
    for name in ("public", "harness"):  # blocks of one variant, for the clock log beside
        t = time.time()
        v = [sample(name, per_call=False)[0] for _ in range(40)]
        print(f"block {name:8s} from {t:.2f} to {time.time():.2f}: median {statistics.median(v):.1f} µs")


if __name__ == "__main__":
    main()
