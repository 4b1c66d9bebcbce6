"""The contest server under load, with real processes: 10 submissions from 10 concurrent
clients on 2 CPU worker slots, each judged exactly once and ranked as `runner.py
leaderboard --json` ranks; the server killed with SIGKILL while jobs wait, started again:
every accepted submission judged, none twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, run_cli, warm_env
from serverkit import CASE, Server, add_user, request, upload

from harness.storage.store import Store

pytest.importorskip("flask", reason="the server needs Flask")

SUBS = ROOT / "tests" / "submissions" / "leaderboard"
FILES = [SUBS / "fast.py", SUBS / "sleep_1ms.py", ROOT / "submissions" / "vectoradd" / "add_torch.py"]
# Uploads per client: the load is ten clients at once; each upload past the first adds a judge
# run (seconds of CPU) and no new case of the queue's.
PER_CLIENT = 1


def jobs_of(db: str) -> list[dict]:
    store = Store(db)
    try:
        return store.query("SELECT id, user_name, status, attempts, submission_id, verdict, "
                           "worker, error FROM jobs ORDER BY id")
    finally:
        store.close()


def wait_all_done(db: str, n: int, timeout: float, log) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = jobs_of(db)
        if len(jobs) == n and all(j["status"] in ("done", "failed") for j in jobs):
            return jobs
        time.sleep(0.5)
    pytest.fail(f"not judged in {timeout} s: {jobs_of(db)}\n" + log.read_text()[-3000:])


def assert_judged_once(db: str, jobs: list[dict]) -> None:
    assert all(j["status"] == "done" and j["verdict"] == "passed" for j in jobs), jobs
    store = Store(db)
    subs = store.query("SELECT id FROM submissions ORDER BY id")
    store.close()
    recorded = sorted(j["submission_id"] for j in jobs)
    assert recorded == [s["id"] for s in subs]  # one submission per job, none without a job


@pytest.mark.xdist_group("loud")  # never beside another test of the group (conftest.py)
@pytest.mark.slow
def test_ten_submissions_from_ten_clients(tmp_path):
    """Ten clients upload at once, a file each, of three kinds: every upload gets the next
    id, each job is judged once by one of the two slots, and the served ranking is the
    command's."""
    db = str(tmp_path / "load.db")
    tokens = [add_user(db, f"user{i}") for i in range(10)]
    log = tmp_path / "serve.log"
    server = Server(db, log, "--workers", "2", "--device", "cpu", *CASE).start()
    try:
        def client(i: int) -> list[int]:
            ids = []
            for k in range(PER_CLIENT):
                f = FILES[(i + k) % len(FILES)]
                reply = upload(server.base, tokens[i], "vectoradd", "CPU", "leaderboard",
                               f.name, f.read_bytes())
                assert reply.code == 200, reply.body
                ids.append(reply.body["details"]["id"])
            return ids

        with ThreadPoolExecutor(10) as pool:
            ids = sorted(i for got in pool.map(client, range(10)) for i in got)
        assert ids == list(range(1, 10 * PER_CLIENT + 1))
        jobs = wait_all_done(db, 10 * PER_CLIENT, 600, log)
        assert_judged_once(db, jobs)
        assert all(j["attempts"] == 1 for j in jobs)
        workers = {w["worker"] for w in Store(db).query("SELECT worker FROM jobs")}
        assert len(workers) == 2  # both slots judged
        served = request(f"{server.base}/api/leaderboard/vectoradd").body
    finally:
        server.stop()
    command = run_cli("leaderboard", "vectoradd", "--json", env={"HARNESS_DB": db})
    assert command.rc == 0
    assert served == json.loads(command.out)
    assert len(served["devices"]["CPU"]) == 10  # each user ranked once


@pytest.mark.slow
def test_server_killed_with_jobs_queued(tmp_path):
    db = str(tmp_path / "kill.db")
    token = add_user(db, "alice")
    config = tmp_path / "server.yaml"
    config.write_text("server:\n  lease_seconds: 3\n")
    log = tmp_path / "serve.log"
    args = ("--workers", "1", "--device", "cpu", *CASE, "--config", str(config))
    server = Server(db, log, *args).start()
    data = FILES[0].read_bytes()
    for _ in range(6):
        assert upload(server.base, token, "vectoradd", "CPU", "leaderboard", "fast.py",
                      data).code == 200
    deadline = time.monotonic() + 60
    while not any(j["status"] == "running" for j in jobs_of(db)):
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    server.kill()  # mid-job, with the rest queued
    assert any(j["status"] == "queued" for j in jobs_of(db))
    server = Server(db, log, *args, port=server.port).start()
    try:
        jobs = wait_all_done(db, 6, 300, log)
    finally:
        server.stop()
    assert_judged_once(db, jobs)
    assert sorted(j["attempts"] for j in jobs)[-1] <= 2


@pytest.mark.slow
def test_latency_benchmark_runs_a_real_server():
    """benchmarks/server_latency.py, at its smallest: a real server, two uploads, one round."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "server_latency.py"),
                           "--clients", "2", "--rounds", "1"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 uploads from 2 clients: upload to job start median" in proc.stdout


@pytest.mark.slow
def test_api_latency_benchmark_times_uploads_and_pages_of_a_real_server(tmp_path):
    """benchmarks/server_api_latency.py, at its smallest, this tree against itself as the
    base: every upload accepted, every page served, each quantile and the ratios written."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "server_api_latency.py"),
                           "--clients", "3", "--requests", "4", "--rounds", "1",
                           "--base-root", str(ROOT), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, **warm_env()})
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "server_api_latency.json").read_text())
    assert report["this"]["upload"]["n"] == report["base"]["page"]["n"] == 12
    assert set(report["ratio_this_over_base"]) == {"upload", "page"}
    assert "this / base: upload p50" in proc.stdout
