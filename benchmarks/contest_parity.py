"""The harness against the public contests' own evaluators, same code, same machine, same run.

    python benchmarks/contest_parity.py --reference-kernels PATH [--runs 3] [--interleave]
        [--pairs vectoradd,nvfp4,mxfp4] [--only NAME_PART] [--skip-test-mode] [--out DIR]
    python benchmarks/contest_parity.py --merge A/parity.json B/parity.json [--out DIR]

PATH is a local copy of gpu-mode/reference-kernels (nothing of it is copied into this
project). For each pair (a task folder, a submission, the contest's evaluator) it runs the
public `eval.py` in benchmark mode and `runner.py submit --mode benchmark`, alternating,
`--runs` times each, then prints per-case means (median over runs) of both, their ratio,
the geometric means, and the wall times of both (also for one test-mode run each, after
the benchmark runs; `--runs 0` gives the test-mode walls alone). A pair's runs come one
after another, or with `--interleave` run 1 of every pair, then run 2, and so on:

- vectoradd: the public pmpp_v2/vectoradd_py folder itself, with its submission.py and its
  solutions/correct/submission_triton.py, under its own eval.py;
- nvfp4: tasks/nvfp4_group_gemm with both examples under
  nvidia/eval_better_bench_grouped_gemm.py;
- mxfp4: tasks/mxfp4_mm with both examples under amd_202602/eval.py.

Needs a GPU. Results go to OUT/parity.json as they come. A public evaluator that takes
minutes per run (amd_202602 times up to 1000 samples per case, each behind a 62.5 GiB
`randn`) can be split: run each example (`--only`) on its own GPU or in its own call, then
`--merge` the files, which pools the runs of each pair and summarises them together.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from itertools import zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._load import run_submit  # noqa: E402
from benchmarks.call_trace import slow_share  # noqa: E402
from harness.loading.popcorn import run_eval, stage_all  # noqa: E402
from harness.loading.task_folder import load_task  # noqa: E402
from harness.scores import geomean  # noqa: E402

# The nvfp4 evaluator imports two exception types from NVIDIA's CuTe DSL, which only its
# own CuTe submissions raise; where the DSL is not installed, empty stand-ins let it run.
_CUTLASS_STANDINS = {
    "cutlass/__init__.py": "",
    "cutlass/cute/__init__.py": "",
    "cutlass/cute/nvgpu/__init__.py": "",
    "cutlass/cute/nvgpu/common.py": "class OpError(Exception):\n    pass\n",
    "cutlass/_mlir/__init__.py": "",
    "cutlass/_mlir/ir.py": "class MLIRError(Exception):\n    pass\n",
}


def pairs(refk: Path, which: list[str]) -> list[dict]:
    """(name, task folder, submission, evaluator replacing eval.py or None) per pair."""
    problems = refk / "problems"
    out = []
    if "vectoradd" in which:
        folder = problems / "pmpp_v2" / "vectoradd_py"
        for sub in (folder / "submission.py", folder / "solutions/correct/submission_triton.py"):
            out.append({"name": f"pmpp_v2/vectoradd_py {sub.name}", "task": folder, "sub": sub,
                        "eval": None})
    if "nvfp4" in which:
        for sub in ("torch_dequant.py", "triton_hopper.py"):
            out.append({"name": f"nvfp4_group_gemm {sub}", "task": ROOT / "tasks/nvfp4_group_gemm",
                        "sub": ROOT / "submissions/nvfp4_group_gemm" / sub,
                        "eval": problems / "nvidia/eval_better_bench_grouped_gemm.py"})
    if "mxfp4" in which:
        for sub in ("torch_dequant.py", "triton_dot_scaled.py"):
            out.append({"name": f"mxfp4_mm {sub}", "task": ROOT / "tasks/mxfp4_mm",
                        "sub": ROOT / "submissions/mxfp4_mm" / sub,
                        "eval": problems / "amd_202602/eval.py"})
    return out


def public_run(pair: dict, mode: str, tmp: Path) -> tuple[list[float | None], float, bool]:
    """The contest's evaluator on the pair: per-case means (ns), wall seconds, passed."""
    task = load_task(str(pair["task"]))
    staged = Path(tempfile.mkdtemp(dir=tmp, prefix="public-"))
    stage_all(task, pair["sub"], staged, {"eval.py": pair["eval"]} if pair["eval"] else None)
    _cutlass_standins(staged)
    cases = task.tests if mode == "test" else task.benchmarks
    run = run_eval(staged, mode, cases, timeout=900)
    if not run.passed:
        print(f"   public {mode} did not pass (rc {run.returncode}): {run.output[-800:]}")
    return run.case_means_ns(), run.wall_seconds, run.passed


