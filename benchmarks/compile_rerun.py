"""What a file's kept compiler caches save on its reruns (`worker.compile_cache`).

    python benchmarks/compile_rerun.py FILE --task TASK [--runs 3] [--device cpu|cuda]
        [--mode test] [--out FILE.json]

Runs `runner.py submit FILE` as a user would, alternating `compile_cache: per_file` (one
fresh cache folder for all its runs: the first compiles, the later ones find its work)
and `private` (empty caches in every run: the harness before per-file caches, the anchor
of the same call). Prints each run's wall (the command's) and start-up (the result's
`startup_seconds`: the worker's start and the submission's import, where `load_inline`
builds), then the medians of the later per-file runs against the private ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _load import ROOT


def one_run(file: Path, task: str, device: str, mode: str, cache: Path, private: Path | None,
            work: Path) -> dict:
    out = work / f"r{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(ROOT / "runner.py"), "submit", str(file), "--task", task,
           "--device", device, "--mode", mode, "--no-record", "--json", str(out)]
    if private is not None:
        cmd += ["--config", str(private)]
    env = {**os.environ, "HARNESS_COMPILE_CACHE": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    wall = time.perf_counter() - t0
    doc = json.loads(out.read_text()) if out.exists() else {}
    if proc.returncode != 0:
        print(proc.stdout[-2000:] + proc.stderr[-2000:], file=sys.stderr)
    return {"setting": "private" if private else "per_file", "rc": proc.returncode,
            "wall_s": round(wall, 3), "startup_s": round(doc.get("startup_seconds") or 0.0, 3),
            "reused": (doc.get("harness") or {}).get("compile_cache", {}).get("reused")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--task", required=True)
    parser.add_argument("--runs", type=int, default=3, help="runs of each setting")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--mode", default="test")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.file.is_file():
        parser.error(f"no such submission file: {args.file}")
    with tempfile.TemporaryDirectory(prefix="compile-rerun-") as tmp:
        work = Path(tmp)
        private = work / "private.yaml"
        private.write_text("worker:\n  compile_cache: private\n")
        cache = work / "caches"
        runs = []
        for i in range(args.runs + 1):  # per_file's first run fills the folder
            for setting in (("private", "per_file") if i % 2 else ("per_file", "private")):
                if setting == "private" and i == args.runs:
                    continue
                run = one_run(args.file.resolve(), args.task, args.device, args.mode, cache,
                              private if setting == "private" else None, work)
                runs.append(run)
                print(json.dumps(run), flush=True)
    later = [r for r in runs if r["setting"] == "per_file" and r["reused"] and r["rc"] == 0]
    cold = [r for r in runs if r["setting"] == "private" and r["rc"] == 0]
    summary = {"file": str(args.file), "task": args.task, "device": args.device,
               "mode": args.mode, "failed_runs": sum(r["rc"] != 0 for r in runs)}
    for name, group in (("per_file_rerun", later), ("private", cold)):
        summary[name] = {"runs": len(group)} | {
            key: statistics.median(r[key] for r in group) if group else None
            for key in ("wall_s", "startup_s")}
    if later and cold:
        ratio = summary["per_file_rerun"]["wall_s"] / summary["private"]["wall_s"]
        summary["wall_ratio"] = round(ratio, 3)
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"runs": runs, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
