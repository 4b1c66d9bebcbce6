"""Throughput of `runner.py batch`: this tree beside a baseline tree, in the same run.

    python benchmarks/throughput.py --baseline REF_OR_FOLDER [--device cuda|cpu]
        [--modes test,leaderboard] [--rounds 1] [--case "k: v"]... [--only PART]... [--out DIR]

The example submissions (`submissions/*/*.py`; on the CPU those that run there) are judged
by one `runner.py batch` per tree, mode and round, on one slot (`--jobs 1`, one GPU), the
trees alternating so that drifts hit both alike. The baseline is a folder holding another
checkout, or a git ref of this repository (extracted with `git archive`). For each tree
and mode: the wall per job (median) and where it went (`batch --json`'s parts: the judge
process outside the evaluation, the wait for the worker, each phase, the rest, the
recording; a tree too old to report them shows the wall alone), the batch's wall, runs
per hour of its slot (submissions / wall), the GPU's busy fraction over the batch
(nvidia-smi's utilisation, sampled every 100 ms) and each submission's verdict, score and
case scores.
Then, per mode, this tree's figures over the baseline's, and each score's ratio.
OUT/throughput.json holds it all.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_EXAMPLES = ("vectoradd/add_torch.py", "vectoradd/add_inplace.py")


def examples(device: str) -> list[Path]:
    """The example submissions this device runs: on a GPU every one of a one-GPU task
    (multi-GPU tasks are judged on the CPU only so far), on the CPU the vectoradd ones that
    need no compiler of a GPU's."""
    if device == "cpu":
        return [ROOT / "submissions" / name for name in CPU_EXAMPLES]
    import yaml

    def one_gpu(example: Path) -> bool:
        spec = yaml.safe_load((ROOT / "tasks" / example.parent.name / "task.yml").read_text())
        return not spec.get("multi_gpu")

    return sorted(filter(one_gpu, (ROOT / "submissions").glob("*/*.py")))


def baseline_tree(ref: str, scratch: Path) -> Path:
    """The baseline checkout: `ref` itself where it is a folder, else this repository's
    tree at the git ref `ref`, extracted under `scratch`."""
    if Path(ref).is_dir():
        return Path(ref).resolve()
    target = scratch / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


class GpuBusy:
    """nvidia-smi's utilisation of the visible GPU, sampled while the block runs; None
    where there is no nvidia-smi (the CPU)."""

    def __enter__(self) -> GpuBusy:
        self.samples: list[float] = []
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "100", "-i", "0"], stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            out, _ = self.proc.communicate()
            self.samples = [float(x) for x in out.split() if x.replace(".", "").isdigit()]

    @property
    def fraction(self) -> float | None:
        return statistics.mean(self.samples) / 100 if self.samples else None


def run_batch(tree: Path, files: list[Path], mode: str, args: argparse.Namespace,
              scratch: Path) -> dict:
    """One `runner.py batch` of `files` with the tree's own runner; its figures."""
    out, db = scratch / f"batch-{time.monotonic_ns()}.json", scratch / "results.db"
    cases = [x for case in args.case for x in ("--case", case)]
    command = [sys.executable, "runner.py", "batch", *map(str, files), "--mode", mode,
               "--device", args.device, "--jobs", "1", "--db", str(db), "--json", str(out),
               *cases]
    began = time.perf_counter()
    with GpuBusy() as busy:
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                              env={**_env(), "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - began
    if not out.exists():
        raise RuntimeError(f"batch in {tree} wrote no summary:\n{done.stdout[-3000:]}"
                           f"{done.stderr[-3000:]}")
    doc = json.loads(out.read_text())
    results = doc["results"]
    parts = [r.get("parts") or {} for r in results]
    names = sorted({k for p in parts for k in p})
    return {
        "wall_s": wall, "batch_wall_s": doc["wall_seconds"],
        "job_wall_s": statistics.median(r["wall_seconds"] for r in results),
        "parts_s": {k: statistics.median(p.get(k, 0.0) for p in parts) for k in names}
        if all(parts) else {},
        "runs_per_hour": len(results) / doc["wall_seconds"] * 3600,
        "gpu_busy": busy.fraction,
        "verdicts": {_name(r["file"]): r["status"] for r in results},
        "scores_ns": {_name(r["file"]): r["score_ns"] for r in results},
        "cases_ns": {_name(r["file"]): r.get("cases") for r in results},  # per phase, per case
    }


def _name(path: str) -> str:
    return "/".join(Path(path).parts[-2:])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_DB")}


def compare(new: list[dict], old: list[dict]) -> dict:
    """This tree's figures over the baseline's (medians over rounds), and each score's."""
    def med(rows: list[dict], key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return statistics.median(values) if values else None

    out = {}
    for key in ("job_wall_s", "batch_wall_s", "runs_per_hour", "gpu_busy"):
        a, b = med(new, key), med(old, key)
        out[key] = a / b if a is not None and b else None
    scores = {}
    for name in new[0]["scores_ns"]:
        a = [r["scores_ns"].get(name) for r in new if r["scores_ns"].get(name)]
        b = [r["scores_ns"].get(name) for r in old if r["scores_ns"].get(name)]
        if a and b:
            scores[name] = statistics.median(a) / statistics.median(b)
    out["scores"] = scores
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="a git ref, or a folder of a checkout")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--modes", default="test,leaderboard")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--case", action="append", default=[])
    parser.add_argument("--only", action="append", default=[],
                        help="only the examples whose path holds this (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    files = [f for f in examples(args.device)
             if not args.only or any(part in str(f) for part in args.only)]
    report: dict = {"device": args.device, "files": [_name(str(f)) for f in files],
                    "rounds": args.rounds, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="harness-throughput-") as tmp:
        scratch = Path(tmp)
        trees = {"baseline": baseline_tree(args.baseline, scratch), "new": ROOT}
        for mode in args.modes.split(","):
            runs: dict[str, list[dict]] = {"baseline": [], "new": []}
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    runs[name].append(run_batch(tree, files, mode, args, scratch))
                    _say(mode, name, runs[name][-1])
            report["modes"][mode] = {**runs, "new_over_baseline": compare(runs["new"],
                                                                           runs["baseline"])}
            ratio = report["modes"][mode]["new_over_baseline"]
            print(f"{mode}: new / baseline: job wall {_fmt(ratio['job_wall_s'])}, runs per "
                  f"hour {_fmt(ratio['runs_per_hour'])}, scores "
                  + ", ".join(f"{k} {v:.3f}" for k, v in ratio["scores"].items()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "throughput.json").write_text(json.dumps(report, indent=1))
    return 0


def _say(mode: str, name: str, run: dict) -> None:
    parts = ", ".join(f"{k} {v:.2f}" for k, v in run["parts_s"].items())
    busy = f", GPU busy {run['gpu_busy']:.0%}" if run["gpu_busy"] is not None else ""
    scores = ", ".join(f"{Path(k).stem} {v / 1e3:.2f}" for k, v in run["scores_ns"].items() if v)
    print(f"{mode} {name}: job {run['job_wall_s']:.2f} s ({parts or 'parts not reported'}), "
          f"batch {run['batch_wall_s']:.1f} s, {run['runs_per_hour']:.0f} runs/h{busy}"
          + (f"; scores (µs) {scores}" if scores else ""), flush=True)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    sys.exit(main())