def _cutlass_standins(staged: Path) -> None:
    try:
        import cutlass  # noqa: F401
    except ImportError:
        for rel, text in _CUTLASS_STANDINS.items():
            path = staged / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def harness_run(pair: dict, mode: str, tmp: Path, config: Path | None = None,
                root: Path = ROOT) -> tuple[list[float | None], float, bool, dict]:
    """The harness on the pair (with settings `config`, if given; from the checkout at
    `root`): per-case means (ns), wall seconds, passed, the document."""
    out = Path(tempfile.mkdtemp(dir=tmp, prefix="harness-")) / "result.json"
    extra = ["--config", str(config)] if config else []
    doc, proc, wall = run_submit(pair["sub"], out, "--task", str(pair["task"]), "--mode", mode,
                                 "--no-record", *extra, root=root)
    if not doc:
        print(f"   harness {mode} wrote no result: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    cases = _first_phase(doc)["cases"]
    return [c.get("score_ns") for c in cases], wall, doc.get("passed", False), doc


def _first_phase(doc: dict) -> dict:
    """The harness document's (only) phase; one without cases when it ran none."""
    return doc["phases"][0] if doc.get("phases") else {"cases": []}


def _where_time_went(doc: dict) -> dict:
    """The harness's own account of its wall: start-up, then per case its wall, timed
    calls and why timing stopped (what a wall-time comparison needs)."""
    phase = _first_phase(doc)
    return {
        "document_s": doc.get("wall_seconds"),
        # the process's seconds before the evaluation began (interpreter, imports, task)
        "before_s": (doc.get("harness") or {}).get("process_age_s"),
        "startup_s": doc.get("startup_seconds"),
        "compile_cache": (doc.get("harness") or {}).get("compile_cache"),  # reused: warm
        "phase_s": phase.get("wall_seconds"),
        "cases": [{"wall_s": c.get("wall_seconds"), "calls": (c.get("stats") or {}).get("calls"),
                   "timing_s": (c.get("integrity") or {}).get("timing_seconds"),
                   "stopped": (c.get("integrity") or {}).get("stopped"),
                   "flags": c.get("flags", []), "parts_s": c.get("wall_parts", {}),
                   "stats": c.get("stats"), "clocks": _clocks(c),
                   "samples": c.get("samples"),  # in order: event ns, worker's host ns
                   "long_samples": (c.get("integrity") or {}).get("long_samples"),
                   "retried": (c.get("integrity") or {}).get("retried")}  # NOISE_RETRIES
                  for c in phase["cases"]],
    }


def _clocks(case: dict) -> dict:
    """A case's two-clock check: what it found, on how many samples, and the worker's own
    account of where its time went (to tell a stall from work outside the timed region)."""
    integrity = case.get("integrity") or {}
    return {"check": integrity.get("clocks"), "samples": integrity.get("clock_samples"),
            "worker_says": integrity.get("worker_says"),
            "hidden_window_us": integrity.get("hidden_window_us"),
            "probes": integrity.get("launch_counted")}  # samples timed with nothing hidden


def flagged_cases(doc: dict) -> str:
    """The run line's marks for a harness run whose cases carry flags (' [flagged: case 0,
    3]') or were timed again after one (' [timed again: case 1]'), else ''."""
    cases = _first_phase(doc)["cases"]
    marks = [(what, [str(i) for i, c in enumerate(cases) if test(c)]) for what, test in (
        ("flagged", lambda c: c.get("flags")),
        ("timed again", lambda c: (c.get("integrity") or {}).get("retried")))]
    return "".join(f" [{what}: case {', '.join(found)}]" for what, found in marks if found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-kernels", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pairs", default="vectoradd,nvfp4,mxfp4")
    parser.add_argument("--out", type=Path, default=Path("parity-out"))
    parser.add_argument("--skip-test-mode", action="store_true")
    parser.add_argument("--interleave", action="store_true",
                        help="run 1 of every pair, then run 2, ... (default: a pair's runs "
                             "together): a step cut short leaves the pairs even, and the "
                             "host's drift falls on every pair alike")
    parser.add_argument("--only", action="append", default=[],
                        help="keep the pairs whose name contains this (repeatable)")
    parser.add_argument("--harness-config", type=Path,
                        help="settings file for the harness's runs (runner.py --config)")
    parser.add_argument("--merge", type=Path, nargs="+",
                        help="pool the runs of these parity.json files instead of running")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        return _print_summary(merge(args.merge, args.only), args.out)
    if args.reference_kernels is None:
        parser.error("--reference-kernels is required to run")
    tmp = Path(tempfile.mkdtemp(prefix="parity-"))
    report: dict = {"runs": args.runs, "pairs": [],
                    "harness_config": str(args.harness_config) if args.harness_config else None}
    chosen = [p for p in pairs(args.reference_kernels, args.pairs.split(","))
              if _wanted(p["name"], args.only)]
    entries = [{"name": pair["name"], "public": [], "harness": []} for pair in chosen]
    report["pairs"] = entries  # saved after every run: a cut step keeps what ran
    if args.interleave:  # run 1 of every pair, then run 2, ...: a cut leaves them even
        steps = [(k, i) for i in range(args.runs) for k in range(len(chosen))]
    else:
        steps = [(k, i) for k in range(len(chosen)) for i in range(args.runs)]
    def save() -> None:
        (args.out / "parity.json").write_text(json.dumps(report, indent=2))

    for k, i in steps:
        if i == 0 or args.interleave:
            print(f"== {chosen[k]['name']}", flush=True)
        _benchmark_run(chosen[k], entries[k], i, args, tmp)
        save()
        if i == args.runs - 1:  # the pair's last run: finish it now, so a later cut keeps it
            _finish(chosen[k], entries[k], args, tmp)
            save()
    for k in range(len(chosen)) if args.runs == 0 else ():  # test mode alone
        _finish(chosen[k], entries[k], args, tmp)
        save()
    return _print_summary(report, args.out)


def _finish(pair: dict, entry: dict, args: argparse.Namespace, tmp: Path) -> None:
    """A pair's test-mode run (unless skipped) and its summary, its cases printed."""
    if not args.skip_test_mode:
        _, pw, pok = public_run(pair, "test", tmp)
        _, hw, hok, _ = harness_run(pair, "test", tmp, args.harness_config)
        entry["test_mode_wall_s"] = {"public": pw, "harness": hw,
                                     "public_passed": pok, "harness_passed": hok}
    print(f"== {pair['name']} ({len(entry['public'])} runs)", flush=True)
    _summarize(entry)


def _benchmark_run(pair: dict, entry: dict, i: int, args: argparse.Namespace, tmp: Path) -> None:
    """Run `i` of a pair: the public evaluator, then the harness, each in benchmark mode."""
    means, wall, ok = public_run(pair, "benchmark", tmp)
    entry["public"].append({"means_ns": means, "wall_s": wall, "passed": ok})
    h_means, h_wall, h_ok, doc = harness_run(pair, "benchmark", tmp, args.harness_config)
    cal = doc.get("calibration", {})
    entry["harness"].append({
        "means_ns": h_means, "wall_s": h_wall, "passed": h_ok,
        "host_launch_ns": [c.get("host_launch_ns") for c in _first_phase(doc)["cases"]],
        "roundtrip_median_ns": cal.get("median_ns"),
        "where_time_went": _where_time_went(doc),
    })
    print(f"   run {i + 1}: public {wall:.1f} s {_fmt(means)} | harness {h_wall:.1f} s "
          f"{_fmt(h_means)}{flagged_cases(doc)}", flush=True)


def pool(paths: list[Path]) -> list[dict]:
    """The pairs in `paths`, the runs of a pair named in several files pooled."""
    entries: dict[str, dict] = {}
    for path in paths:
        try:
            found = json.loads(path.read_text())["pairs"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a parity.json that contest_parity.py wrote "
                             f"({type(exc).__name__}: {exc})") from None
        for e in found:
            into = entries.setdefault(e["name"], {"name": e["name"], "public": [], "harness": []})
            into["public"] += e["public"]
            into["harness"] += e["harness"]
            if "test_mode_wall_s" in e:
                into["test_mode_wall_s"] = e["test_mode_wall_s"]
    return list(entries.values())


def _wanted(name: str, only: list[str] | None) -> bool:
    """Whether a pair is kept under `--only` (every pair without it)."""
    return not only or any(part in name for part in only)


def merge(paths: list[Path], only: list[str] | None = None) -> dict:
    """One report of the pairs in `paths`, the runs of a pair named twice pooled; with
    `only`, the pairs whose name contains one of its parts."""
    kept = [e for e in pool(paths) if _wanted(e["name"], only)]
    report = {"merged_from": [str(p) for p in paths], "only": only or None, "pairs": kept}
    for e in report["pairs"]:
        print(f"== {e['name']} ({len(e['public'])} public, {len(e['harness'])} harness runs)")
        _summarize(e)
    return report


def _print_summary(report: dict, out: Path) -> int:
    (out / "parity.json").write_text(json.dumps(report, indent=2))
    print("\n== summary (medians of runs; ratio = harness / public)")
    for e in report["pairs"]:
        s = e.get("summary", {})
        test = e.get("test_mode_wall_s")
        test_text = (f"test mode wall {test['public']:.1f} s vs {test['harness']:.1f} s (passed: "
                     f"public {test['public_passed']}, harness {test['harness_passed']})"
                     if test else "")
        if not e["public"] and not e["harness"]:  # --runs 0, or a pair a cut never reached
            print(f"{e['name']}: {test_text or 'no runs'}")
            continue
        print(f"{e['name']}: {test_text + '; ' if test_text else ''}geomean public "
              f"{_us(s.get('public_geomean_ns'))} harness "
              f"{_us(s.get('harness_geomean_ns'))} ratio {s.get('geomean_ratio', math.nan):.3f}; "
              f"worst case ratio {s.get('worst_case_ratio', math.nan):.3f}; benchmark wall "
              f"{s.get('public_wall_s', 0):.1f} s vs {s.get('harness_wall_s', 0):.1f} s"
              f"{_wall_split_text(s.get('harness_wall_split_s'))}; "
              f"round trip {_us(s.get('roundtrip_median_ns'))}; run-to-run spread public "
              f"{s.get('public_run_spread', math.nan):.3f} harness "
              f"{s.get('harness_run_spread', math.nan):.3f}; criterion "
              f"{_verdict_text(s.get('verdict', {}))}")
    return 0


def case_medians(runs: list[dict]) -> list[float | None]:
    """Each case's median mean over `runs` (None for a case no run timed)."""
    n = max((len(r["means_ns"]) for r in runs), default=0)
    out = []
    for i in range(n):
        vals = [r["means_ns"][i] for r in runs if i < len(r["means_ns"]) and r["means_ns"][i]]
        out.append(statistics.median(vals) if vals else None)
    return out


def geomean_ratio(reference: list[float | None], candidate: list[float | None]) -> float:
    """Geomean of `candidate`'s cases over `reference`'s, on the cases both timed (nan: none)."""
    both = [(r, c) for r, c in zip(reference, candidate) if r and c]
    return geomean([c for _, c in both]) / geomean([r for r, _ in both]) if both else math.nan


def timed_every_case(run: dict) -> bool:
    """Whether a run's means are all there (a failed or cut case leaves a gap)."""
    return bool(run["means_ns"]) and all(run["means_ns"])


def _summarize(entry: dict) -> None:
    pub, har = case_medians(entry["public"]), case_medians(entry["harness"])
    ratios = [h / p for p, h in zip(pub, har) if p and h]
    both = [(p, h) for p, h in zip(pub, har) if p and h]
    entry["summary"] = {
        "public_case_ns": pub, "harness_case_ns": har, "case_ratios": ratios,
        "public_geomean_ns": geomean([p for p, _ in both]),
        "harness_geomean_ns": geomean([h for _, h in both]),
        "geomean_ratio": geomean_ratio(pub, har),
        "worst_case_ratio": max(ratios, key=lambda r: abs(math.log(r))) if ratios else math.nan,
        "public_wall_s": _median([r["wall_s"] for r in entry["public"]]),
        "harness_wall_s": _median([r["wall_s"] for r in entry["harness"]]),
        "roundtrip_median_ns": _median(
            [r["roundtrip_median_ns"] for r in entry["harness"] if r["roundtrip_median_ns"]]),
        # how far each evaluator moves from run to run (highest / lowest per-run geomean):
        # a ratio between them means little where the public one moves more than it
        "public_run_spread": _run_spread(entry["public"]),
        "harness_run_spread": _run_spread(entry["harness"]),
        "harness_wall_split_s": wall_split(entry["harness"]),
        "harness_slow_share": slow_shares(entry["harness"]),
    }
    entry["summary"]["verdict"] = verdict(entry["summary"], entry["public"])
    shares = entry["summary"]["harness_slow_share"]
    for i, (p, h) in enumerate(zip(pub, har)):
        if p and h:
            share = (f"; harness slow calls {shares[i]:.1%} of its mean"
                     if i < len(shares) and shares[i] is not None else "")
            print(f"   case {i}: public {p / 1e3:.2f} µs, harness {h / 1e3:.2f} µs, "
                  f"ratio {h / p:.3f}{share}")


def slow_shares(runs: list[dict]) -> list[float | None]:
    """Per case, the median over the harness's runs of what its slow samples (over
    SLOW_OVER_MEDIAN times the case's median) add over the median, as a share of the case's
    sum (`call_trace.slow_share`, on the scored samples each run kept). The public
    evaluators report no per-call times: benchmarks/call_trace.py's public loop has them."""
    per_case: dict[int, list[float]] = {}
    for run in runs:
        for i, case in enumerate((run.get("where_time_went") or {}).get("cases", [])):
            times = (case.get("samples") or {}).get("ns") or []
            if times:
                per_case.setdefault(i, []).append(slow_share(times)[1])
    n = max(per_case, default=-1) + 1
    return [statistics.median(per_case[i]) if i in per_case else None for i in range(n)]


GEOMEAN_TOLERANCE, CASE_TOLERANCE = 0.05, 0.15  # issue 14's criterion


def verdict(summary: dict, public_runs: list[dict]) -> dict:
    """Issue 14's criterion on one pair: the geomean ratio within 5% and no case beyond 15%
    ("met"), else "missed", with each missed case's ratio and whether the harness's value
    lies inside the public evaluator's own range over its runs (then the public evaluator
    moves by as much between its own runs, and the miss does not show a difference)."""
    ratio = summary["geomean_ratio"]
    missed = []
    cases = zip_longest(summary["public_case_ns"], summary["harness_case_ns"])
    for i, (p, h) in enumerate(cases):
        if not (p and h):  # a case one of them never timed: nothing met there
            missed.append({"case": i, "ratio": None,
                           "not_timed_by": "the harness" if p else "the public evaluator"})
            continue
        if abs(h / p - 1) <= CASE_TOLERANCE:
            continue
        own = [r["means_ns"][i] for r in public_runs if i < len(r["means_ns"]) and r["means_ns"][i]]
        missed.append({"case": i, "ratio": h / p, "public_range_ns": [min(own), max(own)],
                       "inside_public_range": min(own) <= h <= max(own)})
    geomean_ok = not math.isnan(ratio) and abs(ratio - 1) <= GEOMEAN_TOLERANCE
    return {"met": geomean_ok and not missed, "geomean_within": geomean_ok,
            "missed_cases": missed}


def _verdict_text(v: dict) -> str:
    if not v:
        return "-"
    if v["met"]:
        return "met"
    parts = [] if v["geomean_within"] else ["geomean beyond 5%"]
    for m in v["missed_cases"]:
        if m["ratio"] is None:
            parts.append(f"case {m['case']} not timed by {m['not_timed_by']}")
            continue
        low, high = (x / 1e3 for x in m["public_range_ns"])
        where = "inside" if m["inside_public_range"] else "outside"
        parts.append(f"case {m['case']} at {m['ratio']:.3f}, {where} the public evaluator's "
                     f"own range {low:.1f}-{high:.1f} µs")
    return "missed: " + "; ".join(parts)


def wall_split(runs: list[dict]) -> dict | None:
    """Where the harness's process wall went, medians over the runs that say so: before the
    evaluation (`before_s`: the interpreter, the imports), the evaluation (the result
    document's wall) and after it (the rest: the worker's end, the report, the exit). None
    where no run recorded its `before_s` (runs before it existed)."""
    parts = []
    for r in runs:
        w = r.get("where_time_went") or {}
        if w.get("before_s") is not None and w.get("document_s") is not None:
            before, document = w["before_s"], w["document_s"]
            parts.append((before, document, r["wall_s"] - before - document))
    if not parts:
        return None
    return {"runs": len(parts), "before": _median([b for b, _, _ in parts]),
            "evaluation": _median([d for _, d, _ in parts]),
            "after": _median([a for _, _, a in parts])}


def _wall_split_text(split: dict | None) -> str:
    if not split:
        return ""
    return (f" (harness: {split['before']:.1f} s before the evaluation, "
            f"{split['evaluation']:.1f} s in it, {split['after']:.1f} s after)")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _run_spread(runs: list[dict]) -> float:
    """Highest over lowest geomean of the runs that timed every case (nan below two)."""
    values = [geomean(r["means_ns"]) for r in runs if timed_every_case(r)]
    return max(values) / min(values) if len(values) > 1 else math.nan


def _fmt(means: list[float | None]) -> str:
    return "[" + ", ".join(f"{m / 1e3:.1f}" if m else "-" for m in means) + "] µs"


def _us(ns: float | None) -> str:
    return f"{ns / 1e3:.2f} µs" if ns and not math.isnan(ns) else "-"


if __name__ == "__main__":
    sys.exit(main())
