"""The start-up cost of the worker's sandbox: worker starts with and without Landlock.

    python benchmarks/sandbox_startup.py [--runs 10] [--device cpu|cuda] [--out FILE]

Each start is what `Judge.start` does before the submission loads: make the scratch
folder, build the policy and its ruleset (sandbox on), fork and exec the worker, which
imports torch (and on CUDA initialises the device) and answers READY. Starts alternate
between the two settings so that drifts (page cache, clocks) hit both alike. Prints the
medians and the policy's own build time (in the judge, per start).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from _load import ROOT  # noqa: F401 - puts the project on sys.path

from harness.judging.sandbox.containment import build_policy, make_ruleset
from harness.judging.sandbox.sandbox import WorkerProcess
from harness.settings import Settings


def start_once(settings, device: str, staging: Path, shm: Path) -> float:
    """Seconds from creating the worker to its READY message."""
    t0 = time.perf_counter()
    worker = WorkerProcess(settings, device, readable=[staging], writable=[shm])
    worker.start()
    worker.send({"device": device, "staging": str(staging), "submission": "submission.py",
                 "shown_name": "submission.py", "mailbox": None})
    ready = worker.recv(settings.start_timeout)
    elapsed = time.perf_counter() - t0
    assert ready.get("event") == "ready", ready
    worker.send({"op": "exit"})
    worker.close()
    return elapsed


def policy_build_ms(device: str, staging: Path, shm: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        scratch = Path(tempfile.mkdtemp(prefix="harness-bench-"))
        t0 = time.perf_counter()
        ruleset, _ = make_ruleset(build_policy(scratch, [staging], [shm], device, []))
        times.append((time.perf_counter() - t0) * 1e3)
        if ruleset is not None:
            ruleset.close()
        scratch.rmdir()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    base = Settings.load().for_device(args.device).worker
    variants = {"landlock": replace(base, sandbox="landlock"), "off": replace(base, sandbox="off")}
    staging = Path(tempfile.mkdtemp(prefix="harness-bench-staging-"))
    shm = Path(tempfile.mkdtemp(prefix="harness-bench-shm-"))
    start_once(variants["off"], args.device, staging, shm)  # warm the page cache first
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, settings in variants.items():
            times[name].append(start_once(settings, args.device, staging, shm))
    result = {name: {"median_s": statistics.median(t), "min_s": min(t), "max_s": max(t)}
              for name, t in times.items()}
    result["policy_build_ms"] = policy_build_ms(args.device, staging, shm, args.runs)
    result["added_s"] = result["landlock"]["median_s"] - result["off"]["median_s"]
    for name in variants:
        r = result[name]
        print(f"{name:9s} median {r['median_s']:.3f} s  (min {r['min_s']:.3f}, "
              f"max {r['max_s']:.3f}, {args.runs} starts)")
    print(f"sandbox adds {result['added_s'] * 1e3:+.0f} ms per start; building the policy "
          f"takes {result['policy_build_ms']:.1f} ms of that (median)")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
