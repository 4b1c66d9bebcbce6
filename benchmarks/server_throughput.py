"""The contest server against `runner.py batch`: the same submissions, judged both ways.

    python benchmarks/server_throughput.py [--submissions 20] [--users 5] [--device cuda|cpu]
        [--case "k: v"]... [--out DIR]

Copies of the vectoradd examples (each a file of its own) are judged in leaderboard mode
twice on one machine: through `runner.py serve --workers auto` with every file sent at once
by its own `runner.py submit --server` (the contestants' client, one user per few files),
then through one `runner.py batch` of the same files. Each route's wall runs from its
first command's start to its last command's exit. Reported: throughput of each and their
ratio (server / batch), the GPU's idle between one job's end and the next one's start (the
queue's own times; the batch's from its summary), the most jobs running at once, the
verdicts of both, and whether the served ranking equals `runner.py leaderboard --json`.
OUT/server_throughput.json holds it all. `--device cpu` runs it on one CPU slot.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from serverkit import Server, add_user, request  # noqa: E402

from harness.storage.store import Store  # noqa: E402

EXAMPLES = ("add_torch.py", "add_triton.py", "add_inplace.py")
TASK = "vectoradd"


def make_files(folder: Path, count: int, device: str) -> list[Path]:
    """`count` distinct submission files, the examples in turn (the Triton one only on a GPU),
    each marked with its number so that no two are the same code."""
    examples = [e for e in EXAMPLES if device == "cuda" or "triton" not in e]
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for k in range(count):
        source = ROOT / "submissions" / TASK / examples[k % len(examples)]
        path = folder / f"s{k:02d}_{source.name}"
        path.write_text(source.read_text() + f"\n# copy {k}\n")
        files.append(path)
    return files


def gaps(intervals: list[tuple[float, float]]) -> tuple[list[float], int]:
    """Idle seconds between one interval's end and the next one's start (in start order),
    and the most intervals that overlap at any moment."""
    spans = sorted(intervals)
    idle = [max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:])]
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return idle, most


def _idle_summary(idle: list[float], spans: list[tuple[float, float]]) -> dict:
    """The idle gaps, and the median job's own wall (start to end, its judge included)."""
    return {"median_s": statistics.median(idle) if idle else None,
            "max_s": max(idle) if idle else None, "total_s": sum(idle),
            "job_wall_median_s": statistics.median(e - s for s, e in spans) if spans else None}


def server_route(files: list[Path], tmp: Path, users: int, extra: list[str]) -> dict:
    """Every file sent at once through `submit --server` to `serve --workers auto`."""
    db = str(tmp / "serve.db")
    tokens = [add_user(db, f"u{i}") for i in range(users)]
    server = Server(db, tmp / "serve.log", "--workers", "auto", *extra).start(timeout=180)
    try:
        began = time.time()
        clients = [subprocess.Popen(
            [sys.executable, str(ROOT / "runner.py"), "submit", str(f), "--server", server.base,
             "--token", tokens[k % users]], stdout=(tmp / f"client{k}.log").open("w"),
            stderr=subprocess.STDOUT, cwd=ROOT) for k, f in enumerate(files)]
        codes = [c.wait() for c in clients]
        wall = time.time() - began
        served = request(f"{server.base}/api/leaderboard/{TASK}").body
    finally:
        server.stop()
    listed = subprocess.run([sys.executable, str(ROOT / "runner.py"), "leaderboard", TASK,
                             "--json", "--db", db], capture_output=True, text=True, cwd=ROOT)
    jobs = Store(db).query("SELECT id, status, started_ts, ended_ts, worker, attempts, file_name "
                           "FROM jobs ORDER BY id")
    spans = [(j["started_ts"], j["ended_ts"]) for j in jobs if j["started_ts"] and j["ended_ts"]]
    idle, most = gaps(spans)
    return {"wall_s": wall, "exit_codes": codes, "jobs": [dict(j) for j in jobs],
            "statuses": [j["status"] for j in jobs], "idle": _idle_summary(idle, spans),
            "most_running": most,
            "ranking_equal": listed.returncode == 0 and served == json.loads(listed.stdout),
            "ranked": served}


def batch_route(files: list[Path], tmp: Path, extra: list[str]) -> dict:
    """One `runner.py batch` of the same files."""
    summary = tmp / "batch.json"
    began = time.time()
    proc = subprocess.run([sys.executable, str(ROOT / "runner.py"), "batch", *map(str, files),
                           "--db", str(tmp / "batch.db"), "--json", str(summary), *extra],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.time() - began
    doc = json.loads(summary.read_text()) if summary.exists() else {"results": []}
    results = doc["results"]
    spans = [(r["started"], r["started"] + r["wall_seconds"]) for r in results if r.get("started")]
    idle, most = gaps(spans)
    return {"wall_s": wall, "exit_code": proc.returncode, "output_tail": proc.stdout[-2000:],
            "statuses": [r["status"] for r in results], "idle": _idle_summary(idle, spans),
            "most_running": most, "results": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--case", action="append", default=[],
                        help="judge these cases instead of the task's (both routes alike)")
    parser.add_argument("--out", type=Path, default=Path("server-throughput-out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="server-throughput-"))
    files = make_files(tmp / "files", args.submissions, args.device)
    extra = [a for c in args.case for a in ("--case", c)]
    extra += ["--device", "cpu"] if args.device == "cpu" else []
    served = server_route(files, tmp, args.users, extra)
    batch = batch_route(files, tmp, extra)
    n = len(files)
    report = {"command": sys.argv, "submissions": n, "device": args.device, "server": served,
              "batch": batch,
              "throughput_per_min": {"server": 60 * n / served["wall_s"],
                                     "batch": 60 * n / batch["wall_s"]},
              "ratio": batch["wall_s"] / served["wall_s"]}
    (args.out / "server_throughput.json").write_text(json.dumps(report, indent=2))
    for name, route in (("server", served), ("batch", batch)):
        idle = route["idle"]
        print(f"{name}: {n} submissions in {route['wall_s']:.1f} s "
              f"({report['throughput_per_min'][name]:.2f}/min), statuses "
              f"{dict((s, route['statuses'].count(s)) for s in set(route['statuses']))}, "
              f"GPU idle between jobs median {idle['median_s'] or 0:.2f} s, max "
              f"{idle['max_s'] or 0:.2f} s, job wall median "
              f"{idle['job_wall_median_s'] or 0:.2f} s, "
              f"most running at once {route['most_running']}")
    print(f"throughput ratio server / batch: {report['ratio']:.3f}; served ranking equals "
          f"leaderboard --json: {served['ranking_equal']}; client exit codes "
          f"{sorted(set(served['exit_codes']))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
