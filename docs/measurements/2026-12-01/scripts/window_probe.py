"""How much host launch time does each evaluator's pre-call GPU work hide?

Both evaluators hide the submission's host launch behind GPU work enqueued right before the
start event: pmpp_v2's `clear_l2_cache()` (a 256 MiB `torch.empty` + `fill_(42)`), the
harness's `torch.cuda._sleep` of `timing.hidden_window_us` (100 µs on pmpp_v2-style tasks),
converted to SM cycles at the GPU's maximum SM clock (`timing.ahead_cycles`). A launch longer
than the window shows in the timed call. This measures, in one process, variants interleaved
in a shuffled order:

  fill       the pmpp_v2 fill alone, between events: its GPU length;
  sleep      the harness's 100 µs sleep alone, between events: its real length here;
  window     for each evaluator's pre-call order (`public`: synchronize, the two events made,
             the fill, start; `harness`: the worker's order, sleep 1 cycle, 1 MiB fill,
             synchronize, the 100 µs sleep, start), then D µs of host spin and one tiny
             kernel, then end: the time the event pair reads. Where D is inside the
             window it reads the kernel alone; past it, D minus the window more. The
             effective window is D minus the excess, over the D where the excess is
             clear (over 3 µs), the median;
  harness_fill  (in `window` only) the worker's order with the pmpp_v2 fill itself in place
             of the sleep: the contest's pre-call work reproduced in the worker's process.

    python docs/measurements/2026-12-01/scripts/window_probe.py --reps 30 --out DIR
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from harness.judging.devices import read_clocks  # noqa: E402
from harness.judging.timing import ahead_cycles  # noqa: E402

STEPS = list(range(0, 250, 10))


def spin(us: float) -> None:
    end = time.perf_counter_ns() + us * 1e3
    while time.perf_counter_ns() < end:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--window-us", type=float, default=100.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    clocks = read_clocks()
    mhz = float(clocks.get("sm_max_mhz") or 2000.0)
    cycles = ahead_cycles(args.window_us, 0.0, 1, mhz, 1000.0)  # the whole window, as sampled
    tiny = torch.zeros(1, device="cuda")
    mini = torch.empty(1 << 17, dtype=torch.int64, device="cuda")

    def fill() -> None:  # pmpp_v2 utils.clear_l2_cache, as written there
        dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
        dummy.fill_(42)
        del dummy

    def harness_pre() -> None:  # Worker._run's order before the start event (warm torch)
        torch.cuda._sleep(1)
        mini.fill_(42)
        torch.cuda.synchronize()
        torch.cuda._sleep(cycles)

    def harness_fill() -> None:  # the same with the contest's fill in place of the sleep
        torch.cuda._sleep(1)
        mini.fill_(42)
        torch.cuda.synchronize()
        fill()

    pres = {"public": fill, "harness": harness_pre, "harness_fill": harness_fill}

    def alone(pre) -> float:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        pre()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3

    def window(pre, d: float) -> float:
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        pre()
        s.record()
        spin(d)
        tiny.add_(1.0)
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3

    for _ in range(20):  # clocks up, allocator warm
        fill(); harness_pre(); window(fill, 0); window(harness_pre, 0)
    torch.cuda.synchronize()
    jobs = [("fill", None), ("sleep", None)] * args.reps
    jobs += [(v, d) for v in pres for d in STEPS for _ in range(args.reps)]
    random.Random(3).shuffle(jobs)
    got: dict = {"fill": [], "sleep": []} | {v: {d: [] for d in STEPS} for v in pres}
    for name, d in jobs:
        if name == "fill":
            got["fill"].append(alone(fill))
        elif name == "sleep":
            got["sleep"].append(alone(lambda: torch.cuda._sleep(cycles)))
        else:
            got[name][d].append(window(pres[name], d))

    report: dict = {"device": torch.cuda.get_device_name(0), "clocks": clocks,
                    "sleep_cycles": cycles, "window_us_setting": args.window_us}
    for name in ("fill", "sleep"):
        xs = got[name]
        report[name] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
        print(f"{name:8s} alone: median {statistics.median(xs):7.1f} µs (min {min(xs):.1f}, "
              f"max {max(xs):.1f}, n={len(xs)})")
    report["sleep"]["mhz_implied"] = cycles / report["sleep"]["median"]
    print(f"sleep's implied SM clock {report['sleep']['mhz_implied']:.0f} MHz "
          f"(converted at {mhz:.0f})")
    for name in pres:
        med = {d: statistics.median(got[name][d]) for d in STEPS}
        base = med[0]
        clear = [d - (med[d] - base) for d in STEPS if med[d] - base > 3.0]
        w = statistics.median(clear) if clear else None
        report[name] = {"median_by_spin": med, "base": base, "window_us": w,
                        "window_estimates": clear}
        print(f"{name:8s} window: base {base:.1f} µs; effective window "
              f"{'none clear' if w is None else f'{w:.1f} µs'} "
              f"(from {len(clear)} spins); by spin: "
              + " ".join(f"{d}:{med[d]:.1f}" for d in STEPS))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "window_probe.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
