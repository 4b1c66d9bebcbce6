"""Each timing mechanism and mode switch of the judge, with it and without it, beside the
public contests' evaluators: what it does to parity and to the run-to-run spread.

    python benchmarks/mechanisms.py --reference-kernels PATH --pairs vectoradd_triton,nvfp4_triton
        [--runs 3] [--variants baseline,...] [--checkout NAME=PATH ...] [--out DIR]
        [--budget-seconds 540] [--dry-run]

Pairs are contest_parity.py's examples by short name (vectoradd_torch, vectoradd_triton,
nvfp4_torch, nvfp4_triton, mxfp4_torch, mxfp4_triton; a group name picks both). A variant
is an override of configs/defaults.yaml (`VARIANTS`) for `runner.py submit --config`;
baseline (the defaults) always runs. Each is loaded by the harness's settings loader first:
one refused, or changing nothing, stops the script before any run (`--dry-run`: that check
and the plan, no GPU). `--checkout NAME=PATH` adds a variant that is another checkout of
this project (another commit's tree) run with its own defaults: the guard of a change, its
tree before beside its tree after (baseline) in the same rounds. Per round and pair: the
public evaluator once, then the harness once per variant that can act on the pair
(`ACTS_ON`), the order rotated from round to round.
OUT/mechanisms.json is rewritten after every run, OUT/summary.md (ratios to the public
evaluator and to baseline, spreads, readings) at the end; nothing else goes to OUT. A run
that would not fit in the budget (from the walls so far) is not started; past it by
`GRACE_S`, or on SIGTERM, the run in progress is cut and the summary written. A run takes
10-25 s on one H200 (vectoradd, nvfp4 triton_hopper; mxfp4's public evaluator about 60 s).
"""

from __future__ import annotations

import argparse
import math
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import contest_parity as parity  # noqa: E402

from harness.results.document import case_flags, case_notes, write_json  # noqa: E402
from harness.scores import geomean  # noqa: E402
from harness.settings import Settings  # noqa: E402

PUBLIC, BASELINE = "public", "baseline"
GROUPS = ("vectoradd", "nvfp4", "mxfp4")
GRACE_S = 45  # past the budget by this much, the run in progress is cut and the summary written
clock = time.monotonic  # the budget's clock (a test's fake)

# name: the override of configs/defaults.yaml that turns one mechanism off or to its other
# mode; baseline alone where no mechanism is under measurement (add one to measure it)
VARIANTS: dict[str, dict] = {
    BASELINE: {},
}

# Variants that can change something on some pairs only: the others would measure noise.
ACTS_ON: dict[str, tuple[str, ...]] = {}


def pair_catalogue(refk: Path) -> dict[str, dict]:
    """Short name (`vectoradd_triton`) -> contest_parity's pair, for every example."""
    return {f"{group}_{'triton' if 'triton' in p['sub'].stem else 'torch'}": p
            for group in GROUPS for p in parity.pairs(refk, [group])}


def choose_pairs(refk: Path, names: list[str]) -> dict[str, dict]:
    """The pairs named (a group name picks both of its examples), in the order given."""
    catalogue, chosen = pair_catalogue(refk), {}
    for name in names:
        found = {k: p for k, p in catalogue.items() if name in (k, k.split("_")[0])}
        if not found:
            raise SystemExit(f"unknown pair {name!r}: one of {', '.join(catalogue)} "
                             f"(or {', '.join(GROUPS)})")
        chosen.update(found)
    return chosen


def missing_files(chosen: dict[str, dict]) -> list[str]:
    """The files of the chosen pairs that are not there (a wrong --reference-kernels)."""
    return [f"{name}: {path}" for name, p in chosen.items()
            for path in (p["task"], p["sub"], p["eval"]) if path and not path.exists()]


