"""Measure the harness itself on the GPU: accuracy, repeatability, overhead and cost.

    python benchmarks/fidelity.py [--out DIR] [--repeats 5] [--skip-leaderboard]

1. Known workloads (benchmarks/tasks/: a 1 GiB copy, a bf16 8192^3 matmul, a ~5 µs
   kernel, an empty call) through the full harness (judge, worker, protocol), and the same
   workloads timed independently in this process two ways: triton.testing.do_bench (L2
   flushed, calls back to back, median), and "isolated" calls with the harness's own
   semantics but none of its processes (flush the L2, wait for the GPU, idle for the gap
   the harness left between calls, then events around one call; mean). Both ratios:
   do_bench hides each call's host launch time behind the previous call and keeps the
   GPU busy; the isolated calls show what the judge/worker protocol itself adds.
2. The Triton nvfp4_group_gemm example evaluated --repeats times in separate runs: the
   spread (max/min - 1) of each case's mean and of the geometric mean.
3. The per-call harness overhead (judge round trip minus event time; median and 90th
   percentile, from the empty call), calls per second, and the wall time of a full
   leaderboard evaluation of each example submission.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _load import ROOT, run_submit

from harness.results.document import case_flags
from harness.scores import geomean

WORKLOADS = ["copy_1gib", "matmul_bf16", "small_kernel", "empty_call"]


def harness_run(submission: Path, task: str, mode: str, out: Path, extra=()) -> tuple[dict, float]:
    """A full harness evaluation: its result document and wall time (raises without one)."""
    doc, proc, wall = run_submit(submission, out, "--task", task, "--mode", mode,
                                 "--db", str(out.parent / "fidelity.db"), *extra)
    if not doc:
        raise RuntimeError(f"{submission} produced no result:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return doc, wall


def independent(task_dir: Path, gap_us: float, ahead_us: float) -> tuple[float, float, dict]:
    """(do_bench median, isolated mean), µs, of the task's submission on its benchmark
    input, in this process (see the module's docstring), and the clocks read during
    do_bench."""
    import importlib.util
    import threading

    import torch
    import triton.testing
    import yaml

    from harness.judging import read_clocks

    sys.path.insert(0, str(task_dir))
    for name in ("task", "reference"):
        sys.modules.pop(name, None)
    import reference

    spec = yaml.safe_load((task_dir / "task.yml").read_text())
    case = dict(spec["benchmarks"][0])
    data = reference.generate_input(**case, device="cuda")
    loaded = importlib.util.spec_from_file_location("fidelity_sub", task_dir / "submission.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    during: dict = {}  # the SM clock half a second into do_bench's back-to-back calls
    reader = threading.Timer(0.5, lambda: during.update(read_clocks()))
    reader.start()
    ms = triton.testing.do_bench(lambda: module.custom_kernel(data), warmup=100, rep=1000,
                                 return_mode="median")
    reader.join()
    alone = isolated(lambda: module.custom_kernel(data), gap_us, ahead_us)
    sys.path.remove(str(task_dir))
    data = None  # free the inputs before the next workload
    torch.cuda.empty_cache()
    return ms * 1e3, alone, during


def isolated(fn, gap_us: float, ahead_us: float, seconds: float = 2.0, warmup: int = 5) -> float:
    """Mean µs of single calls as the harness times them, in one process: flush the L2
    (twice its size, as the judge does), wait for the GPU, stay idle for `gap_us` (the
    harness's measured gap between calls), optionally let the GPU sleep `ahead_us` (as
    the harness's hidden launch window), then events around one call and a device synchronize."""
    import time

    import torch

    from harness.judging import read_clocks

    props = torch.cuda.get_device_properties(0)
    l2 = max(int(getattr(props, "L2_cache_size", 0) or 0), 50 << 20)
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    mhz = read_clocks().get("sm_max_mhz") or 2000.0  # as the judge converts µs to cycles
    times: list[float] = []
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop or len(times) < warmup + 10:
        flush.zero_()
        torch.cuda.synchronize()
        idle_until = time.perf_counter() + gap_us / 1e6
        while time.perf_counter() < idle_until:
            pass
        if ahead_us > 0:
            torch.cuda._sleep(int(ahead_us * mhz))
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    timed = times[warmup:]
    return sum(timed) / len(timed)


def _launch_ahead_us(config: str | None, task_dir: Path) -> float:
    """The hidden launch window the harness uses for this task under `config` (0 when the
    settings count host launch time)."""
    from harness.loading.task_folder import load_task
    from harness.settings import Settings

    timing = Settings.load(Path(config) if config else None).timing
    if timing.host_launch == "counted":
        return 0.0
    return float(load_task(str(task_dir)).timing.get("hidden_window_us", timing.hidden_window_us))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp()))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-leaderboard", action="store_true")
    parser.add_argument("--config", help="extra harness settings (YAML)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated known workloads to time (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    extra = ["--config", args.config] if args.config else []
    report: dict = {"workloads": {}, "nvfp4_repeats": [], "leaderboard_walls": {}}

    print("== 1. known workloads: harness vs triton.testing.do_bench (µs)")
    for name in [w for w in args.workloads.split(",") if w and w != "none"]:
        task_dir = ROOT / "benchmarks" / "tasks" / name
        doc, wall = harness_run(task_dir / "submission.py", str(task_dir), "benchmark",
                                args.out / f"{name}.json", extra)
        case = doc["phases"][0]["cases"][0]
        stats, clocks = case["stats"] or {}, case["integrity"].get("clocks", {})
        gap_us = clocks.get("gap_median_ns", 0) / 1e3
        ahead_us = _launch_ahead_us(args.config, task_dir)
        ind, alone, bench_clocks = independent(task_dir, gap_us, ahead_us)
        mean_us = stats.get("mean", float("nan")) / 1e3
        row = {"harness_mean_us": mean_us, "harness_median_us": stats.get("median", 0) / 1e3,
               "calls": stats.get("calls"), "rse": stats.get("rse"), "do_bench_median_us": ind,
               "ratio": mean_us / ind if ind else None,
               "isolated_mean_us": alone, "ratio_isolated": mean_us / alone if alone else None,
               "gap_median_us": gap_us,
               "gap_p90_us": clocks.get("gap_p90_ns", 0) / 1e3,
               "calls_per_second": stats.get("calls", 0) / case["integrity"].get("timing_seconds", 1),
               "worker_says": case["integrity"].get("worker_says"), "status": case["status"],
               "flags": case["flags"], "wall_s": wall, "sm_mhz": case["integrity"].get("sm_mhz"),
               "do_bench_clocks": bench_clocks}
        report["workloads"][name] = row
        print(f"{name:14s} harness mean {mean_us:10.2f} median {row['harness_median_us']:10.2f} "
              f"calls {row['calls']:5} | do_bench {ind:10.2f} | ratio {row['ratio']:.4f} | "
              f"isolated {alone:10.2f} | ratio {row['ratio_isolated']:.4f} | "
              f"gap median {row['gap_median_us']:.1f} p90 {row['gap_p90_us']:.1f} | "
              f"{row['calls_per_second']:.0f} calls/s | {case['status']} | SM MHz {row['sm_mhz']}"
              f" | during do_bench {bench_clocks}",
              flush=True)
        (args.out / "fidelity.json").write_text(json.dumps(report, indent=2))

    print(f"== 2. nvfp4 Triton example, {args.repeats} separate benchmark runs")
    sub = ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py"
    for i in range(args.repeats):
        doc, wall = harness_run(sub, "nvfp4_group_gemm", "benchmark", args.out / f"nv{i}.json", extra)
        cases = doc["phases"][0]["cases"]
        means = [c["score_ns"] / 1e3 if c["score_ns"] else float("nan") for c in cases]
        host = [c["integrity"].get("worker_says", {}).get("host_ns", 0) / 1e3 for c in cases]
        report["nvfp4_repeats"].append({"means_us": means, "geomean_us": geomean(means),
                                        "wall_s": wall, "worker_host_us": host,
                                        "flags": case_flags(doc)})
        print(f"run {i}: " + " ".join(f"{m:9.2f}" for m in means) + f" | geo {geomean(means):9.2f}"
              f" | {wall:.1f} s | worker host µs " + " ".join(f"{h:.0f}" for h in host), flush=True)
    runs = report["nvfp4_repeats"]
    if not runs:
        (args.out / "fidelity.json").write_text(json.dumps(report, indent=2))
        return 0
    spreads = [max(r["means_us"][j] for r in runs) / min(r["means_us"][j] for r in runs) - 1
               for j in range(len(runs[0]["means_us"]))]
    geo = [r["geomean_us"] for r in runs]
    report["nvfp4_spread"] = {"per_case": spreads, "geomean": max(geo) / min(geo) - 1}
    print("spread per case: " + " ".join(f"{s:.2%}" for s in spreads)
          + f" | geomean spread {max(geo) / min(geo) - 1:.2%}")

    empty = report["workloads"].get("empty_call")
    if empty:
        print(f"== 3. per-call overhead (empty call): median {empty['gap_median_us']:.1f} µs, "
              f"p90 {empty['gap_p90_us']:.1f} µs, {empty['calls_per_second']:.0f} calls/s")
    if not args.skip_leaderboard:
        for path in sorted((ROOT / "submissions").rglob("*.py")):
            doc, wall = harness_run(path, path.parent.name, "leaderboard",
                                    args.out / f"lb-{path.parent.name}-{path.stem}.json", extra)
            report["leaderboard_walls"][f"{path.parent.name}/{path.name}"] = {
                "wall_s": wall, "status": doc["status"], "score_us": (doc["score_ns"] or 0) / 1e3,
                "flags": case_flags(doc)}
            print(f"leaderboard {path.parent.name}/{path.name}: {wall:.1f} s, {doc['status']}, "
                  f"score {(doc['score_ns'] or 0) / 1e3:.2f} µs", flush=True)
    (args.out / "fidelity.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
