"""Case 3 of triton_hopper: does the worker's wait between samples slow the sample after it? (run 35)

Run 34 (diag_window_case3.py) found no effect of what precedes the start event on the GPU
(the harness's window read lower than the public one) nor of inputs rewritten in place
(GPU and CPU tensors) between repeats. Left: between two samples the worker waits about
130 ms (the judge makes 15 fresh inputs and checks 15 outputs), polling with 0.1 ms naps
after `spin_seconds` (0.05 s), while the public evaluator's process never waits between
repeats. Interleaved repeat by repeat, each sample timed the public way (64 GB randn, 15
calls, mean per call):

  back2back  the sample right after the previous one (the public evaluator);
  naps130    130 ms of 0.1 ms naps first (the worker's wait after its spin);
  spin130    130 ms of polling without naps first (the worker with a long spin);
  naps_spin  125 ms of naps then 5 ms of polling (a short warm-up after a nap).

Then the GPU time of each of the 15 calls for back2back and naps130, and the audit events
one call raises (the worker's audit hook runs on each): counted with a hook installed
last, since a hook cannot be removed.

    python docs/measurements/2026-11-30/scripts/diag_idle_case3.py [--repeats 40]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
TASK = ROOT / "tasks" / "nvfp4_group_gemm"
CASE = {"g": 2, "m": [128, 384], "n": [4096, 4096], "k": [1536, 1536], "seed": 1111}


def _load(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wait(seconds: float, naps_until: float) -> None:
    """Poll for `seconds`: naps of 0.1 ms until `naps_until` seconds in, then busy."""
    start = time.perf_counter()
    while (now := time.perf_counter()) - start < seconds:
        if now - start < naps_until:
            time.sleep(0.0001)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    sys.path.insert(0, str(TASK.parent))
    ref = _load(TASK / "reference.py", "reference")
    sub = _load(ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py", "submission")
    data = [ref.generate_input(**dict(CASE, seed=1111 + 42 * (i + 1))) for i in range(15)]
    for d in data:
        ok, message = ref.check_implementation(d, sub.custom_kernel(d))
        assert ok, message
    torch.cuda.synchronize()
    waits = {"back2back": (0.0, 0.0), "naps130": (0.13, 0.13), "spin130": (0.13, 0.0),
             "naps_spin": (0.13, 0.125)}

    def sample(name: str, per_call: bool = False) -> tuple[float, list[float]]:
        _wait(*waits[name])
        torch.cuda.synchronize()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(16 if per_call else 2)]
        dummy = torch.randn((16000, 1024, 1024), device="cuda")
        del dummy
        events[0].record()
        for i, d in enumerate(data):
            sub.custom_kernel(d)
            if per_call:
                events[i + 1].record()
        events[-1].record()
        torch.cuda.synchronize()
        total = events[0].elapsed_time(events[-1]) * 1e3 / len(data)
        calls = [events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(15)] if per_call else []
        return total, calls

    names = list(waits)
    results: dict[str, list[float]] = {n: [] for n in names}
    started = time.perf_counter()
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            results[name].append(sample(name)[0])
    print(f"interleaved, {args.repeats} repeats each ({time.perf_counter() - started:.1f} s)")
    for name in names:
        v = results[name]
        q = statistics.quantiles(v, n=4)
        print(f"{name:9s} per call: median {statistics.median(v):7.1f} mean {statistics.fmean(v):7.1f} "
              f"q1 {q[0]:7.1f} q3 {q[2]:7.1f} µs")
    calls: dict[str, list[list[float]]] = {"back2back": [], "naps130": []}
    for _ in range(20):
        for name in calls:
            calls[name].append(sample(name, per_call=True)[1])
    for name, rows in calls.items():
        medians = [statistics.median(row[i] for row in rows) for i in range(15)]
        print(f"{name:9s} per-call GPU µs (median of 20): " + " ".join(f"{m:.0f}" for m in medians))
    counts: collections.Counter = collections.Counter()
    sys.addaudithook(lambda event, _args: counts.update((event,)))
    for _ in range(4):
        sample("back2back")
    calls_made = 4 * len(data)
    total = sum(counts.values())
    print(f"audit events per call (4 samples): {total / calls_made:.1f}; by event: "
          + ", ".join(f"{e} {c / calls_made:.1f}" for e, c in counts.most_common(8)))


if __name__ == "__main__":
    main()
