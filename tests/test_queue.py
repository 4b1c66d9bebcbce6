"""The contest server's durable queue (harness/storage/queue.py): atomic claims across
processes, leases that bring a dead worker's job back, at most `max_attempts` claims, and
real `runner.py worker` processes, one killed with SIGKILL in the middle of a job. On
SQLite, and on PostgreSQL where $HARNESS_TEST_POSTGRES is set."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT

from harness.execution.stopping import EXIT_CODE
from harness.storage.queue import DONE, FAILED, QUEUED, RUNNING, JobQueue, NewJob
from harness.storage.store import Store

TRIVIAL = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_text()
CASE = ["--case", "size: 64; seed: 1"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def fill(queue: JobQueue, n: int, gpu: str = "CPU") -> list[int]:
    return [queue.enqueue(NewJob(f"user{i % 3}", "vectoradd", "test", gpu, f"f{i}.py", "code"))
            for i in range(n)]


CLAIMER = """
import sys, json
from harness.storage.store import Store
from harness.storage.queue import JobQueue
q = JobQueue(Store(sys.argv[1]), 60, 3)
got = []
while True:
    job = q.claim(sys.argv[2], ["cpu"])
    if job is None:
        break
    assert q.finish(job, {"n": job.id}, "passed", 0)
    got.append(job.id)
