"""Compare a batch spread over several devices with the same batch on one device.

    python benchmarks/compare_batches.py MANY.json ONE.json [--noise 0.2]

Both files are `runner.py batch --json` outputs. Prints and checks:
- concurrency in MANY: evaluations whose run times overlap never shared a device
  (`where`), and at least two ran at the same time on different devices;
- agreement: per submission and timed case, the ratio of MANY's mean to ONE's, flagged
  when it differs from 1 by more than --noise (set it from repeated runs on one device);
- cost: MANY's wall time over ONE's (half is the goal with two devices).
Exit code 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path


def overlaps(results: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of results whose [started, started + wall] intervals intersect."""
    pairs = []
    for a, b in combinations(results, 2):
        if a["started"] < b["started"] + b["wall_seconds"] and b["started"] < a["started"] + a["wall_seconds"]:
            pairs.append((a, b))
    return pairs


def shared_device(pairs: list[tuple[dict, dict]]) -> list[tuple[str, str, list[str]]]:
    """Overlapping pairs that used a device in common: never allowed."""
    return [(a["file"], b["file"], sorted(set(a["where"]) & set(b["where"])))
            for a, b in pairs if set(a["where"]) & set(b["where"])]


def case_ratios(many: list[dict], one: list[dict]) -> dict[str, list[float | None]]:
    """Per submission, MANY's timed case means over ONE's (None where either is missing)."""
    by_file = {r["file"]: r for r in one}
    out = {}
    for r in many:
        other = by_file.get(r["file"])
        if other is None:
            continue
        mine = [s for phase in r["cases"] for s in phase if s is not None]
        theirs = [s for phase in other["cases"] for s in phase if s is not None]
        out[r["file"]] = [a / b if a and b else None for a, b in zip(mine, theirs)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("many", type=Path)
    parser.add_argument("one", type=Path)
    parser.add_argument("--noise", type=float, default=0.2,
                        help="largest |ratio - 1| taken as noise (default 0.2)")
    args = parser.parse_args(argv)
    try:
        many, one = json.loads(args.many.read_text()), json.loads(args.one.read_text())
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read two `runner.py batch --json` documents: {exc}")
    if not all(isinstance(d, dict) and "results" in d and "wall_seconds" in d for d in (many, one)):
        parser.error("cannot read two `runner.py batch --json` documents: no results in one of them")
    failed = False

    pairs = overlaps(many["results"])
    devices = sorted({w for r in many["results"] for w in r["where"]})
    together = [(a, b) for a, b in pairs if not set(a["where"]) & set(b["where"])]
    print(f"devices used: {', '.join(devices)}; overlapping pairs: {len(pairs)}, "
          f"of them on different devices: {len(together)}")
    for a, b, common in shared_device(pairs):
        failed = True
        print(f"  SHARED {common}: {a} and {b} ran at the same time")
    if not together:
        failed = True
        print("  no two evaluations ran at the same time on different devices")

    print(f"per-case means, {args.many.name} / {args.one.name} (noise taken as ±{args.noise:.0%}):")
    for file, ratios in case_ratios(many["results"], one["results"]).items():
        shown = " ".join("  -  " if x is None else f"{x:5.3f}" for x in ratios)
        off = [x for x in ratios if x is not None and abs(x - 1) > args.noise]
        failed |= bool(off)
        print(f"  {Path(file).name:28s} {shown}{'  OUTSIDE NOISE' if off else ''}")

    ratio = many["wall_seconds"] / one["wall_seconds"]
    print(f"wall: {many['wall_seconds']:.1f} s against {one['wall_seconds']:.1f} s "
          f"(ratio {ratio:.2f}; with {len(devices)} devices the goal is about {1 / max(len(devices), 1):.2f})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
