"""nvfp4 torch_dequant under both evaluators, timed from inside the submission.

The record at e9c5f34 (runs 74-80) read this pair 1.089 (8 runs pooled; 6 of 8 runs above
1, every case 1.08-1.11). Its calls are host time: each group synchronizes (a pageable
`.to(device)` of a CPU scale tensor), so the GPU waits for the host and the host for the
GPU. This wraps the example's `custom_kernel` and times every call from inside, the same
way under both evaluators: wall time, the thread's CPU time, and the thread's voluntary
and involuntary context switches (`getrusage(RUSAGE_THREAD)`) over the call. Wall above
CPU time is time off the CPU (a blocking wait, a preemption: the switches tell which);
equal wall and CPU time that is higher under one evaluator is a slower CPU.

Calls come in bursts of 15 back to back (one sample, one rehearsal, one public repeat or
warm-up pass); a new case, 15 calls, or a gap of over 100 µs starts the next (calls of a
burst are microseconds apart; the public evaluator's repeats 0.3-0.7 ms). Under the
harness, rehearsals (the same calls, untimed) are among the bursts. A burst's line is printed at the
start of the next burst's first call (inside the public evaluator's and the harness's timed
region alike, one write per burst).

    python docs/measurements/2026-12-01/scripts/diag_probe_dequant.py --reference-kernels .refk \\
        --rounds 2 --out DIR [--harness-config docs/measurements/2026-12-01/scripts/hold_off.yaml]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchmarks._load import run_submit  # noqa: E402
from contest_parity import _cutlass_standins  # noqa: E402
from harness.loading.popcorn import run_eval, stage_all  # noqa: E402
from harness.loading.task_folder import load_task  # noqa: E402

TASK = ROOT / "tasks" / "nvfp4_group_gemm"
SUB = ROOT / "submissions" / "nvfp4_group_gemm" / "torch_dequant.py"

PROBE = r'''

# ---- probe (diag_probe_dequant.py): the same call, timed from inside ----
import ctypes as _ctypes
import resource as _resource
import time as _time

_getcpu = _ctypes.CDLL(None).sched_getcpu  # the os module has no sched_getcpu
_pc, _tt = _time.perf_counter_ns, _time.thread_time_ns
_inner = custom_kernel
_probe = {"last": 0, "gap": 0, "key": "", "calls": []}


def _switches():
    try:
        usage = _resource.getrusage(_resource.RUSAGE_THREAD)
    except OSError:  # refused: the times still count
        return -1, -1
    return usage.ru_nvcsw, usage.ru_nivcsw


def custom_kernel(data):
    if not _probe["last"]:  # once: torch's intra-op threads and this process's CPUs
        import os as _os
        print("PROBEINFO threads %d interop %d cpus %d" % (
            torch.get_num_threads(), torch.get_num_interop_threads(),
            len(_os.sched_getaffinity(0))), flush=True)
    key = "x".join(str(abc[0].shape[0]) for abc in data[0])  # the groups' m: the case
    now = _pc()
    if (now - _probe["last"] > 100_000 or key != _probe["key"]
            or len(_probe["calls"]) == 15):
        if _probe["calls"]:
            print("PROBE %s %d@%d | %s" % (_probe["key"], _probe["gap"] // 1000, _getcpu(),
                                           " ".join("%d:%d:%d:%d" % c for c in _probe["calls"])),
                  flush=True)
        _probe["gap"], _probe["key"], _probe["calls"] = now - _probe["last"], key, []
    v0, i0 = _switches()
    t0, c0 = _pc(), _tt()
    out = _inner(data)
    t1, c1 = _pc(), _tt()
    v1, i1 = _switches()
    _probe["calls"].append(((t1 - t0) // 1000, (c1 - c0) // 1000, v1 - v0, i1 - i0))
    _probe["last"] = t1
    return out
'''


def bursts(text: str) -> list[dict]:
    """The PROBE lines: per burst, its case, the idle gap before it (µs), the CPU of its
    last call, and per call (wall µs, CPU µs, voluntary, involuntary switches)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("PROBE "):
            continue
        head, _, calls = line[6:].partition(" | ")
        key, _, rest = head.partition(" ")
        gap, _, cpu = rest.partition("@")
        out.append({"case": key, "gap_us": int(gap), "cpu": int(cpu),
                    "calls": [tuple(int(x) for x in c.split(":")) for c in calls.split()]})
    return out


