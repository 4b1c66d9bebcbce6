"""vectoradd Triton's smallest case: how often does a launch outlast the 100 µs window?

In the record at e9c5f34 (runs 74-80) the harness read this case's sample medians at the
GPU's floor in every run (6.4-6.7 µs) and its means at 6.5-11.3 µs, from samples of up to
368 µs; the public pmpp_v2 evaluator's means read 6.6-6.9 µs in 5 runs of 6 and 19.8 µs in
one. Both score the mean; a sample reads long when the call's host launch outlasts the
256 MiB fill (public) or the 100 µs GPU sleep (harness) before the start event.

This wraps the public folder's `solutions/correct/submission_triton.py` so that every call
times its own host launch (wall time around the original `custom_kernel`), and runs the
public `eval.py` and `runner.py submit --mode benchmark` on it, alternating, `--rounds`
times. The probe prints a case's launch times at the first call of the next case (the
correctness call, untimed under both); the public evaluator warms up on case 0 itself, so
its timed launches are the last `benchmark.0.runs` of that size. The harness's result document adds, per timed
sample, the event time and the worker's own clock (`samples`), and its count of long
samples (`integrity.long_samples`).

    python docs/measurements/2026-12-01/scripts/launch_tail.py --reference-kernels .refk \\
        --rounds 3 --out DIR [--harness-config docs/measurements/2026-12-01/scripts/hold_off.yaml]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from benchmarks._load import run_submit  # noqa: E402
from harness.loading.popcorn import run_eval, stage_all  # noqa: E402
from harness.loading.task_folder import load_task  # noqa: E402

PROBE = r'''

# ---- probe (launch_tail.py): each call's host launch, printed at the next case ----
import time as _time

_inner = custom_kernel
_probe = {"size": None, "ns": []}


def custom_kernel(data):
    size = data[0].shape[0]
    if size != _probe["size"]:
        if _probe["ns"]:
            print("LAUNCH %d | %s" % (_probe["size"], " ".join(str(x) for x in _probe["ns"])),
                  flush=True)
        _probe["size"], _probe["ns"] = size, []
    t0 = _time.perf_counter_ns()
    out = _inner(data)
    _probe["ns"].append(_time.perf_counter_ns() - t0)
    return out
'''


def launches(text: str) -> dict[int, list[int]]:
    """The LAUNCH lines: per size, its calls' host launch times (ns), in order."""
    out: dict[int, list[int]] = {}
    for line in text.splitlines():
        if line.startswith("LAUNCH "):
            head, _, ns = line[7:].partition(" | ")
            out.setdefault(int(head), []).extend(int(x) for x in ns.split())
    return out


def tail(values: list[float], window_ns: float = 100_000.0) -> dict:
    """Quantiles and the count past the window of a list of times (ns)."""
    if not values:
        return {"n": 0}
    s = sorted(values)
    q = lambda p: s[min(len(s) - 1, int(p * len(s)))]  # noqa: E731
    return {"n": len(s), "p50_us": q(0.5) / 1e3, "p90_us": q(0.9) / 1e3, "p99_us": q(0.99) / 1e3,
            "max_us": s[-1] / 1e3, "past_window": sum(1 for v in s if v > window_ns)}


def line(label: str, t: dict) -> str:
    if not t.get("n"):
        return f"{label}: none"
    return (f"{label}: n {t['n']} p50 {t['p50_us']:.1f} p90 {t['p90_us']:.1f} "
            f"p99 {t['p99_us']:.1f} max {t['max_us']:.1f} µs, {t['past_window']} past 100 µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-kernels", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--harness-config", type=Path, action="append", default=[],
                        help="run the harness once per round under each of these too")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.reference_kernels / "problems/pmpp_v2/vectoradd_py"
    tmp = Path(tempfile.mkdtemp(prefix="launch-tail-"))
    probe = tmp / "submission_triton_probe.py"
    probe.write_text((folder / "solutions/correct/submission_triton.py").read_text() + PROBE)
    task = load_task(str(folder))
    size0 = task.benchmarks[0]["size"]
    report: dict = {"rounds": []}
    for r in range(args.rounds):
        staged = Path(tempfile.mkdtemp(dir=tmp, prefix="public-"))
        stage_all(task, probe, staged, None)
        run = run_eval(staged, "benchmark", task.benchmarks, timeout=600)
        # the evaluator warms up on case 0 itself (up to 100 untimed repeats, then a
        # correctness call): its timed repeats are the last `runs` calls of that size
        runs = int(float(run.report.get("benchmark.0.runs", 0) or 0))
        pub = launches(run.output).get(size0, [])[-runs:] if runs else []
        entry = {"public": {"case0_mean_ns": (run.case_means_ns() or [None])[0],
                            "launch": tail(pub), "launch_ns": pub}}
        print(f"round {r + 1} public   case 0 mean "
              f"{(entry['public']['case0_mean_ns'] or 0) / 1e3:.2f} µs; "
              + line("launch", entry["public"]["launch"]))
        for name, cfg in [("harness", None)] + [(c.stem, c) for c in args.harness_config]:
            extra = ["--config", str(cfg)] if cfg else []
            doc, _, _ = run_submit(probe, tmp / f"h{r}_{name}.json", "--task", str(folder),
                                   "--mode", "benchmark", "--no-record", *extra)
            cases = doc["phases"][0]["cases"] if doc.get("phases") else []
            case0 = cases[0] if cases else {}
            samples = case0.get("samples") or {"ns": [], "host_ns": []}
            ns, host = samples["ns"], samples["host_ns"]
            long = sorted(range(len(ns)), key=lambda i: -ns[i])[:5]
            entry[name] = {"case0_mean_ns": case0.get("score_ns"),
                           "case0_median_ns": statistics.median(ns) if ns else None,
                           "long_samples": (case0.get("integrity") or {}).get("long_samples"),
                           "launch": tail(host), "samples": samples,
                           "longest": [{"index": i, "ns": ns[i], "host_ns": host[i]} for i in long],
                           # every call of the case (first sample, warm-up, rehearsals,
                           # probes): not comparable with the public's timed list
                           "probe_launch_all_calls": tail(launches(
                               (doc.get("worker_output") or {}).get("stdout", "")).get(size0, []))}
            e = entry[name]
            print(f"round {r + 1} {name:8s} case 0 mean {(e['case0_mean_ns'] or 0) / 1e3:.2f} "
                  f"median {(e['case0_median_ns'] or 0) / 1e3:.2f} µs; "
                  + line("launch (timed samples)", e["launch"]) + "; longest samples "
                  + ", ".join(f"#{x['index']} {x['ns'] / 1e3:.1f} µs (host {x['host_ns'] / 1e3:.1f})"
                              for x in e["longest"]))
        report["rounds"].append(entry)
        (args.out / "launch_tail.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
