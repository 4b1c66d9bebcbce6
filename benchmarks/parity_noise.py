"""How often issue 14's criterion holds between the public evaluator and itself.

    python benchmarks/parity_noise.py A/parity.json [B/parity.json ...] [--k 3] [--out FILE]

Reads the runs `contest_parity.py` recorded (several files pooled by pair, as `--merge`
does) and asks, for each pair, the criterion's question of every way of drawing two
groups of `k` runs (the median of k runs each, the geomean within 5%, no case beyond 15%):

- public against public: two disjoint groups of the public evaluator's own runs, each
  split taken both ways (A/A);
- harness against public: k of the harness's runs against k of the public's (A/B).

The A/A fraction is how often an evaluator identical to the public one would meet the
criterion against it on these runs, and its spread how far such an evaluator's figure
moves; it bounds nothing (the harness may meet the criterion more often). Runs pooled from
several sessions make it a measure of the movement between sessions too, which a record of
k runs a side in one session does not see. Each run's own ratio (harness over public, the
two run back to back in one call) is printed too, with the geomean of these paired ratios
and its 95% interval (Student's t on their logarithms): the pairing removes what moves
between runs, and the interval says how large a difference the runs can resolve. No GPU:
it reads files only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.contest_parity import (  # noqa: E402
    case_medians,
    geomean,
    geomean_ratio,
    pool,
    timed_every_case,
    verdict,
)


def compare(reference: list[dict], candidate: list[dict]) -> dict:
    """Issue 14's criterion on `candidate`'s runs against `reference`'s (medians per case)."""
    ref, cand = case_medians(reference), case_medians(candidate)
    ratio = geomean_ratio(ref, cand)
    summary = {"public_case_ns": ref, "harness_case_ns": cand, "geomean_ratio": ratio}
    return {"ratio": ratio, "met": verdict(summary, reference)["met"]}


def draws(public: list[dict], harness: list[dict], k: int) -> dict:
    """The criterion over every A/A split of `public` and every A/B draw of k runs a side."""
    same = []
    for a in itertools.combinations(range(len(public)), k):
        rest = [i for i in range(len(public)) if i not in a]
        for b in itertools.combinations(rest, k):
            # each split both ways: the criterion is not symmetric (0.951 passes, 1/0.951
            # does not), and one fixed way would always take the earliest run's group first
            same.append(compare([public[i] for i in a], [public[i] for i in b]))
    cross = [compare(list(p), list(h)) for p in itertools.combinations(public, k)
             for h in itertools.combinations(harness, k)]
    return {"public_vs_public": _tally(same), "harness_vs_public": _tally(cross)}


def _tally(results: list[dict]) -> dict:
    """How many draws met the criterion, and how far their geomean ratios lie from 1: the
    distance folded (1.1 and 1/1.1 both 10%), since an A/A split has no direction."""
    if not results:
        return {"draws": 0}
    ratios = sorted(r["ratio"] for r in results)
    apart = sorted(math.expm1(abs(math.log(r))) for r in ratios)
    return {"draws": len(results), "met": sum(r["met"] for r in results),
            "met_fraction": sum(r["met"] for r in results) / len(results),
            "ratio_min": ratios[0], "ratio_median": statistics.median(ratios),
            "ratio_max": ratios[-1],
            "apart_median": statistics.median(apart), "apart_max": apart[-1]}


# Student's t, two-sided 95%, by degrees of freedom (a df between two keys takes the lower)
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000,
         120: 1.980}


def paired_interval(ratios: list[float]) -> tuple[float, float, float] | None:
    """The geomean of paired per-run ratios and its 95% interval (None below two runs)."""
    if len(ratios) < 2:
        return None
    logs = [math.log(r) for r in ratios]
    mean, se = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    df = len(logs) - 1
    t = _T975[max(k for k in _T975 if k <= df)]  # past 120: 1.980 (the limit is 1.960)
    return math.exp(mean), math.exp(mean - t * se), math.exp(mean + t * se)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--k", type=int, default=3, help="runs a side (the issue's 3)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    report = []
    for entry in pool(args.files):
        public = [r for r in entry["public"] if timed_every_case(r)]
        harness = [r for r in entry["harness"] if timed_every_case(r)]
        paired = [geomean(h["means_ns"]) / geomean(p["means_ns"])
                  for p, h in zip(entry["public"], entry["harness"])
                  if timed_every_case(p) and timed_every_case(h)]
        interval = paired_interval(paired)
        row = {"name": entry["name"], "public_runs": len(public), "harness_runs": len(harness),
               "paired_run_ratios": paired, "paired_geomean_interval": interval,
               **draws(public, harness, args.k)}
        report.append(row)
        print(f"== {entry['name']}: {len(public)} public, {len(harness)} harness runs; each "
              f"run's ratio {' '.join(f'{r:.3f}' for r in paired)}"
              + (f" (geomean {interval[0]:.3f}, 95% interval {interval[1]:.3f}-"
                 f"{interval[2]:.3f})" if interval else ""))
        for side in ("public_vs_public", "harness_vs_public"):
            t = row[side]
            if not t["draws"]:
                print(f"   {side.replace('_', ' ')}: too few runs for two groups of {args.k}")
                continue
            ratios = ("" if side == "public_vs_public" else  # an A/A split has no direction
                      f"geomean ratio {t['ratio_min']:.3f}-{t['ratio_max']:.3f}, median "
                      f"{t['ratio_median']:.3f}; ")
            print(f"   {side.replace('_', ' ')}: criterion met in {t['met']} of {t['draws']} "
                  f"draws ({t['met_fraction']:.0%}); {ratios}the two geomeans "
                  f"{t['apart_median']:.1%} apart (median), {t['apart_max']:.1%} at most")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
