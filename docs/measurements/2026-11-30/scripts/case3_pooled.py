"""Case 3 of nvfp4 triton_hopper over every parity run of runs 28-36: per-run means of
both evaluators, their medians, how often the harness's run reads above the public's
(the Mann-Whitney U over all pairs of runs), and a permutation test of the difference of
medians.

    python docs/measurements/2026-11-30/scripts/case3_pooled.py
"""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
RUNS = ["run28/nvfp4_triton", "run30/nvfp4_triton", "run31/nvfp4_triton_nospin",
        "run32/nvfp4_triton_longspin", "run33/nvfp4_triton", "run34/nvfp4_triton",
        "run35/nvfp4_triton_longspin", "run36/nvfp4_triton"]


def main() -> None:
    public, harness = [], []
    for run in RUNS:
        pair = json.loads((HERE / run / "parity.json").read_text())["pairs"][0]
        public += [r["means_ns"][3] / 1e3 for r in pair["public"]]
        harness += [r["means_ns"][3] / 1e3 for r in pair["harness"]]
    diff = statistics.median(harness) - statistics.median(public)
    above = sum((h > p) + 0.5 * (h == p) for h in harness for p in public) / (len(harness) * len(public))
    pool, rng, hits, draws = public + harness, random.Random(1), 0, 20000
    for _ in range(draws):
        rng.shuffle(pool)
        a, b = pool[:len(public)], pool[len(public):]
        hits += abs(statistics.median(b) - statistics.median(a)) >= abs(diff)
    print(f"{len(public)} public and {len(harness)} harness runs; medians "
          f"{statistics.median(public):.1f} and {statistics.median(harness):.1f} µs "
          f"(ratio {statistics.median(harness) / statistics.median(public):.3f}); "
          f"harness above in {above:.0%} of pairs of runs; permutation p = {hits / draws:.3f}; "
          f"ranges {min(public):.1f}-{max(public):.1f} and {min(harness):.1f}-{max(harness):.1f} µs")


if __name__ == "__main__":
    main()