def write_variants(names: list[str], folder: Path) -> dict[str, Path | None]:
    """Each variant's YAML file (None for baseline: the defaults, no --config), each loaded
    with the harness's settings loader; SystemExit naming every variant that is unknown,
    refused, or identical to the defaults (it would measure nothing)."""
    folder.mkdir(parents=True, exist_ok=True)
    defaults = Settings.load().for_device("cuda")
    configs: dict[str, Path | None] = {}
    problems = []
    for name in names:
        if name not in VARIANTS:
            problems.append(f"{name}: unknown (known: {', '.join(VARIANTS)})")
            continue
        if name == BASELINE:
            configs[name] = None
            continue
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(VARIANTS[name]))
        try:
            loaded = Settings.load(path).for_device("cuda")
        except (ValueError, TypeError) as exc:
            problems.append(f"{name}: refused by the settings loader: {exc}")
            continue
        if (loaded.timing, loaded.integrity, loaded.worker) == (
                defaults.timing, defaults.integrity, defaults.worker):
            problems.append(f"{name}: {VARIANTS[name]} is what configs/defaults.yaml sets")
            continue
        configs[name] = path
    if problems:
        raise SystemExit("variants that would waste the GPU's time:\n  " + "\n  ".join(problems))
    return configs


def parse_checkouts(items: list[str]) -> dict[str, Path]:
    """`--checkout NAME=PATH` values: name -> the checkout's folder; SystemExit for one
    without a runner.py or whose name is taken."""
    checkouts = {}
    for item in items:
        name, _, path = item.partition("=")
        folder = Path(path).resolve()
        if not name or name in VARIANTS or name == PUBLIC or name in checkouts:
            raise SystemExit(f"--checkout {item}: give each checkout a name of its own")
        if not (folder / "runner.py").is_file():
            raise SystemExit(f"--checkout {item}: no runner.py in {folder}")
        checkouts[name] = folder
    return checkouts


def applies(variant: str, pair: str) -> bool:
    """Whether `variant` can change anything on `pair` (`ACTS_ON`)."""
    return variant not in ACTS_ON or pair.split("_")[0] in ACTS_ON[variant]


def plan(pair_names: list[str], variants: list[str], runs: int) -> list[tuple[int, str, str]]:
    """(round, pair, `PUBLIC` or a variant) in running order: per round and pair the public
    evaluator, then every variant that applies, rotated by a further share each round."""
    steps = []
    for r in range(runs):
        for pair in pair_names:
            mine = [v for v in variants if applies(v, pair)]
            shift = r * len(mine) // runs
            steps += [(r, pair, PUBLIC)] + [(r, pair, v) for v in mine[shift:] + mine[:shift]]
    return steps


def wall_needed(walls: dict[tuple[str, str], list[float]], pair: str, what: str) -> float:
    """Expected wall of a run: the median of the same pair and variant (or public) so far,
    else of the pair's harness runs, else of any run of its kind (0: none seen). A public
    anchor counts one harness run after it: alone it is worth nothing."""
    kind = PUBLIC if what == PUBLIC else "harness"
    seen = next((walls[k] for k in ((pair, what), (pair, kind), ("*", kind)) if walls.get(k)), [])
    after = wall_needed(walls, pair, BASELINE) if what == PUBLIC else 0.0
    return (statistics.median(seen) if seen else 0.0) + after


def _geomean(means: list[float | None]) -> float:
    """harness.scores.geomean of a run's case means; nan where a case was not timed (a run
    with a gap has no geomean, rather than one over fewer cases)."""
    return geomean(means) if means and all(means) else math.nan


def harness_record(r: int, means: list, wall: float, doc: dict) -> dict:
    """One harness run: case means, the score, status, flags and notes, its wall, and per
    case where the time went (contest_parity's account: calls, clocks, samples)."""
    cases = parity._first_phase(doc)["cases"]
    return {"round": r, "means_ns": means, "geomean_ns": _geomean(means),
            "score_ns": doc.get("score_ns"), "status": doc.get("status", "no result"),
            "passed": doc.get("passed", False),
            "flags": case_flags(doc) if doc.get("phases") else [],
            "retried_cases": [i for i, c in enumerate(cases)
                              if (c.get("integrity") or {}).get("retried")],
            "notes": sum(len(case_notes(c.get("integrity"))) for c in cases),
            "wall_s": wall, "where_time_went": parity._where_time_went(doc)}


def suspicious(rec: dict) -> bool:
    """A harness run that failed, was flagged, or had a case timed again after a flag."""
    return bool(not rec["passed"] or rec["flags"] or rec["retried_cases"])


