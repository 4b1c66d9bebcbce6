"""Upload-to-job-start latency of the contest server (`runner.py serve`), on the CPU.

    python benchmarks/server_latency.py [--clients 10] [--rounds 5]

Starts `serve --workers N` (N = clients, so that no job waits for a free slot) on a fresh
database, then in each round N clients upload one trivial test-mode submission at once;
a job's latency is from just before its upload to its claim by a slot (`jobs.started_ts`).
Prints the median and p99 over every job."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from serverkit import CASE, Server, add_user, upload  # noqa: E402

from harness.storage.store import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="server-latency-"))
    db = str(tmp / "l.db")
    tokens = [add_user(db, f"u{i}") for i in range(args.clients)]
    server = Server(db, tmp / "serve.log", "--workers", str(args.clients), "--device", "cpu",
                    *CASE).start()
    data = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_bytes()
    sent: dict[int, float] = {}
    try:
        for _ in range(args.rounds):
            def one(i: int) -> None:
                t = time.time()
                reply = upload(server.base, tokens[i], "vectoradd", "CPU", "test", "a.py", data)
                sent[reply.body["details"]["id"]] = t

            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(one, range(args.clients)))
            while True:  # the round ends when every job is judged
                rows = Store(db).query("SELECT status FROM jobs")
                if all(r["status"] in ("done", "failed") for r in rows):
                    break
                time.sleep(0.5)
    finally:
        server.stop()
    rows = Store(db).query("SELECT id, started_ts FROM jobs")
    waits = sorted((r["started_ts"] - sent[r["id"]]) * 1e3 for r in rows)
    p99 = waits[min(len(waits) - 1, round(0.99 * (len(waits) - 1)))]
    print(f"{len(waits)} uploads from {args.clients} clients: upload to job start median "
          f"{statistics.median(waits):.1f} ms, p99 {p99:.1f} ms, max {waits[-1]:.1f} ms")


if __name__ == "__main__":
    main()
