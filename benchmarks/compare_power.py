"""The power of `runner.py compare`: a known 2% difference ordered right, two copies of one
file read as no difference, and the wall of each compare.

    python benchmarks/compare_power.py [--compares 20] [--slower 0.02]
        [--case "size: 8192; seed: 1"] [--runs 5] [--min-runs 3] [--threshold 0.01]
        [--device cuda|cpu] [--budget-seconds 540] [--out DIR] [--resume JSON]

A is the vectoradd torch example. One benchmark run of A on the case gives its time t; B is
A followed by a fixed wait on the same device (a GPU sleep of so many clock cycles,
calibrated in a child process, so that this one holds no context on the GPU the compares
time; on the CPU a busy wait) of `--slower` x t, less what one benchmark run of B shows the
wait's own launch to add, so that B takes (1 + slower) x t; A2 is a copy of A. Then
`compare A B` and `compare A A2` in turn, `--compares` of each or until the budget would be
passed. Ordered right: the verdict says B is slower (the interval above 1).
Copies right: the verdict says no difference. OUT/compare_power.json holds every compare's
verdict, ratio, interval, runs and wall. `--resume` continues an earlier report (its wait
kept, A and B scored once more to show B/A on this machine) up to `--compares` of each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._load import run_submit  # noqa: E402

TASK = "vectoradd"
EXAMPLE = ROOT / "submissions" / TASK / "add_torch.py"
CALIBRATION_CYCLES = 10_000_000  # a GPU sleep long enough that its launch is negligible

GPU_WAIT = '''
import torch as _torch

_timed = custom_kernel


def custom_kernel(data):
    out = _timed(data)
    _torch.cuda._sleep({cycles})  # a fixed extra wait on the GPU: {ns:.0f} ns
    return out
'''

CPU_WAIT = '''
import time as _time

_timed = custom_kernel


def custom_kernel(data):
    out = _timed(data)
    _end = _time.perf_counter_ns() + {ns:.0f}  # a fixed extra wait on the host
    while _time.perf_counter_ns() < _end:
        pass
    return out
'''


CALIBRATE = f"""
import statistics, torch
torch.cuda._sleep({CALIBRATION_CYCLES})  # the first launch warms up
rates = []
for _ in range(5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep({CALIBRATION_CYCLES})
    end.record()
    end.synchronize()
    rates.append({CALIBRATION_CYCLES} / (start.elapsed_time(end) * 1e6))
print(statistics.median(rates))
"""


def gpu_cycles_per_ns() -> float:
    """The GPU sleep's clock cycles per nanosecond, the median of five timed sleeps, measured
    in a child process whose CUDA context is gone before any compare starts."""
    proc = subprocess.run([sys.executable, "-c", CALIBRATE], capture_output=True, text=True,
                          check=True)
    return float(proc.stdout.split()[-1])


def padded(source: str, pad_ns: float, device: str, cycles_per_ns: float = 0.0) -> str:
    """`source` with its custom_kernel followed by a fixed wait of `pad_ns` on `device` (on
    the GPU, a sleep of `cycles_per_ns` x `pad_ns` cycles)."""
    if device == "cuda":
        return source + GPU_WAIT.format(cycles=round(pad_ns * cycles_per_ns), ns=pad_ns)
    return source + CPU_WAIT.format(ns=pad_ns)


def case_args(cases: list[str]) -> list[str]:
    """`--case C` for each case."""
    return [x for c in cases for x in ("--case", c)]


def score(path: Path, args: argparse.Namespace, tmp: Path) -> float:
    """One benchmark run's score of `path` on the case (ns); SystemExit without one."""
    doc, proc, _ = run_submit(path, tmp / "calibrate.json", "--task", TASK, "--mode",
                              "benchmark", "--device", args.device, "--no-record",
                              *case_args(args.case))
    if not doc.get("score_ns"):
        raise SystemExit(f"the calibration run of {path.name} gave no score: {proc.stdout[-1500:]}")
    return doc["score_ns"]


def compare(a: Path, b: Path, args: argparse.Namespace, out: Path) -> dict:
    """One `runner.py compare A B`: its verdict, ratio, interval, runs and wall."""
    cmd = [sys.executable, str(ROOT / "runner.py"), "compare", str(a), str(b), "--task", TASK,
           "--device", args.device, "--runs", str(args.runs), "--min-runs", str(args.min_runs),
           "--json", str(out), *case_args(args.case)]
    if args.threshold:
        cmd += ["--threshold", str(args.threshold)]
    out.unlink(missing_ok=True)
    began = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.time() - began
    doc = json.loads(out.read_text()) if out.exists() else {}
    ratio = doc.get("ratio") or {}
    return {"exit_code": proc.returncode, "verdict": doc.get("verdict"),
            "ratio": ratio.get("geomean"), "ci95": ratio.get("ci95"), "runs": doc.get("runs"),
            "stopped_early": doc.get("stopped_early"), "wall_s": wall,
            "gpu_shared": "the GPU was shared" in proc.stdout,
            "error": doc.get("error") or (
                None if doc else proc.stdout[-1500:] + proc.stderr[-1500:])}


def ordered_right(rec: dict) -> bool:
    """B (the slower file) read as slower, its interval above 1."""
    return bool(rec["ci95"]) and rec["ci95"][0] > 1 and "slower" in (rec["verdict"] or "")


def copies_right(rec: dict) -> bool:
    """Two copies read as no difference."""
    return (rec["verdict"] or "").startswith("no difference")


def calibrated(args: argparse.Namespace, source: str, a: Path, b: Path,
               tmp: Path) -> tuple[dict, float, float, float]:
    """A scored, B written with its wait sized so that B scores (1 + slower) x A: the report
    begun, A's score, the wait and B's score (ns)."""
    a_ns = score(a, args, tmp)
    target = args.slower * a_ns
    # On the GPU the sleep's own launch costs time beyond it: B is measured, and its wait
    # shortened by that excess once, so that B's measured time is A's plus `slower`. The
    # CPU's busy wait has no such cost, and there a busy host's noise would only mislead the
    # trim, so B is measured once, as written.
    rate = gpu_cycles_per_ns() if args.device == "cuda" else 0.0
    pad_ns = target
    b.write_text(padded(source, pad_ns, args.device, rate))
    first_b_ns = score(b, args, tmp)
    if args.device == "cuda":
        pad_ns = max(0.0, target - (first_b_ns - a_ns - pad_ns))
        b.write_text(padded(source, pad_ns, args.device, rate))
        b_ns = score(b, args, tmp)
    else:
        b_ns = first_b_ns
    report = {"command": sys.argv, "a_score_ns": a_ns, "pad_ns": pad_ns, "cycles_per_ns": rate,
              "b_first_score_ns": first_b_ns, "b_score_ns": b_ns, "b_over_a": b_ns / a_ns,
              "slower": args.slower, "case": args.case, "runs": args.runs,
              "min_runs": args.min_runs, "threshold": args.threshold,
              "different": [], "copies": []}
    return report, a_ns, pad_ns, b_ns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compares", type=int, default=20)
    parser.add_argument("--slower", type=float, default=0.02)
    parser.add_argument("--case", action="append", default=[])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--budget-seconds", type=float, default=540.0)
    parser.add_argument("--out", type=Path, default=Path("compare-power-out"))
    parser.add_argument("--resume", type=Path, help="an earlier compare_power.json to continue")
    args = parser.parse_args()
    args.case = args.case or ["size: 8192; seed: 1"]
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="compare-power-"))
    a, b, copy = tmp / "a.py", tmp / "b.py", tmp / "a_copy.py"
    source = EXAMPLE.read_text()
    a.write_text(source)
    copy.write_text(source + "\n# a copy\n")
    if args.resume:
        report = json.loads(args.resume.read_text())
        rate, pad_ns = report["cycles_per_ns"], report["pad_ns"]
        b.write_text(padded(source, pad_ns, args.device, rate))
        a_ns, b_ns = score(a, args, tmp), score(b, args, tmp)
        report.setdefault("rechecks", []).append(
            {"a_score_ns": a_ns, "b_score_ns": b_ns, "b_over_a": b_ns / a_ns})
        report["command"] = [report["command"], sys.argv]
    else:
        report, a_ns, pad_ns, b_ns = calibrated(args, source, a, b, tmp)
    # Where the environment forbids bytecode files, every worker compiles torch's sources.
    report["bytecode_kept"] = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    report["stopped"] = None
    (args.out / "compare_power.json").write_text(json.dumps(report, indent=2))
    walls = [r["wall_s"] for r in report["different"] + report["copies"]]
    for k in range(args.compares):
        for kind, other in (("different", b), ("copies", copy)):
            if len(report[kind]) > k:
                continue  # done in the run resumed
            need = statistics.median(walls) if walls else 0.0
            if time.monotonic() - began + need > args.budget_seconds:
                report["stopped"] = f"the budget, before compare {k + 1} of {kind}"
                break
            rec = compare(a, other, args, tmp / "compare.json")
            walls.append(rec["wall_s"])
            report[kind].append(rec)
            print(f"{kind} {k + 1}: {rec['verdict']} ({rec['runs']} runs, {rec['wall_s']:.1f} s)",
                  flush=True)
            (args.out / "compare_power.json").write_text(json.dumps(report, indent=2))
        if report["stopped"]:
            break
    report["ordered_right"] = [sum(map(ordered_right, report["different"])),
                               len(report["different"])]
    report["copies_right"] = [sum(map(copies_right, report["copies"])), len(report["copies"])]
    report["wall_per_compare_s"] = statistics.median(walls) if walls else None
    (args.out / "compare_power.json").write_text(json.dumps(report, indent=2))
    print(f"A {a_ns / 1e3:.2f} µs, B {b_ns / 1e3:.2f} µs ({b_ns / a_ns:.3f}; its wait "
          f"{pad_ns / 1e3:.2f} µs); ordered right "
          f"{report['ordered_right'][0]} of {report['ordered_right'][1]}; copies read as no "
          f"difference {report['copies_right'][0]} of {report['copies_right'][1]}; wall per "
          f"compare {report['wall_per_compare_s'] or 0:.1f} s"
          + (f"; stopped by {report['stopped']}" if report["stopped"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