print(json.dumps(got))
"""


def test_claims_are_atomic_across_processes(db_url):
    """Four processes drain one queue at once: every job is taken by exactly one."""
    queue = JobQueue(Store(db_url))
    ids = fill(queue, 40)
    fill(queue, 3, gpu="H200")  # another kind: never taken by CPU slots
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, db_url, f"w{i}"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for i in range(4)]
    taken = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        taken += json.loads(out)
    assert sorted(taken) == ids
    rows = queue.store.query("SELECT status, attempts, COUNT(*) AS n FROM jobs "
                             "GROUP BY status, attempts ORDER BY status")
    assert [(r["status"], r["attempts"], r["n"]) for r in rows] == [(DONE, 1, 40), (QUEUED, 0, 3)]


def test_a_dead_workers_job_runs_again_then_fails(db_url):
    clock = Clock()
    queue = JobQueue(Store(db_url), lease_seconds=10, max_attempts=2, clock=clock)
    [job_id] = fill(queue, 1)
    first = queue.claim("a", ["CPU"])
    assert first.id == job_id and first.attempts == 1
    clock.t += 5
    assert queue.heartbeat(first)  # renewed: lease until t + 10
    clock.t += 9
    assert queue.claim("b", ["CPU"]) is None  # still held
    clock.t += 2  # the lease ran out: a's worker is taken for dead
    second = queue.claim("b", ["CPU"])
    assert (second.id, second.attempts, second.worker) == (job_id, 2, "b")
    assert not queue.heartbeat(first)
    assert not queue.finish(first, {"late": True}, "passed", 0)  # a's late result is dropped
    assert queue.get(job_id).status == RUNNING
    clock.t += 11  # b dies too: the second claim was the last
    assert queue.expire() == (0, 1)
    job = queue.get(job_id)
    assert job.status == FAILED and "stopped answering 2 times" in job.error
    assert queue.claim("c", ["CPU"]) is None


def test_a_job_the_machine_failed_runs_again_then_fails_with_the_reason(db_url):
    clock = Clock()
    queue = JobQueue(Store(db_url), lease_seconds=10, max_attempts=2, clock=clock)
    [job_id] = fill(queue, 1)
    first = queue.claim("a", ["CPU"])
    assert queue.retry(first, "the judge process ended without a result") == QUEUED
    assert queue.get(job_id).status == QUEUED and not queue.heartbeat(first)
    assert queue.retry(first, "late") is None  # the claim is no longer held
    second = queue.claim("b", ["CPU"])
    assert second.attempts == 2  # the failed claim counted
    assert queue.retry(second, "the judge process ended without a result") == FAILED
    job = queue.get(job_id)
    assert job.status == FAILED and job.verdict is None and job.submission_id is None
    assert job.error.startswith("not judged after 2 attempts") and "ended without" in job.error
    assert queue.claim("c", ["CPU"]) is None


def test_finish_records_in_the_same_transaction(db_url):
    """A result is recorded only by the claim that closes the job: a failing record leaves
    the job running (its lease brings it back), a lost claim records nothing."""
    store = Store(db_url)
    queue = JobQueue(store)
    [job_id] = fill(queue, 1)
    job = queue.claim("a", ["CPU"])

    def broken(s):
        s.execute("INSERT INTO users (name, token_hash, created_at) VALUES ('x', 'h', 't')")
        raise RuntimeError("the recording broke")

    with pytest.raises(RuntimeError):
        queue.finish(job, {}, "passed", 0, record=broken)
    assert queue.get(job_id).status == RUNNING
    assert store.query("SELECT COUNT(*) AS n FROM users")[0]["n"] == 0  # rolled back
    assert queue.finish(job, {"ok": 1}, "passed", 0, record=lambda s: 7)
    done = queue.get(job_id)
    assert (done.status, done.submission_id, done.document()) == (DONE, 7, {"ok": 1})


def test_release_and_delete(db_url):
    queue = JobQueue(Store(db_url))
    a, b = fill(queue, 2)
    job = queue.claim("w", ["CPU"])
    assert queue.release(job)  # a stopping worker gives it back, the claim not counted
    again = queue.get(a)
    assert (again.status, again.attempts) == (QUEUED, 0)
    assert queue.position(queue.get(b)) == 2
    job = queue.claim("w", ["CPU"])
    assert queue.delete(a).id == a  # deleted while it runs: its result is dropped
    assert not queue.finish(job, {}, "passed", 0, record=lambda s: 1)
    assert queue.get(a) is None and queue.position(queue.get(b)) == 1


# -- real worker processes ---------------------------------------------------------------
def start_worker(db: str, log: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "runner.py"), "worker", "--db", db, "--device", "cpu",
         *CASE, *extra], cwd=ROOT, stdout=log.open("a"), stderr=subprocess.STDOUT,
        start_new_session=True)


def wait_for(predicate, timeout: float, what: str, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the worker ended ({proc.returncode}): " + log.read_text()[-3000:])
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}" + (": " + log.read_text()[-3000:] if log else ""))


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow  # two real workers and a lease that runs out
def test_a_worker_killed_mid_job_is_replaced(tmp_path):
    """SIGKILL a worker while it judges: after the lease another worker judges the job,
    which is recorded once."""
    db = str(tmp_path / "w.db")
    config = tmp_path / "server.yaml"
    config.write_text("server:\n  lease_seconds: 3\n")
    queue = JobQueue(Store(db))
    slow = "import time\ntime.sleep(4)\n" + TRIVIAL  # long enough to be killed mid-job
    job_id = queue.enqueue(NewJob("alice", "vectoradd", "leaderboard", "CPU", "slow.py", slow))
    log = tmp_path / "worker.log"
    first = start_worker(db, log, "--config", str(config))
    try:
        wait_for(lambda: queue.get(job_id).status == RUNNING, 60, "the first claim", first, log)
        folders = f"harness-job-*-{first.pid}-*"  # made once the slot has the job's code
        wait_for(lambda: any(Path(tempfile.gettempdir()).glob(folders)), 60,
                 "the job's folder", first, log)
        time.sleep(0.5)  # its judge started: the submission sleeps 4 s
        os.killpg(first.pid, signal.SIGKILL)  # the worker and its judge, at once
        first.wait()
    finally:
        stop(first)
    left = list(Path(tempfile.gettempdir()).glob(folders))
    assert left, "the killed slot left no job folder: the sweep below tests nothing"
    second = start_worker(db, log, "--config", str(config))
    try:
        wait_for(lambda: queue.get(job_id).status == DONE, 120, "the second worker", second, log)
    finally:
        stop(second)
    assert not any(path.exists() for path in left)  # removed as the second slot started
    job = queue.get(job_id)
    assert job.attempts == 2 and job.verdict == "passed" and job.worker.endswith("CPU slot 0")
    subs = queue.store.query("SELECT id, user_name FROM submissions")
    assert [(s["id"], s["user_name"]) for s in subs] == [(job.submission_id, "alice")]
    assert job.document()["record"]["submission_id"] == job.submission_id


def test_uploads_count_whatever_became_of_their_jobs(db_url):
    """The rate limit's count: a job deleted by its owner still counts; a refunded one (an
    organiser's delete) does not; a window that has passed counts nothing."""
    clock = Clock()
    queue = JobQueue(Store(db_url), clock=clock)
    first, second, third = fill(queue, 3)  # user0, user1, user2
    mine = [queue.enqueue(NewJob("user0", "vectoradd", "test", "CPU", "g.py", "code"))
            for _ in range(2)]
    assert len(queue.recent_uploads("user0", clock.t - 60)) == 3
    queue.delete(first)
    queue.delete(mine[0])
    assert len(queue.recent_uploads("user0", clock.t - 60)) == 3  # the owner's deletes
    queue.delete(mine[1], refund=True)
    assert len(queue.recent_uploads("user0", clock.t - 60)) == 2
    clock.t += 120
    assert queue.recent_uploads("user0", clock.t - 60) == []
    assert len(queue.recent_uploads("user1", 0)) == 1 and queue.get(second) is not None


def test_jobs_of_an_older_schema_count_as_uploads(tmp_path):
    """A schema 4 database (before the upload log): its jobs are counted after the upgrade."""
    import sqlite3

    path = tmp_path / "old.db"
    queue = JobQueue(Store(str(path)))
    fill(queue, 3)
    queue.store.close()
    raw = sqlite3.connect(path)
    for column in ("rejudging_id", "original_id"):  # migration 7
        raw.execute(f"ALTER TABLE jobs DROP COLUMN {column}")
    for table in ("rejudged", "rejudgings", "uploads"):  # migrations 6, 5
        raw.execute(f"DROP TABLE {table}")
    raw.execute("DELETE FROM schema_version WHERE version >= 5")
    raw.commit()
    raw.close()
    again = JobQueue(Store(str(path)))
    assert [len(again.recent_uploads(f"user{i}", 0)) for i in range(3)] == [1, 1, 1]


