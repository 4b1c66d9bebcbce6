"""Does what the GPU does right before the start event change a short call's event time?

mxfp4_mm triton_dot_scaled's calls read 0.7-1.4 µs longer under the harness than under
amd_202602/eval.py in every parity run (runs 20, 50, 57, 70, 75), whatever the case's
length (12-66 µs): a constant, not a ratio, and the harness's run-to-run spread there is
0.3%. The public evaluator fills a 62.5 GiB `randn` right before its start event, every
SM busy until then; the worker, before its start event, sleeps the GPU (one thread of one
SM, `torch.cuda._sleep`) for 1 ms or more on this task (its 20 ms window, sized down to
1.5x the host launch), after its 1 MiB miniature of the flush. vectoradd's window is
100 µs and its short calls show no such offset. One hypothesis: SMs idle for 1 ms start
the next kernel late (power gating or clocks). This times the example's calls in one
bare process, rounds of every variant in a shuffled order:

  public         randn(16000, 1024, 1024) as amd_202602's clear_l2_cache_large, then start
  harness        L2 flush (2x L2 written), sleep 1 cycle, 1 MiB fill, synchronize, then
                 a 1 ms GPU sleep, then start: the worker's order (worker.py `_run`)
  harness_100us  the same with a 100 µs sleep (vectoradd's window)
  fill_last      L2 flush, sleep 1 ms, then the 1 MiB fill, then start
  busy_last      L2 flush, sleep 1 ms, then a 256 MiB fill (every SM; its length is printed)
  public_idle    randn as public, then a 1 ms GPU sleep, then start

    python docs/measurements/2026-12-01/scripts/pre_call_idle.py --rounds 150 --cases 0 4
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[4]
TASK = ROOT / "tasks" / "mxfp4_mm"
SUB = ROOT / "submissions" / "mxfp4_mm" / "triton_dot_scaled.py"


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def timed_call(pre, kernel, data, start, end) -> float:
    """`pre()` (the pre-call work), then one call between the two events: its µs."""
    torch.cuda.synchronize()
    pre()
    start.record()
    output = kernel(data)
    end.record()
    torch.cuda.synchronize()
    del output
    return start.elapsed_time(end) * 1e3


def variant_rows(title: str, times: dict[str, list[float]], width: int) -> dict[str, dict]:
    """Per variant: count, mean, median, p10, p90 (µs), printed under `title`."""
    rows = {}
    for name, values in times.items():
        values.sort()
        rows[name] = {"n": len(values), "mean_us": statistics.fmean(values),
                      "median_us": statistics.median(values),
                      "p10_us": values[len(values) // 10],
                      "p90_us": values[(9 * len(values)) // 10]}
    print(title)
    for name, row in rows.items():
        print(f"  {name:{width}s} mean {row['mean_us']:8.2f} median {row['median_us']:8.2f} "
              f"p10 {row['p10_us']:8.2f} p90 {row['p90_us']:8.2f} µs (n={row['n']})")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--cases", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    sys.path[:0] = [str(TASK), str(TASK.parent)]  # task.py, then tasks/utils.py
    reference = _module("reference", TASK / "reference.py")
    submission = _module("submission", SUB)
    cases = yaml.safe_load((TASK / "task.yml").read_text())["benchmarks"]

    dev = torch.device("cuda")
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4,
                        dtype=torch.float32, device=dev)
    mini = torch.empty(1 << 18, dtype=torch.float32, device=dev)  # 1 MiB
    busy = torch.empty(1 << 26, dtype=torch.float32, device=dev)  # 256 MiB, timed below
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    # cycles of torch.cuda._sleep per µs, from one long sleep
    torch.cuda.synchronize()
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    per_us = 20_000_000 / (start.elapsed_time(end) * 1e3)

    def public() -> None:
        dummy = torch.randn((16000, 1024, 1024), device=dev)
        del dummy

    def harness(sleep_us: float) -> None:
        flush.zero_()
        torch.cuda._sleep(1)
        mini.fill_(1.0)
        torch.cuda.synchronize()
        torch.cuda._sleep(int(sleep_us * per_us))

    def fill_last() -> None:
        flush.zero_()
        torch.cuda.synchronize()
        torch.cuda._sleep(int(1000 * per_us))
        mini.fill_(1.0)

    def busy_last() -> None:
        flush.zero_()
        torch.cuda.synchronize()
        torch.cuda._sleep(int(1000 * per_us))
        busy.fill_(1.0)

    def public_idle() -> None:
        public()
        torch.cuda._sleep(int(1000 * per_us))

    variants = {"public": public, "harness": lambda: harness(1000),
                "harness_100us": lambda: harness(100), "fill_last": fill_last,
                "busy_last": busy_last, "public_idle": public_idle}
    # the busy fill's own length, for the record
    torch.cuda.synchronize(); start.record(); busy.fill_(1.0); end.record(); torch.cuda.synchronize()
    report = {"sleep_cycles_per_us": per_us, "busy_fill_us": start.elapsed_time(end) * 1e3,
              "device": torch.cuda.get_device_name(0), "cases": {}}
    rng = random.Random(1)
    for index in args.cases:
        data = reference.generate_input(**cases[index])
        submission.custom_kernel(data)  # compile and warm
        torch.cuda.synchronize()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                times[name].append(timed_call(variants[name], submission.custom_kernel, data,
                                              start, end))
        rows = variant_rows(f"case {index} {cases[index]}", times, 14)
        report["cases"][str(index)] = {"args": cases[index], "variants": rows}
    print(f"sleep cycles per µs {per_us:.1f}; busy fill {report['busy_fill_us']:.1f} µs")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pre_call_idle.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
