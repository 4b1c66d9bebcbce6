"""Concurrent writers on one database, SQLite and PostgreSQL: two `runner.py serve`
processes (each with a judging slot) and a `runner.py worker` take uploads sent to both
servers at once and judge them; every job ends `done` once, with one submission of its
own and that submission's runs, whichever process judged it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, warm_env
from serverkit import CASE, Server, add_user, upload
from test_server_load import jobs_of

from harness.storage.store import Store

pytest.importorskip("flask", reason="the server needs Flask")
pytestmark = pytest.mark.slow

UPLOADS = 8
FILE = (ROOT / "tests" / "submissions" / "leaderboard" / "fast.py").read_bytes()


def ended(db: str) -> list[dict]:
    return [j for j in jobs_of(db) if j["status"] in ("done", "failed")]


def test_two_servers_and_a_worker_record_each_job_once(tmp_path, db_url):
    config = tmp_path / "server.yaml"
    config.write_text("server:\n  rate_limit: 0\n")
    common = ("--device", "cpu", *CASE, "--config", str(config))
    tokens = [add_user(db_url, name) for name in ("alice", "bob", "carol")]
    log = tmp_path / "run.log"
    servers = [Server(db_url, log, "--workers", "1", *common).start() for _ in range(2)]
    worker = subprocess.Popen([sys.executable, str(ROOT / "runner.py"), "worker", "--db", db_url,
                               *common], cwd=ROOT, stdout=log.open("a"),
                              stderr=subprocess.STDOUT, start_new_session=True,
                              env={**os.environ, **warm_env()})
    try:
        def send(i: int) -> int:
            reply = upload(servers[i % 2].base, tokens[i % 3], "vectoradd", "CPU",
                           "leaderboard", f"k{i}.py", FILE)
            assert reply.code == 200, reply.body
            return reply.body["details"]["id"]

        with ThreadPoolExecutor(6) as pool:
            accepted = sorted(pool.map(send, range(UPLOADS)))
        deadline = time.monotonic() + 400
        while len(ended(db_url)) < UPLOADS and time.monotonic() < deadline:
            time.sleep(1)
        jobs = ended(db_url)
    finally:
        for server in servers:
            server.stop()
        worker.terminate()
        worker.wait(timeout=60)
    assert [j["id"] for j in jobs] == accepted, log.read_text()[-3000:]
    assert {j["status"] for j in jobs} == {"done"}, [j["error"] for j in jobs]
    subs = [j["submission_id"] for j in jobs]
    assert None not in subs and len(set(subs)) == UPLOADS
    store = Store(db_url)
    assert store.query("SELECT COUNT(*) AS n FROM submissions")[0]["n"] == UPLOADS
    runs = store.query("SELECT submission_id, COUNT(*) AS n FROM runs GROUP BY submission_id")
    assert sorted(r["submission_id"] for r in runs) == sorted(subs)
    assert len({r["n"] for r in runs}) == 1  # every submission its phases' runs, once each
    assert len({j["worker"] for j in jobs}) >= 2  # more than one process judged
    store.close()
