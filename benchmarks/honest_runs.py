"""Run every example submission N times in leaderboard mode and count flags.

Honest code must never be flagged (two-clock check, physics floor, static screen).

    python benchmarks/honest_runs.py [--runs 10] [--device cpu|cuda] [--small] [--out FILE]
                                     [--config FILE] [--only TEXT] [--resume FILE]
                                     [--stop-after SECONDS]

Runs go round by round (every example once, then again), and FILE is rewritten after
each run, so that a run cut short still leaves an even, readable record.
--small replaces each task's benchmarks with one small case (for the CPU); --config
passes harness settings (such as a shorter `timing.max_seconds`) to every run.
--resume continues an earlier FILE (its runs count towards --runs); --stop-after starts
no run that the slowest run so far says would end past that many seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _load import ROOT, run_submit

from harness.results.document import case_flags

SMALL = {
    "vectoradd": "size: 256; seed: 1",
    "nvfp4_group_gemm": "g: 2; m: [96, 128]; n: [128, 256]; k: [256, 512]; seed: 1111",
    "mxfp4_mm": "m: 16; n: 256; k: 512; seed: 3",
}


def examples(device: str) -> list[Path]:
    files = sorted((ROOT / "submissions").rglob("*.py"))
    if device == "cpu":  # Triton examples need a GPU
        files = [f for f in files if "triton" not in f.name]
    return files


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--device", default=None)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", help="substring of the file names to run")
    parser.add_argument("--config", help="harness settings (YAML) for every run")
    parser.add_argument("--resume", type=Path, help="an earlier --out file to continue")
    parser.add_argument("--stop-after", type=float, default=None)
    args = parser.parse_args()
    started = time.monotonic()
    device = args.device or ("cuda" if _has_gpu() else "cpu")
    tmp = Path(tempfile.mkdtemp())
    report = {"device": device, "runs": args.runs, "submissions": {}}
    if args.resume:
        report["submissions"] = json.loads(args.resume.read_text())["submissions"]
    slowest = 0.0
    paths = [p for p in examples(device) if not args.only or args.only in str(p)]
    report["config"] = Path(args.config).read_text() if args.config else None
    for i in range(args.runs):
        for path in paths:
            task = path.parent.name
            if len(report["submissions"].get(f"{task}/{path.name}", [])) > i:
                continue  # done in the run this one resumes
            if args.stop_after and time.monotonic() - started + slowest > args.stop_after:
                print(f"stopped: the next run could end past {args.stop_after:.0f} s", flush=True)
                return _finish(report, args.out)
            extra = ["--case", SMALL[task]] if args.small else []
            extra += ["--config", args.config] if args.config else []
            doc, proc, wall = run_submit(path, tmp / f"{task}-{path.stem}-{i}.json", "--device", device,
                                         "--db", str(tmp / "honest.db"), "--user", path.stem, *extra)
            flags = case_flags(doc)
            screen = [f["rule"] for f in doc.get("screen", []) if f["severity"] != "info"]
            row = {"rc": proc.returncode, "status": doc.get("status"), "flags": flags,
                   "screen": screen, "score_ns": doc.get("score_ns"), "wall_s": round(wall, 1)}
            report["submissions"].setdefault(f"{task}/{path.name}", []).append(row)
            slowest = max(slowest, wall)
            print(f"{task}/{path.name} run {i}: rc={proc.returncode} status={doc.get('status')} "
                  f"flags={len(flags)} screen={screen} score={doc.get('score_ns')} "
                  f"wall={row['wall_s']}s", flush=True)
            for f in flags:
                print(f"    flag: {f}")
            if args.out:
                args.out.write_text(json.dumps(report, indent=2))
    return _finish(report, args.out)


def _finish(report: dict, out: Path | None) -> int:
    """Print the totals, write the file; 1 when any run was flagged or failed."""
    flagged = sum(1 for rows in report["submissions"].values() for r in rows if r["flags"] or r["screen"])
    failed = sum(1 for rows in report["submissions"].values() for r in rows if r["rc"] != 0)
    print(f"TOTAL runs={sum(len(r) for r in report['submissions'].values())} flagged={flagged} failed={failed}")
    if out:
        out.write_text(json.dumps(report, indent=2))
    return 1 if flagged or failed else 0


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
