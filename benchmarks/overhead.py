"""Where the per-call harness overhead goes, on the GPU: floors and the harness.

    python benchmarks/overhead.py [--out FILE]

1. Floors in this one process (no judge, no second process): an event record plus its
   synchronize, and an empty kernel plus a device-wide synchronize (median of 2000).
2. The empty `custom_kernel` (benchmarks/tasks/empty_call) through the full harness in
   benchmark mode with the default settings (`VARIANTS`: overrides to compare beside it).
   For each: the judge's gap (round trip minus event time) median and p90, and the
   worker's own breakdown (host, synchronize, copy, transport).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _load import ROOT, run_submit

TASK = ROOT / "benchmarks" / "tasks" / "empty_call"
VARIANTS = {
    "default": {},
}


def floors(n: int = 2000) -> dict[str, float]:
    """Median µs, in this one process, of the steps of a worker's call, alone and together."""
    import torch

    plain = torch.cuda.Event()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out: dict[str, list[float]] = {k: [] for k in (
        "event_record_sync_us", "empty_kernel_device_sync_us", "timing_pair_device_sync_us",
        "timing_pair_event_sync_us", "worker_sequence_us", "worker_sequence_sync_part_us")}
    torch.cuda.synchronize()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        plain.record()
        plain.synchronize()
        t1 = time.perf_counter_ns()
        torch.cuda._sleep(0)
        torch.cuda.synchronize()
        t2 = time.perf_counter_ns()
        start.record()
        end.record()
        torch.cuda.synchronize()
        t3 = time.perf_counter_ns()
        start.record()
        end.record()
        end.synchronize()
        t4 = time.perf_counter_ns()
        plain.record()  # what the worker does per call: warm event, start, call, end, sync
        plain.synchronize()
        start.record()
        end.record()
        t5 = time.perf_counter_ns()
        torch.cuda.synchronize()
        start.elapsed_time(end)
        t6 = time.perf_counter_ns()
        for key, value in zip(out, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t6 - t4, t6 - t5)):
            out[key].append(value / 1e3)
    return {k: statistics.median(v) for k, v in out.items()}

def variant(name: str, settings: dict, tmp: Path) -> dict:
    import yaml

    config = tmp / f"{name}.yaml"
    config.write_text(yaml.safe_dump(settings or {"timing": {}}))
    doc, proc, _ = run_submit(TASK / "submission.py", tmp / f"{name}.json", "--task", str(TASK),
                              "--mode", "benchmark", "--db", str(tmp / "overhead.db"),
                              "--config", str(config))
    if not doc:
        raise RuntimeError(f"{name}: no result\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    case = doc["phases"][0]["cases"][0]
    clocks = case["integrity"]["clocks"]
    return {"status": case["status"], "calls": case["stats"]["calls"],
            "base_calibration_us": {k: v / 1e3 for k, v in (doc.get("calibration") or {}).items()
                                    if k.endswith("_ns")},
            "case_calibration_us": {k: v / 1e3 for k, v in case["integrity"]["calibration"].items()
                                    if k.endswith("_ns")},
            "event_mean_us": case["stats"]["mean"] / 1e3,
            "gap_median_us": clocks["gap_median_ns"] / 1e3, "gap_p90_us": clocks["gap_p90_ns"] / 1e3,
            "worker_says_us": {k: v / 1e3 for k, v in case["integrity"]["worker_says"].items()}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = {"floors": floors(), "variants": {}}
    print("floors (one process): " + ", ".join(f"{k} {v:.1f}" for k, v in report["floors"].items()))
    tmp = Path(tempfile.mkdtemp())
    for name, settings in VARIANTS.items():
        row = variant(name, settings, tmp)
        report["variants"][name] = row
        says = " ".join(f"{k[:-3]} {v:.1f}" for k, v in row["worker_says_us"].items())
        print(f"{name:22s} {row['status']:7s} calls {row['calls']:5} event {row['event_mean_us']:.2f} "
              f"| gap median {row['gap_median_us']:.1f} p90 {row['gap_p90_us']:.1f} | {says}",
              flush=True)
        print(f"{'':22s} calibration (no-op) gaps before import {row['base_calibration_us']}, "
              f"per case {row['case_calibration_us']}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
