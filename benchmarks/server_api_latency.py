"""The contest server's API latency under many clients, this tree beside another.

    python benchmarks/server_api_latency.py [--clients 50] [--requests 20] [--rounds 2]
        [--base-root DIR] [--out DIR]

Starts `runner.py serve --workers 0` (a parked CPU slot takes uploads and judges none:
the queue only fills) from this
checkout and, where `--base-root` names another checkout (a worktree of an older commit),
from that one too, each on a fresh database, in turns (base, this, base, this, ...:
`--rounds` each). In each run `--clients` clients at once each send `--requests` pairs: a
test-mode upload (POST /submission/vectoradd/CPU/test) and the leaderboard's home page
(GET /, every task's board), each timed from its send to its whole answer. Reported per tree: the
p50 and p99 of each kind's round trip over all its runs, each run's pairs per second (the
clients wait for each answer, so latency and throughput go together), and the ratio this /
base of each quantile.
OUT/server_api_latency.json holds every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from serverkit import add_user, free_port, request, upload  # noqa: E402

from harness.storage.queue import JobQueue  # noqa: E402
from harness.storage.store import Store  # noqa: E402

SUBMISSION = ROOT / "submissions" / "vectoradd" / "add_torch.py"


def serve(root: Path, db: str, log: Path) -> tuple[subprocess.Popen, str]:
    """`runner.py serve` of the checkout at `root`, answering; its process and base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(root / "runner.py"), "serve", "--db", db,
                             "--port", str(port), "--workers", "0"], cwd=root,
                            stdout=log.open("a"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("serve ended: " + log.read_text()[-2000:])
        try:
            if request(base + "/api/queue").code == 200:
                return proc, base
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("serve did not start: " + log.read_text()[-2000:])


def one_run(root: Path, tmp: Path, clients: int, requests: int) -> dict[str, list[float]]:
    """Every client's round trips (s) against a fresh server of `root`, by kind."""
    db = str(tmp / f"run-{time.monotonic_ns()}.db")
    tokens = [add_user(db, f"u{i}") for i in range(clients)]
    queue = JobQueue(Store(db))
    queue.register_worker("parked CPU slot", "CPU")  # takes CPU uploads, claims nothing
    queue.store.close()
    proc, base = serve(root, db, tmp / "serve.log")
    data = SUBMISSION.read_bytes()
    times: dict[str, list[float]] = {"upload": [], "page": []}

    def client(i: int) -> None:
        for _ in range(requests):
            began = time.monotonic()
            reply = upload(base, tokens[i], "vectoradd", "CPU", "test", "a.py", data)
            times["upload"].append(time.monotonic() - began)
            if reply.code != 200:
                raise RuntimeError(f"upload refused: {reply.code} {reply.body}")
            began = time.monotonic()
            page = request(base + "/")
            times["page"].append(time.monotonic() - began)
            if page.code != 200:
                raise RuntimeError(f"the page failed: {page.code}")

    began = time.monotonic()
    try:
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(client, range(clients)))
        times["wall"] = [time.monotonic() - began]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return times


def _quantiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100)
    return {"n": len(values), "p50_ms": 1000 * cuts[49], "p99_ms": 1000 * cuts[98]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="pairs per client per run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base-root", type=Path, help="another checkout to compare with")
    parser.add_argument("--out", type=Path, default=Path("server-api-latency-out"))
    args = parser.parse_args()
    trees = {"this": ROOT} | ({"base": args.base_root.resolve()} if args.base_root else {})
    collected: dict[str, dict[str, list[float]]] = {
        n: {"upload": [], "page": [], "wall": []} for n in trees}
    with tempfile.TemporaryDirectory(prefix="server-api-latency-") as tmp:
        for _ in range(args.rounds):
            for name in sorted(trees):  # base before this, in every round
                got = one_run(trees[name], Path(tmp), args.clients, args.requests)
                for kind, values in got.items():
                    collected[name][kind] += values
    pairs = args.clients * args.requests
    report: dict[str, dict] = {name: {kind: _quantiles(kinds[kind]) for kind in ("upload", "page")}
                               | {"pairs_per_s": [pairs / w for w in kinds["wall"]]}
                               for name, kinds in collected.items()}
    for name, kinds in report.items():
        print(f"{name} ({trees[name]}): " + "; ".join(
            f"{kind} p50 {kinds[kind]['p50_ms']:.1f} ms, p99 {kinds[kind]['p99_ms']:.1f} ms"
            for kind in ("upload", "page"))
            + "; pairs per second " + ", ".join(f"{r:.1f}" for r in kinds["pairs_per_s"]))
    if "base" in report:
        report["ratio_this_over_base"] = {
            kind: {p: report["this"][kind][p] / report["base"][kind][p]
                   for p in ("p50_ms", "p99_ms")} for kind in ("upload", "page")}
        print("this / base: " + "; ".join(
            f"{kind} p50 {r['p50_ms']:.2f}, p99 {r['p99_ms']:.2f}"
            for kind, r in report["ratio_this_over_base"].items()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "server_api_latency.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