def info(text: str) -> list[str]:
    """The PROBEINFO lines (threads and CPUs of each process the probe ran in), printed."""
    lines = [line[10:] for line in text.splitlines() if line.startswith("PROBEINFO ")]
    print("  process: " + "; ".join(lines))
    return lines


def summary(label: str, bs: list[dict]) -> dict:
    """Per case, over full bursts (15 calls): medians of per-call wall and CPU time, and
    switches per call."""
    s: dict = {"label": label, "bursts": len(bs), "cases": {}}
    for key in sorted({b["case"] for b in bs}, key=lambda k: [int(x) for x in k.split("x")]):
        full = [b for b in bs if b["case"] == key and len(b["calls"]) == 15]
        calls = [c for b in full for c in b["calls"][1:]]  # the first call of a burst aside
        if not calls:
            continue
        lengths = Counter(len(b["calls"]) for b in bs if b["case"] == key)
        row = {"bursts": len(full), "burst_lengths": dict(lengths), "wall_us": statistics.median(c[0] for c in calls),
               "cpu_us": statistics.median(c[1] for c in calls),
               "voluntary_per_call": statistics.fmean(c[2] for c in calls),
               "involuntary_per_call": statistics.fmean(c[3] for c in calls),
               "cpus": sorted({b["cpu"] for b in full})}
        s["cases"][key] = row
        print(f"{label} case m={key}: {len(full)} bursts; per call wall {row['wall_us']:.0f} "
              f"cpu {row['cpu_us']:.0f} µs; switches per call voluntary "
              f"{row['voluntary_per_call']:.2f} involuntary {row['involuntary_per_call']:.3f}; "
              f"cpus {row['cpus']}; burst lengths {dict(lengths)}")
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-kernels", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--harness-config", type=Path, action="append", default=[],
                        help="run the harness once per round under each of these too")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="probe-dequant-"))
    probe = tmp / "torch_dequant_probe.py"
    probe.write_text(SUB.read_text() + PROBE)
    task = load_task(str(TASK))
    evaluator = args.reference_kernels / "problems/nvidia/eval_better_bench_grouped_gemm.py"
    report: dict = {"rounds": []}
    for r in range(args.rounds):
        staged = Path(tempfile.mkdtemp(dir=tmp, prefix="public-"))
        stage_all(task, probe, staged, {"eval.py": evaluator})
        _cutlass_standins(staged)
        run = run_eval(staged, "benchmark", task.benchmarks, timeout=300)
        pub = bursts(run.output)
        entry = {"public": {"means_ns": run.case_means_ns(), "wall_s": run.wall_seconds,
                            "summary": summary(f"round {r + 1} public ", pub), "bursts": pub,
                            "info": info(run.output)}}
        for name, cfg in [("harness", None)] + [(c.stem, c) for c in args.harness_config]:
            extra = ["--config", str(cfg)] if cfg else []
            doc, _, wall = run_submit(probe, tmp / f"h{r}_{name}.json", "--task", str(TASK),
                                      "--mode", "benchmark", "--no-record", *extra)
            hb = bursts((doc.get("worker_output") or {}).get("stdout", ""))
            cases = doc["phases"][0]["cases"] if doc.get("phases") else []
            stdout = (doc.get("worker_output") or {}).get("stdout", "")
            entry[name] = {"means_ns": [c.get("score_ns") for c in cases], "wall_s": wall,
                           "summary": summary(f"round {r + 1} {name:8s}", hb), "bursts": hb,
                           "info": info(stdout)}
        print(f"round {r + 1} case means µs: " + "; ".join(
            f"{k} " + " ".join(f"{(x or 0) / 1e3:.0f}" for x in v["means_ns"])
            for k, v in entry.items()))
        report["rounds"].append(entry)
        (args.out / "probe_dequant.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
