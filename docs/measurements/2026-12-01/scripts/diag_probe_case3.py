"""nvfp4 triton_hopper's case 3 under both evaluators, from inside the submission.

Run 53 read this case at 106-114 µs per call under the harness against 82-104 under the
public evaluator, in alternating runs on one machine; in one bare process, the public
way, it read 81 µs, bound by the GPU (79 µs per call between events). So the worker's
calls are host-bound where a bare process's are not. This splits each call's host time,
the same way under both evaluators: the wait for the previous call's table copy
(`_meta_copied.synchronize()`), and the rest (the call's own host work) as wall time and
as the thread's CPU time. Wall above CPU time is time the thread was off its CPU
(preempted, or a page fault served elsewhere); equal wall and CPU time that is higher
than a bare process's is a slower CPU (cold caches, a lower clock).

The probe is `submissions/nvfp4_group_gemm/triton_hopper.py` with its `custom_kernel`
replaced by a timed copy (same operations, same order). It keeps case 3's calls (by
their sizes) in bursts (a gap of over 50 µs between calls starts a new one: the public
evaluator synchronizes between its repeats) and prints a burst's line
at the start of the next burst's first call, before that call's clock starts (under
both evaluators that print runs behind the pre-call window of a scored sample).

    python docs/measurements/2026-12-01/scripts/diag_probe_case3.py --reference-kernels .refk \
        --rounds 3 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
SUB = ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py"

PROBE = r'''

# ---- probe (diag_probe_case3.py): the same call, timed from inside ----
import ctypes as _ctypes
import time as _time

_getcpu = _ctypes.CDLL(None).sched_getcpu  # the os module has no sched_getcpu

_pc, _tt = _time.perf_counter_ns, _time.thread_time_ns
_probe = {"last": 0, "gap": 0, "calls": []}


def custom_kernel(data):
    global _meta_host, _meta_copied
    abc, _, sf_blocked, sizes = data
    mine = len(sizes) == 2 and sizes[0][0] == 128 and sizes[1][0] == 384
    if mine:
        now = _pc()
        if now - _probe["last"] > 50_000:
            if _probe["calls"]:
                print("PROBE %d@%d | %s" % (_probe["gap"] // 1000, _getcpu(), " ".join(
                    "%d:%d:%d" % c for c in _probe["calls"])), flush=True)
            _probe["gap"], _probe["calls"] = now - _probe["last"], []
    ta, ca = _pc(), _tt()
    rows, first = [], 0
    for (a, b, c), (sfa, sfb), (m, n, k, _) in zip(abc, sf_blocked, sizes):
        tiles_n = triton.cdiv(n, BLOCK_N)
        rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa.data_ptr(), sfb.data_ptr(),
                     m, n, k, first, tiles_n])
        first += triton.cdiv(m, BLOCK_M) * tiles_n
    device = abc[0][0].device
    tb = cb = tc = cc = 0
    if _meta_host is None or _meta_host.shape[0] < len(rows):
        _meta_host = torch.empty((max(8, len(rows)), META_COLS), dtype=torch.int64).pin_memory()
        _meta_copied = torch.cuda.Event()
        tb = tc = _pc()
        cb = cc = _tt()
    else:
        tb, cb = _pc(), _tt()
        _meta_copied.synchronize()
        tc, cc = _pc(), _tt()
    _meta_host[: len(rows)] = torch.tensor(rows, dtype=torch.int64)
    meta = _meta_host[: len(rows)].to(device, non_blocking=True)
    _meta_copied.record()
    _launch((first,), (meta, len(rows)),
            {"BM": BLOCK_M, "BN": BLOCK_N, "BK": BLOCK_K, "GROUPS": triton.next_power_of_2(len(rows))},
            num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    td, cd = _pc(), _tt()
    if mine:
        _probe["calls"].append(((tc - tb) // 100, ((tb - ta) + (td - tc)) // 100,
                                ((cb - ca) + (cd - cc)) // 100))
        _probe["last"] = td
    return [c for _, _, c in abc]
'''


def bursts(text: str) -> list[dict]:
    """The PROBE lines: per burst, the idle gap before it (µs) and per call (wait, work
    wall, work CPU) in units of 0.1 µs."""
    out = []
    for line in text.splitlines():
        if not line.startswith("PROBE "):
            continue
        head, _, calls = line[6:].partition(" | ")
        gap, _, cpu = head.partition("@")  # the CPU the burst's last call ran on
        out.append({"gap_us": int(gap), "cpu": int(cpu) if cpu else None,
                    "calls": [tuple(int(x) for x in c.split(":")) for c in calls.split()]})
    return out


def summary(label: str, bs: list[dict]) -> dict:
    """Medians over the scored-looking bursts (15 calls, the second waiting > 300 µs)."""
    full = [b for b in bs if len(b["calls"]) == 15 and b["calls"][1][0] > 3000]
    rest = [c for b in full for c in b["calls"][2:]]
    if not rest:
        print(f"{label}: no full bursts ({len(bs)} bursts)")
        return {"label": label, "bursts": len(bs), "full": 0}
    med = lambda i: statistics.median(c[i] for c in rest) / 10  # noqa: E731
    q = lambda i, k: statistics.quantiles([c[i] for c in rest], n=4)[k] / 10  # noqa: E731
    per_pos = [statistics.median(b["calls"][j][1] + b["calls"][j][0] for b in full) / 10
               for j in range(15)]
    gaps = statistics.median(b["gap_us"] for b in full)
    s = {"label": label, "bursts": len(bs), "full": len(full), "wait_us": med(0),
         "work_wall_us": med(1), "work_wall_q": [q(1, 0), q(1, 2)], "work_cpu_us": med(2),
         "per_position_wall_us": per_pos, "gap_us": gaps}
    print(f"{label}: {len(full)}/{len(bs)} bursts; calls 3-15: wait {s['wait_us']:.1f}, "
          f"work wall {s['work_wall_us']:.1f} (q1-q3 {q(1, 0):.1f}-{q(1, 2):.1f}), "
          f"work cpu {s['work_cpu_us']:.1f} µs; gap before {gaps / 1000:.1f} ms; per call "
          + " ".join(f"{x:.0f}" for x in per_pos))
    by_cpu: dict = {}
    for b in full:
        by_cpu.setdefault(b.get("cpu"), []).extend(c[1] for c in b["calls"][2:])
    s["work_wall_by_cpu_us"] = {str(k): statistics.median(v) / 10 for k, v in by_cpu.items()}
    print(f"{label}: work wall by CPU (µs): " + ", ".join(
        f"cpu {k}: {v:.1f}" for k, v in s["work_wall_by_cpu_us"].items()))
    return s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference-kernels", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--harness-config", type=Path, action="append", default=[],
                        help="run the harness once per round under each of these too")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME:CONFIG:ENV (CONFIG may be empty; ENV as PARITY_JUDGE_ENV, "
                             "for the judge's process only): a harness run per round")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="probe-case3-"))
    probe = tmp / "triton_hopper_probe.py"
    probe.write_text(SUB.read_text() + PROBE)
    task = load_task(str(TASK))
    evaluator = args.reference_kernels / "problems/nvidia/eval_better_bench_grouped_gemm.py"
    report = {"rounds": []}
    for r in range(args.rounds):
        staged = Path(tempfile.mkdtemp(dir=tmp, prefix="public-"))
        stage_all(task, probe, staged, {"eval.py": evaluator})
        _cutlass_standins(staged)
        run = run_eval(staged, "benchmark", task.benchmarks, timeout=300)
        pub = bursts(run.output)
        entry = {"public": {"means_ns": run.case_means_ns(), "wall_s": run.wall_seconds,
                            "summary": summary(f"round {r + 1} public ", pub), "bursts": pub}}
        variants = [("harness", None, "")] + [(c.stem, c, "") for c in args.harness_config]
        variants += [tuple(v.split(":", 2)) for v in args.variant]
        for name, cfg, judge_env in variants:
            out = tmp / f"h{r}_{name}.json"
            extra = ["--config", str(cfg)] if cfg else []
            os.environ["PARITY_JUDGE_ENV"] = judge_env
            doc, proc, wall = run_submit(probe, out, "--task", str(TASK), "--mode", "benchmark",
                                         "--no-record", *extra)
            os.environ.pop("PARITY_JUDGE_ENV", None)
            hb = bursts((doc.get("worker_output") or {}).get("stdout", ""))
            cases = doc["phases"][0]["cases"] if doc.get("phases") else []
            entry[name] = {"means_ns": [c.get("score_ns") for c in cases], "wall_s": wall,
                           "summary": summary(f"round {r + 1} {name:8s}", hb), "bursts": hb}
        means = {k: v["means_ns"] for k, v in entry.items()}
        print(f"round {r + 1} case means µs: " + "; ".join(
            f"{k} " + " ".join(f"{(x or 0) / 1e3:.1f}" for x in v) for k, v in means.items()))
        report["rounds"].append(entry)
        (args.out / "probe_case3.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
