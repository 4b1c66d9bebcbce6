"""Run every example submission N times in leaderboard mode and count flags.

Honest code must never be flagged (two-clock check, physics floor, static screen).

    python benchmarks/honest_runs.py [--runs 10] [--device cpu|cuda] [--small] [--out FILE]
                                     [--config FILE] [--only TEXT] [--resume FILE]
                                     [--stop-after SECONDS] [--rounds-per-batch N]
                                     [--submit]

Runs go round by round (every example once, then again): each round is one `runner.py
batch` per task (judges and first workers forked per slot, as a server judges uploads), or
with --submit one `runner.py submit` per file (a contestant's route); --rounds-per-batch
judges that many rounds in one batch. FILE is rewritten after each batch, so that a run
cut short still leaves an even, readable record.
--small replaces each task's benchmarks with one small case (for the CPU); --config
passes harness settings (such as a shorter `timing.max_seconds`) to every run.
--resume continues an earlier FILE (its runs count towards --runs); --stop-after starts
no run that the slowest run so far says would end past that many seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _load import ROOT, judge_env, run_submit

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
    parser.add_argument("--rounds-per-batch", type=int, default=1,
                        help="rounds judged by one batch (the judge template's start paid once)")
    parser.add_argument("--submit", action="store_true",
                        help="a `runner.py submit` per run instead of a batch per task and round")
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
    per = max(1, args.rounds_per_batch)
    for first in range(0, args.runs, per):
        rounds = range(first, min(first + per, args.runs))
        for task, files in _by_task(paths).items():
            done = {f: len(report["submissions"].get(f"{task}/{f.name}", [])) for f in files}
            todo = [f for i in rounds for f in files if done[f] <= i]  # round by round
            if not todo:
                continue  # done in the run this one resumes
            if args.stop_after and time.monotonic() - started + slowest > args.stop_after:
                print(f"stopped: the next run could end past {args.stop_after:.0f} s", flush=True)
                return _finish(report, args.out)
            extra = ["--device", device, "--case", SMALL[task]] if args.small else ["--device", device]
            extra += ["--config", args.config] if args.config else []
            run = _submitted if args.submit else _batched
            began = time.monotonic()
            for path, row in zip(todo, run(todo, task, tmp, first, extra)):
                rows = report["submissions"].setdefault(f"{task}/{path.name}", [])
                rows.append(row)
                print(f"{task}/{path.name} run {len(rows) - 1}: rc={row['rc']} "
                      f"status={row['status']} flags={len(row['flags'])} screen={row['screen']} "
                      f"score={row['score_ns']} wall={row['wall_s']}s", flush=True)
                for f in row["flags"]:
                    print(f"    flag: {f}")
            slowest = max(slowest, time.monotonic() - began)
            if args.out:
                args.out.write_text(json.dumps(report, indent=2))
    return _finish(report, args.out)


def _by_task(paths: list[Path]) -> dict[str, list[Path]]:
    tasks: dict[str, list[Path]] = {}
    for path in paths:
        tasks.setdefault(path.parent.name, []).append(path)
    return tasks


def _batched(files: list[Path], task: str, tmp: Path, i: int, extra: list[str]) -> list[dict]:
    """One `runner.py batch` of `files` in leaderboard mode (the route a server's uploads
    take: judges and first workers forked per slot); a row per file, in order."""
    out = tmp / f"{task}-batch-{i}.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "runner.py"), "batch", *map(str, files), "--task", task,
           "--mode", "leaderboard", "--db", str(tmp / "honest.db"), "--json", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=judge_env())
    if not out.exists():
        raise SystemExit(f"batch wrote no summary (exit {proc.returncode}):\n"
                         + proc.stdout[-3000:] + proc.stderr[-3000:])
    return [{"rc": 0 if r["status"] == "passed" else 1, "status": r["status"],
             "flags": r["flags"], "screen": [f["rule"] for f in r["screen"]
                                             if f["severity"] != "info"],
             "score_ns": r["score_ns"], "wall_s": round(r["wall_seconds"] or 0.0, 1)}
            for r in json.loads(out.read_text())["results"]]


def _submitted(files: list[Path], task: str, tmp: Path, i: int, extra: list[str]) -> list[dict]:
    """A `runner.py submit` per file (the contestant's route); a row per file."""
    rows = []
    for path in files:
        doc, proc, wall = run_submit(path, tmp / f"{task}-{path.stem}-{i}.json",
                                     "--db", str(tmp / "honest.db"), "--user", path.stem, *extra)
        rows.append({"rc": proc.returncode, "status": doc.get("status"),
                     "flags": case_flags(doc),
                     "screen": [f["rule"] for f in doc.get("screen", [])
                                if f["severity"] != "info"],
                     "score_ns": doc.get("score_ns"), "wall_s": round(wall, 1)})
    return rows


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
