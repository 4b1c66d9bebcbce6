"""The contest server under faults: no accepted upload lost, judged twice or blamed.

    python benchmarks/server_faults.py [--uploads 1000] [--clients 50] [--fault-every 4]
        [--seed 1] [--max-attempts 5] [--slots 2] [--out DIR]

A real `runner.py serve` (`--slots` less one CPU slots) and a real `runner.py worker` (one
more) judge
`--uploads` leaderboard uploads of honest submissions, sent by `--clients` concurrent
clients over HTTP (each retries an upload that met a dead server). Meanwhile, at random
moments (gaps drawn from an exponential of mean `--fault-every` seconds, `--seed`), one
process of the run is killed with SIGKILL, the kinds taken in turn in a shuffled order:
a judge process, a slot's judge template (the process judges are forked from), a
sandboxed worker (at most once per judge process), the worker slot's process (started
again at once) and the server (started again on its port).

At the end every job must have ended once: `done` with its one recorded submission, or
`failed` with an infrastructure reason after the attempts allowed. Reported: lost
(accepted uploads with no ended job), duplicated (a submission recorded twice for a job,
or without one), blamed (an honest submission given any verdict but `passed`, or failed
for a reason of its own), failed jobs, the faults made, the uploads' and the queue page's
latency (p50, p99) while the queue was full, and the last server's resident memory. The
exit code is 1 where lost, duplicated or blamed is not 0. OUT/server_faults.json holds it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from serverkit import CASE, Server, add_user, request, upload  # noqa: E402

from harness.judging.sandbox import procfs  # noqa: E402
from harness.judging.sandbox.procfs import family  # noqa: E402
from harness.storage.store import Store  # noqa: E402

FILES = [ROOT / "tests" / "submissions" / "leaderboard" / "fast.py",
         ROOT / "submissions" / "vectoradd" / "add_torch.py"]
FAULTS = ("judge", "template", "worker", "slot", "server")
JUDGE, TEMPLATE, WORKER = procfs.JUDGE_NAME, procfs.TEMPLATE_NAME, procfs.WORKER_NAME
UNREACHABLE = (urllib.error.URLError, OSError, http.client.HTTPException)


@dataclass
class Sent:
    """What the clients saw: the ids of accepted uploads, and each accepted upload's and
    each queue page's round trip (s)."""

    accepted: list[int] = field(default_factory=list)
    upload_s: list[float] = field(default_factory=list)
    queue_s: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Run:
    """The server and the worker slot's process, each started again after its kill."""

    def __init__(self, tmp: Path, max_attempts: int, slots: int = 2) -> None:
        self.db = str(tmp / "faults.db")
        self.config = tmp / "server.yaml"
        self.config.write_text(f"server:\n  lease_seconds: 3\n  max_attempts: {max_attempts}\n"
                               "  rate_limit: 0\n")
        self.log = tmp / "run.log"
        common = ("--device", "cpu", *CASE, "--config", str(self.config))
        self.server = Server(self.db, self.log, "--workers", str(max(1, slots - 1)), *common)
        self.slot_args = [sys.executable, str(ROOT / "runner.py"), "worker", "--db", self.db,
                          *common]
        self.slot: subprocess.Popen | None = None

    def start_slot(self) -> None:
        self.slot = subprocess.Popen(self.slot_args, cwd=ROOT, stdout=self.log.open("a"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def roots(self) -> list[int]:
        """The live processes at the top of the run: the server and the slot's process."""
        procs = [self.server.proc, self.slot]
        return [p.pid for p in procs if p is not None and p.poll() is None]

    def stop(self) -> None:
        self.server.stop()
        if self.slot is not None and self.slot.poll() is None:
            os.killpg(self.slot.pid, signal.SIGTERM)
            try:
                self.slot.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.slot.pid, signal.SIGKILL)
                self.slot.wait()


def _processes(roots: list[int], name: str) -> list[tuple[int, int]]:
    """(pid, parent) of the live processes below `roots` named `name` (/proc/PID/comm)."""
    found = []
    for root in roots:
        for pid in family(root) - {root}:
            fields = procfs.stat_fields(pid)
            if procfs.name_of(pid) == name and fields and fields[0] not in "ZX":
                found.append((pid, int(fields[1])))
    return found


class Faults:
    """SIGKILLs one process of the run at random moments, the kinds in a shuffled turn."""

    def __init__(self, run: Run, every: float, rng: random.Random) -> None:
        self.run, self.every, self.rng = run, every, rng
        self.made: list[dict] = []
        self.hit_judges: set[int] = set()  # judges whose worker was killed once already
        self.turn: list[str] = []

    def loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.rng.expovariate(1 / self.every)):
            if not self.turn:
                self.turn = self.rng.sample(FAULTS, len(FAULTS))
            kind = self.turn[0]
            detail = getattr(self, f"_{kind}")()
            if detail is not None:  # no target now: this kind waits for the next moment
                self.turn.pop(0)
                self.made.append({"t": time.time(), "kind": kind, "detail": detail})

    def _judge(self) -> str | None:
        return self._kill_one(JUDGE, "judge process")

    def _template(self) -> str | None:
        return self._kill_one(TEMPLATE, "judge template")

    def _kill_one(self, name: str, what: str) -> str | None:
        """Kill one live process named `name` below the run, chosen at random; what was
        killed, or None where there is none now."""
        found = _processes(self.run.roots(), name)
        if not found:
            return None
        pid, _ = self.rng.choice(found)
        _kill(pid)
        return f"{what} {pid}"

    def _worker(self) -> str | None:
        workers = [(p, parent) for p, parent in _processes(self.run.roots(), WORKER)
                   if parent not in self.hit_judges]
        if not workers:
            return None
        pid, judge = self.rng.choice(workers)
        self.hit_judges.add(judge)
        _kill(pid)
        return f"sandboxed worker {pid} of judge {judge}"

    def _slot(self) -> str:
        old = self.run.slot.pid
        os.killpg(old, signal.SIGKILL)
        self.run.slot.wait()
        self.run.start_slot()
        return f"worker slot process {old}"

    def _server(self) -> str:
        old = self.run.server.proc.pid
        self.run.server.kill()
        self.run.server.start(timeout=120)
        return f"server {old}"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def send(run: Run, tokens: list[str], count: int, clients: int) -> Sent:
    """Every upload, `clients` at a time; an upload that meets a dead server is sent again."""
    sent = Sent()

    def client(i: int) -> None:
        for k in range(i, count, clients):
            path = FILES[k % len(FILES)]
            while True:
                began = time.monotonic()
                try:
                    reply = upload(run.server.base, tokens[i % len(tokens)], "vectoradd", "CPU",
                                   "leaderboard", path.name, path.read_bytes())
                except UNREACHABLE:
                    time.sleep(0.3)
                    continue
                if reply.code >= 500:
                    time.sleep(0.3)
                    continue
                with sent.lock:
                    if reply.code == 200:
                        sent.accepted.append(reply.body["details"]["id"])
                        sent.upload_s.append(time.monotonic() - began)
                    else:
                        sent.refused.append(f"{reply.code}: {reply.body}")
                break

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    return sent