@pytest.mark.slow  # a real worker, its judge process killed mid-job
def test_a_judge_process_killed_mid_job_is_judged_again_not_failed(tmp_path):
    """SIGKILL the judge process of a running job (as the OOM killer would), not its slot:
    the slot queues the job again and judges it to one recorded verdict."""
    from test_stopping import _named

    from harness.judging.sandbox.procfs import JUDGE_NAME

    db = str(tmp_path / "j.db")
    queue = JobQueue(Store(db))
    slow = "import time\ntime.sleep(4)\n" + TRIVIAL  # long enough to be killed mid-job
    job_id = queue.enqueue(NewJob("alice", "vectoradd", "leaderboard", "CPU", "slow.py", slow))
    log = tmp_path / "worker.log"
    worker = start_worker(db, log)
    try:
        wait_for(lambda: queue.get(job_id).status == RUNNING, 60, "the claim", worker, log)
        judges = []
        wait_for(lambda: judges.extend(_named(worker.pid, JUDGE_NAME))
                 or judges, 30, "the judge process", worker, log)
        os.kill(judges[0], signal.SIGKILL)
        wait_for(lambda: queue.get(job_id).status == DONE, 120, "the second judging", worker,
                 log)
    finally:
        stop(worker)
    job = queue.get(job_id)
    assert job.attempts == 2 and job.verdict == "passed" and job.error is None
    subs = queue.store.query("SELECT id FROM submissions")
    assert [s["id"] for s in subs] == [job.submission_id]
    assert "queued again" in log.read_text()



@pytest.mark.slow  # a real worker; its database connections terminated while it judges
@pytest.mark.postgres
def test_a_slot_whose_database_connections_drop_connects_again(tmp_path):
    """Terminate every connection of a worker slot to PostgreSQL, three times while it
    judges (as a restarted or failed-over database would): the slot connects again, and
    every job ends done once, with one recorded submission each, none blamed."""
    from conftest import PG_URL, fresh_postgres_url

    if not PG_URL:
        pytest.skip("set HARNESS_TEST_POSTGRES to a postgresql:// URL to run this")
    import psycopg

    db = fresh_postgres_url()
    config = tmp_path / "server.yaml"
    config.write_text("server:\n  lease_seconds: 3\n  max_attempts: 5\n")
    queue = JobQueue(Store(db))
    slow = "import time\ntime.sleep(1)\n" + TRIVIAL
    ids = [queue.enqueue(NewJob(f"user{i}", "vectoradd", "leaderboard", "CPU", "slow.py", slow))
           for i in range(4)]
    queue.store.close()
    log = tmp_path / "worker.log"
    worker = start_worker(db, log, "--config", str(config))
    name = db.rsplit("/", 1)[1]
    try:
        for _ in range(3):
            wait_for(lambda: Store(db).query("SELECT id FROM jobs WHERE status = 'running'"),
                     120, "a running job", worker, log)
            with psycopg.connect(PG_URL, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                              "datname = %s AND pid <> pg_backend_pid()", (name,))
            time.sleep(2.0)
        wait_for(lambda: all(j["status"] in (DONE, FAILED) for j in
                             Store(db).query("SELECT status FROM jobs")), 300, "every job",
                 worker, log)
    finally:
        stop(worker)
    store = Store(db)
    jobs = store.query("SELECT id, status, verdict, submission_id FROM jobs ORDER BY id")
    subs = store.query("SELECT id FROM submissions ORDER BY id")
    store.close()
    assert [j["id"] for j in jobs] == ids
    assert all(j["status"] == DONE and j["verdict"] == "passed" for j in jobs), jobs
    assert sorted(j["submission_id"] for j in jobs) == [s["id"] for s in subs]
    assert "the database failed" in log.read_text()


@pytest.mark.slow  # a real worker, stopped in the middle of a job
def test_sigterm_to_a_worker_in_the_middle_of_a_job_hands_it_back(tmp_path):
    """`runner.py worker` stopped with SIGTERM while it judges: its judge and worker end,
    and the job is queued again with this claim not counted, nothing half-written."""
    db = str(tmp_path / "t.db")
    queue = JobQueue(Store(db))
    slow = "import time\ntime.sleep(30)\n" + TRIVIAL
    job_id = queue.enqueue(NewJob("alice", "vectoradd", "leaderboard", "CPU", "slow.py", slow))
    log = tmp_path / "worker.log"
    worker = start_worker(db, log)
    wait_for(lambda: queue.get(job_id).status == RUNNING, 60, "the claim", worker, log)
    os.kill(worker.pid, signal.SIGTERM)
    code = worker.wait(timeout=60)
    job = queue.get(job_id)
    assert code == EXIT_CODE, log.read_text()[-3000:]  # 143, as a shell reports SIGTERM
    assert (job.status, job.attempts, job.error, job.submission_id) == (QUEUED, 0, None, None)
    assert queue.store.query("SELECT id FROM submissions") == []
    assert "stopped, queued again" in log.read_text()