def _median(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.median(finite) if finite else math.nan


def spread(runs: list[dict]) -> float:
    """Highest over lowest geomean of the runs that timed every case (nan below two)."""
    values = [_geomean(r["means_ns"]) for r in runs if parity.timed_every_case(r)]
    return max(values) / min(values) if len(values) > 1 else math.nan


def reading(vs_baseline: float, baseline_spread: float) -> str:
    """'beyond noise' where the variant moves the geomean by more than baseline's own
    run-to-run spread, else 'within noise' ('unknown' without both figures)."""
    if math.isnan(vs_baseline) or math.isnan(baseline_spread):
        return "unknown"
    return "beyond noise" if abs(vs_baseline - 1) > baseline_spread - 1 else "within noise"


def summarize(entry: dict) -> dict:
    """Per variant of a pair: median ratio to the public evaluator's run of the same round,
    spread, median ratio to baseline's run of the same round, suspicious runs, reading."""
    public = {rec["round"]: rec["means_ns"] for rec in entry["public"]}
    base_runs = entry["harness"].get(BASELINE, [])
    base = {rec["round"]: rec["means_ns"] for rec in base_runs}
    rows = {}
    for name, runs in entry["harness"].items():
        vs_base = _median([parity.geomean_ratio(base[r["round"]], r["means_ns"])
                           for r in runs if r["round"] in base])
        rows[name] = {
            "runs": len(runs),
            "ratio_to_public": _median([parity.geomean_ratio(public[r["round"]], r["means_ns"])
                                        for r in runs if r["round"] in public]),
            "spread": spread(runs), "vs_baseline": vs_base,
            "suspicious_runs": sum(map(suspicious, runs)),
            "wall_s": _median([r["wall_s"] for r in runs]),
            "reading": "-" if name == BASELINE else reading(vs_base, spread(base_runs)),
        }
    return {"public_spread": spread(entry["public"]),
            "public_wall_s": _median([r["wall_s"] for r in entry["public"]]), "variants": rows}


def summary_markdown(report: dict) -> str:
    """The summary tables, one per pair."""
    lines = ["# Mechanisms beside the public evaluators", "",
             "ratio: harness geomean / the public evaluator's of the same round (median); "
             "spread: highest / lowest harness geomean over runs; vs baseline: / baseline's "
             "of the same round (median); beyond noise: |vs baseline - 1| > baseline's "
             "spread - 1.", ""]
    if report.get("stopped"):
        lines += [f"Stopped early: {report['stopped']}.", ""]
    for pair, entry in report["pairs"].items():
        s = entry.get("summary") or summarize(entry)
        lines += [f"## {pair}", "", f"public evaluator: {len(entry['public'])} runs, spread "
                  f"{s['public_spread']:.3f}, wall {s['public_wall_s']:.1f} s", "",
                  "| variant | runs | ratio | spread | vs baseline | suspicious | wall s | reading |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, row in s["variants"].items():
            lines.append(f"| {name} | {row['runs']} | {row['ratio_to_public']:.3f} | "
                         f"{row['spread']:.3f} | {row['vs_baseline']:.3f} | "
                         f"{row['suspicious_runs']} | {row['wall_s']:.1f} | {row['reading']} |")
        lines.append("")
    return "\n".join(lines)


def _step(pair: dict, r: int, what: str, config: Path | None, tmp: Path,
          root: Path = ROOT) -> dict:
    """Round `r`'s run of the public evaluator (`what` is PUBLIC) or of the harness under
    `config`, from the checkout at `root`. An error of the run's own is recorded and
    printed, not raised: the rest go on."""
    began = clock()
    try:
        if what == PUBLIC:
            means, wall, ok = parity.public_run(pair, "benchmark", tmp)
            return {"round": r, "means_ns": means, "geomean_ns": _geomean(means), "passed": ok,
                    "wall_s": wall}
        means, wall, _, doc = parity.harness_run(pair, "benchmark", tmp, config, root)
        return harness_record(r, means, wall, doc)
    except Exception as exc:  # noqa: BLE001 - one run's failure must not lose the others
        print(f"   {what} failed: {type(exc).__name__}: {exc}", flush=True)
        return harness_record(r, [], clock() - began, {}) | {"error": repr(exc)}


class _Cut(BaseException):
    """The hard stop: past the budget by GRACE_S, or SIGTERM."""


def _cut(signum: int, frame: object) -> None:
    raise _Cut(signal.Signals(signum).name)


def run(args: argparse.Namespace, chosen: dict[str, dict], configs: dict, steps: list) -> dict:
    """The steps in order, within the budget; the report, saved after every run."""
    started = clock()
    before = {sig: signal.signal(sig, _cut) for sig in (signal.SIGALRM, signal.SIGTERM)}
    signal.alarm(int(args.budget_seconds + GRACE_S))
    report = {"command": sys.argv, "runs": args.runs, "budget_s": args.budget_seconds,
              "variants": {v: VARIANTS.get(v, {"checkout": str(args.checkouts.get(v))})
                           for v in configs}, "stopped": None,
              "pairs": {p: {"public": [], "harness": {v: [] for v in configs if applies(v, p)}}
                        for p in chosen}}
    out, walls = args.out / "mechanisms.json", {}
    tmp = Path(tempfile.mkdtemp(prefix="mechanisms-"))
    try:
        for k, (r, pair, what) in enumerate(steps):
            elapsed = clock() - started
            need = wall_needed(walls, pair, what)
            if elapsed + need > args.budget_seconds:
                report["stopped"] = (f"the budget: {elapsed:.0f} s spent, round {r + 1} {pair} "
                                     f"{what} needs about {need:.0f} s more; "
                                     f"{len(steps) - k} of {len(steps)} runs not started")
                break
            rec = _step(chosen[pair], r, what, configs.get(what), tmp,
                        args.checkouts.get(what, ROOT))
            entry = report["pairs"][pair]
            (entry["public"] if what == PUBLIC else entry["harness"][what]).append(rec)
            kind = PUBLIC if what == PUBLIC else "harness"
            for key in {(pair, what), (pair, kind), ("*", kind)} if "error" not in rec else ():
                walls.setdefault(key, []).append(rec["wall_s"])
            marks = " [suspicious]" if what != PUBLIC and suspicious(rec) else ""
            print(f"round {r + 1} {pair} {what}: {rec['wall_s']:.1f} s, geomean "
                  f"{rec['geomean_ns'] / 1e3:.2f} µs{marks}", flush=True)
            write_json(out, report)
    except _Cut as exc:
        report["stopped"] = f"cut in its run by {exc} after {clock() - started:.0f} s"
    finally:
        signal.alarm(0)
        for sig, handler in before.items():
            signal.signal(sig, handler)
        shutil.rmtree(tmp, ignore_errors=True)
    for entry in report["pairs"].values():
        entry["summary"] = summarize(entry)
    write_json(out, report)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-kernels", type=Path, required=True,
                        help="a local copy of gpu-mode/reference-kernels")
    parser.add_argument("--pairs", default="vectoradd_triton,nvfp4_triton")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("mechanisms-out"))
    parser.add_argument("--checkout", action="append", default=[], metavar="NAME=PATH",
                        help="another checkout of this project, run as variant NAME")
    parser.add_argument("--budget-seconds", type=float, default=540.0)
    parser.add_argument("--dry-run", action="store_true",
                        help="check the variants and the pairs, print the plan, run nothing")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    names = [v for v in args.variants.split(",") if v]
    names = names if BASELINE in names else [BASELINE, *names]  # the reading needs it
    configs = write_variants(list(dict.fromkeys(names)),
                             Path(tempfile.mkdtemp(prefix="mechanisms-configs-")))
    args.checkouts = parse_checkouts(args.checkout)
    configs.update(dict.fromkeys(args.checkouts))
    chosen = choose_pairs(args.reference_kernels, [p for p in args.pairs.split(",") if p])
    missing = "\n  ".join(missing_files(chosen))
    if missing and not args.dry_run:
        raise SystemExit(f"not found (is --reference-kernels right?):\n  {missing}")
    steps = plan(list(chosen), list(configs), args.runs)
    for name, path in configs.items():
        what = (f"checkout {args.checkouts[name]}" if name in args.checkouts else
                yaml.safe_dump(VARIANTS[name], default_flow_style=True).strip())
        print(f"variant {name}: {what}{f' ({path})' if path else ''}")
    for r in range(args.runs):
        for p in chosen:
            print(f"round {r + 1} {p}: " + ", ".join(w for rr, pp, w in steps if (rr, pp) == (r, p)))
    print(f"{len(steps)} runs, budget {args.budget_seconds:.0f} s")
    if args.dry_run:
        print(f"not found (is --reference-kernels right?):\n  {missing}" if missing else "")
        return 0
    report = run(args, chosen, configs, steps)
    text = summary_markdown(report)
    (args.out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