def _poll_queue(run: Run, sent: Sent, stop: threading.Event) -> None:
    while not stop.wait(0.25):
        began = time.monotonic()
        try:
            if request(run.server.base + "/api/queue").code == 200:
                sent.queue_s.append(time.monotonic() - began)
        except UNREACHABLE:
            pass


def _jobs(db: str) -> tuple[list[dict], list[int]]:
    store = Store(db)
    try:
        jobs = [dict(j) for j in store.query(
            "SELECT id, status, attempts, submission_id, verdict, error FROM jobs ORDER BY id")]
        subs = [s["id"] for s in store.query("SELECT id FROM submissions ORDER BY id")]
    finally:
        store.close()
    return jobs, subs


def wait_ended(run: Run, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs, _ = _jobs(run.db)
        if len(jobs) >= count and all(j["status"] in ("done", "failed") for j in jobs):
            return
        time.sleep(1.0)


def tally(jobs: list[dict], subs: list[int], accepted: list[int]) -> dict:
    """Lost, duplicated and blamed, with the jobs that count as each."""
    ended = {j["id"] for j in jobs if j["status"] in ("done", "failed")}
    lost = sorted(set(accepted) - ended) + [j["id"] for j in jobs if j["id"] not in ended
                                            and j["id"] not in accepted]
    recorded = [j["submission_id"] for j in jobs if j["status"] == "done"]
    duplicated = (len(recorded) - len(set(recorded)) + len(set(subs) - set(recorded))
                  + sum(1 for r in recorded if r is None))
    blamed = [j["id"] for j in jobs if (j["status"] == "done" and j["verdict"] != "passed")
              or (j["status"] == "failed" and not str(j["error"]).startswith("not judged"))]
    failed = [{"id": j["id"], "attempts": j["attempts"], "error": j["error"]}
              for j in jobs if j["status"] == "failed"]
    return {"lost": len(lost), "lost_jobs": lost, "duplicated": duplicated,
            "blamed": len(blamed), "blamed_jobs": blamed, "failed": failed,
            "jobs": len(jobs), "accepted": len(accepted),
            "replies_lost": len({j["id"] for j in jobs} - set(accepted))}


def _quantiles(values: list[float]) -> dict:
    if len(values) < 2:
        return {"n": len(values)}
    cuts = statistics.quantiles(values, n=100)
    return {"n": len(values), "p50_ms": 1000 * cuts[49], "p99_ms": 1000 * cuts[98]}


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def measure(tmp: Path, uploads: int, clients: int, every: float, seed: int,
            max_attempts: int, slots: int = 2) -> dict:
    """One run: the uploads sent and judged under faults; the report."""
    run = Run(tmp, max_attempts, slots)
    tokens = [add_user(run.db, f"user{i}") for i in range(min(clients, 50))]
    run.server.start(timeout=180)
    run.start_slot()
    faults, stop = Faults(run, every, random.Random(seed)), threading.Event()
    sent = Sent()
    threads = [threading.Thread(target=faults.loop, args=(stop,), daemon=True),
               threading.Thread(target=_poll_queue, args=(run, sent, stop), daemon=True)]
    began = time.time()
    try:
        for t in threads:
            t.start()
        clients_sent = send(run, tokens, uploads, clients)
        sent.accepted, sent.upload_s = clients_sent.accepted, clients_sent.upload_s
        sent.refused = clients_sent.refused
        wait_ended(run, len(sent.accepted), timeout=60 + 30 * uploads)
        stop.set()
        for t in threads:
            t.join()
        rss = _rss_mib(run.server.proc.pid)
    finally:
        stop.set()
        run.stop()
    jobs, subs = _jobs(run.db)
    counts = {kind: sum(f["kind"] == kind for f in faults.made) for kind in FAULTS}
    return {**tally(jobs, subs, sent.accepted), "wall_s": time.time() - began,
            "faults": counts, "fault_log": faults.made, "refused": sent.refused,
            "upload_latency": _quantiles(sent.upload_s),
            "queue_latency": _quantiles(sent.queue_s), "server_rss_mib": rss,
            "uploads": uploads, "clients": clients, "seed": seed, "slots": slots,
            "cpus": os.cpu_count()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--fault-every", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-attempts", type=int, default=5)
    parser.add_argument("--slots", type=int, default=2, help="CPU slots in all (2 or more)")
    parser.add_argument("--out", type=Path, default=Path("server-faults-out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="server-faults-") as tmp:
        report = measure(Path(tmp), args.uploads, args.clients, args.fault_every, args.seed,
                         args.max_attempts, args.slots)
    (args.out / "server_faults.json").write_text(json.dumps(report, indent=1))
    up, queue = report["upload_latency"], report["queue_latency"]
    print(f"{report['accepted']} uploads accepted from {args.clients} clients on "
          f"{args.slots} CPU slots ({report['cpus']} CPUs), "
          f"{report['jobs']} jobs, in {report['wall_s']:.0f} s; faults: "
          + ", ".join(f"{k} {v}" for k, v in report["faults"].items()))
    print(f"lost {report['lost']}, duplicated {report['duplicated']}, blamed "
          f"{report['blamed']}; failed after {args.max_attempts} attempts: "
          f"{len(report['failed'])}; replies lost: {report['replies_lost']}")
    print(f"upload p50 {up.get('p50_ms', 0):.1f} ms, p99 {up.get('p99_ms', 0):.1f} ms; "
          f"GET /api/queue p50 {queue.get('p50_ms', 0):.1f} ms, p99 "
          f"{queue.get('p99_ms', 0):.1f} ms; server RSS {report['server_rss_mib'] or 0:.0f} MiB")
    return 1 if report["lost"] or report["duplicated"] or report["blamed"] else 0


if __name__ == "__main__":
    sys.exit(main())
