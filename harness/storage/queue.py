"""The durable queue: one job row per accepted submission, in the results database.

A job is `queued`, then `running` (claimed by one worker slot, which holds a lease and
renews it with heartbeats), then `done` (judged; its result recorded in the same
transaction that closes the job) or `failed` (with the reason). Claims are atomic: SQLite
takes its write lock up front (`BEGIN IMMEDIATE`), PostgreSQL locks the row it picks and
skips rows others hold (`FOR UPDATE SKIP LOCKED`). A job whose lease ran out (its worker
died) is queued again, at most `max_attempts` claims in all, then failed with the reason.
A slot that lost its lease cannot close the job: its result is dropped, so nothing is
recorded twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.storage.store import Store, now

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


def standing(state: str, position: int | None, queued: int, attempts: int) -> str:
    """Where a job not yet ended stands, in words: its queue position, or running (with its
    attempt after a dead worker's)."""
    if state == QUEUED:
        return f"queued: position {position} of {queued}"
    return "running" + (f" (attempt {attempts})" if attempts > 1 else "")


@dataclass
class Job:
    """One row of the queue."""

    id: int
    user_name: str
    task: str
    mode: str
    gpu: str
    file_name: str
    code: str
    status: str
    created_at: str
    created_ts: float
    attempts: int = 0
    worker: str | None = None
    started_ts: float | None = None
    ended_ts: float | None = None
    lease_until: float | None = None
    error: str | None = None
    verdict: str | None = None
    exit_code: int | None = None
    submission_id: int | None = None
    result: str | None = None
    rejudging_id: int | None = None  # a rejudging's job: which one, and the original
    original_id: int | None = None  # submission it judges again

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Job:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})

    def document(self) -> dict[str, Any] | None:
        """The stored result document, once judged."""
        return json.loads(self.result) if self.result else None


@dataclass
class NewJob:
    """A submission to queue: whose, for which task, mode and GPU kind, and its file's name
    and text."""

    user: str
    task: str
    mode: str
    gpu: str
    file_name: str
    code: str
    rejudging_id: int | None = None  # an organiser's rejudging, of the original submission
    original_id: int | None = None


# Contestants' jobs are claimed before a rejudging's, so that an organiser's rejudging
# never holds an upload back; a rejudging's run when no upload waits.
CONTESTANTS_FIRST = "CASE WHEN rejudging_id IS NULL THEN 0 ELSE 1 END"
CLAIM_ORDER = f"ORDER BY {CONTESTANTS_FIRST}, id"


class JobQueue:
    """The queue's operations on one database connection (one per thread)."""

    def __init__(self, store: Store, lease_seconds: float = 60.0, max_attempts: int = 3,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.lease, self.max_attempts, self.clock = (
            store, lease_seconds, max_attempts, clock)

    def _lock(self) -> str:
        return " FOR UPDATE SKIP LOCKED" if self.store.postgres else ""

    # -- the server's side --------------------------------------------------------------
    def enqueue(self, job: NewJob, check: Callable[[Store], None] | None = None) -> int:
        """Queue one submission; its job id. `check` runs first in the same transaction
        (the rate limit), so that two uploads at once cannot both slip under it."""
        with self.store.transaction():
            if check is not None:
                check(self.store)
            ts = self.clock()
            cur = self.store.execute(
                "INSERT INTO jobs (user_name, task, mode, gpu, file_name, code, status, "
                "created_at, created_ts, rejudging_id, original_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (job.user, job.task, job.mode, job.gpu, job.file_name, job.code, QUEUED, now(),
                 ts, job.rejudging_id, job.original_id))
            job_id = int(cur.fetchone()[0])
            if job.rejudging_id is None:  # an organiser's rejudging is no one's upload
                self.store.execute("INSERT INTO uploads (user_name, created_ts, job_id) "
                                   "VALUES (?, ?, ?)", (job.user, ts, job_id))
            return job_id

    def get(self, job_id: int) -> Job | None:
        rows = self.store.query("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return Job.from_row(rows[0]) if rows else None

    def position(self, job: Job) -> int | None:
        """1 for the next queued job of its GPU kind; None once it runs or ended."""
        if job.status != QUEUED:
            return None
        ahead = ("rejudging_id IS NULL AND id <= ?" if job.rejudging_id is None else
                 "(rejudging_id IS NULL OR id <= ?)")  # the claim order (CLAIM_ORDER)
        rows = self.store.query(f"SELECT COUNT(*) AS n FROM jobs WHERE status = ? AND {ahead} "
                                "AND LOWER(gpu) = LOWER(?)", (QUEUED, job.id, job.gpu))
        return int(rows[0]["n"])

    def queued_count(self, gpu: str | None = None) -> int:
        sql, params = "SELECT COUNT(*) AS n FROM jobs WHERE status = ?", (QUEUED,)
        if gpu:
            sql, params = sql + " AND LOWER(gpu) = LOWER(?)", params + (gpu,)
        return int(self.store.query(sql, params)[0]["n"])

    def active(self) -> list[Job]:
        """Running jobs, then queued ones, in the order they will run (no code)."""
        rows = self.store.query(
            "SELECT id, user_name, task, mode, gpu, file_name, '' AS code, status, created_at, "
            "created_ts, attempts, worker, started_ts, lease_until, rejudging_id, original_id "
            "FROM jobs WHERE status IN (?, ?) ORDER BY CASE WHEN status = ? THEN 0 ELSE 1 END, "
            f"{CONTESTANTS_FIRST}, id",
            (RUNNING, QUEUED, RUNNING))
        return [Job.from_row(r) for r in rows]

    def of_user(self, user: str, task: str | None = None, limit: int | None = None) -> list[Job]:
        """A user's jobs, newest first (an organiser's rejudging of theirs is not theirs)."""
        sql, params = "SELECT * FROM jobs WHERE user_name = ? AND rejudging_id IS NULL", (user,)
        if task:
            sql, params = sql + " AND LOWER(task) = LOWER(?)", params + (task,)
        sql += " ORDER BY id DESC"
        if limit:
            sql, params = sql + " LIMIT ?", params + (int(limit),)
        return [Job.from_row(r) for r in self.store.query(sql, params)]

    def recent_uploads(self, user: str, since: float) -> list[float]:
        """When `user` uploaded since `since` (epoch seconds), oldest first: every accepted
        upload, its job judged, failed or deleted by its owner, less those an admin
        refunded (the rate limit counts these)."""
        rows = self.store.query("SELECT created_ts FROM uploads WHERE user_name = ? AND "
                                "created_ts > ? AND refunded = 0 ORDER BY created_ts",
                                (user, since))
        return [float(r["created_ts"]) for r in rows]

    def delete(self, job_id: int, refund: bool = False) -> Job | None:
        """Remove a job and what it recorded (its submission and runs); the job, if it was
        there. A slot judging it then cannot close it, and its result is dropped. Its upload
        still counts towards its owner's rate limit unless `refund` (an admin's delete)."""
        with self.store.transaction():
            job = self.get(job_id)
            if job is None:
                return None
            if refund:
                self.store.execute("UPDATE uploads SET refunded = 1 WHERE job_id = ?", (job_id,))
            if job.submission_id is not None:
                self.store.execute("DELETE FROM runs WHERE submission_id = ?", (job.submission_id,))
                self.store.execute("DELETE FROM submissions WHERE id = ?", (job.submission_id,))
            self.store.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        return job

    # -- the workers' side --------------------------------------------------------------
    def expire(self) -> tuple[int, int]:
        """Queue again the running jobs whose lease ran out (their worker died), or fail
        those claimed `max_attempts` times; how many of each."""
        t = self.clock()
        with self.store.transaction():
            rows = self.store.query(
                "SELECT id, attempts, worker FROM jobs WHERE status = ? AND lease_until < ?"
                + self._lock(), (RUNNING, t))
            again = [r["id"] for r in rows if r["attempts"] < self.max_attempts]
            for r in rows:
                if r["attempts"] < self.max_attempts:
                    self.store.execute("UPDATE jobs SET status = ?, worker = NULL, "
                                       "lease_until = NULL WHERE id = ?", (QUEUED, r["id"]))
                else:
                    self.store.execute(
                        "UPDATE jobs SET status = ?, ended_ts = ?, lease_until = NULL, error = ? "
                        "WHERE id = ?",
                        (FAILED, t, f"not judged: its worker stopped answering {r['attempts']} "
                         f"times (last {r['worker']}); the lease ran out each time", r["id"]))
        return len(again), len(rows) - len(again)

    def claim(self, worker: str, gpus: list[str]) -> Job | None:
        """Take the oldest queued job for one of these GPU kinds, with a fresh lease."""
        self.expire()
        kinds = [g.lower() for g in gpus]
        marks = ", ".join("?" for _ in kinds)
        t = self.clock()
        with self.store.transaction():
            rows = self.store.query(
                f"SELECT id FROM jobs WHERE status = ? AND LOWER(gpu) IN ({marks}) "
                f"{CLAIM_ORDER} LIMIT 1" + self._lock(), (QUEUED, *kinds))
            if not rows:
                return None
            job_id = rows[0]["id"]
            self.store.execute(
                "UPDATE jobs SET status = ?, worker = ?, attempts = attempts + 1, started_ts = ?, "
                "lease_until = ? WHERE id = ?", (RUNNING, worker, t, t + self.lease, job_id))
            return self.get(job_id)

    def heartbeat(self, job: Job) -> bool:
        """Renew the lease; False when the job is no longer this claim's."""
        with self.store.transaction():
            cur = self.store.execute(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND status = ? AND worker = ? "
                "AND attempts = ?", (self.clock() + self.lease, job.id, RUNNING, job.worker,
                                     job.attempts))
        return cur.rowcount == 1

    def _held(self, job: Job) -> bool:
        lock = " FOR UPDATE" if self.store.postgres else ""
        rows = self.store.query("SELECT status, worker, attempts FROM jobs WHERE id = ?" + lock,
                                (job.id,))
        return bool(rows) and (rows[0]["status"], rows[0]["worker"], rows[0]["attempts"]) == (
            RUNNING, job.worker, job.attempts)

    def finish(self, job: Job, document: dict[str, Any] | None, verdict: str | None,
               exit_code: int | None, error: str | None = None,
               record: Callable[[Store], int | None] | None = None) -> bool:
        """Close a claimed job: `done` with its document (and what `record` records, in
        the same transaction), or `failed` with `error`. False, and nothing written, when
        the claim was lost (the lease ran out and another slot took the job, or it was
        deleted)."""
        with self.store.transaction():
            if not self._held(job):
                return False
            submission_id = record(self.store) if record is not None and not error else None
            self.store.execute(
                "UPDATE jobs SET status = ?, ended_ts = ?, lease_until = NULL, error = ?, "
                "verdict = ?, exit_code = ?, submission_id = ?, result = ? WHERE id = ?",
                (FAILED if error else DONE, self.clock(), error, verdict, exit_code,
                 submission_id, json.dumps(document, default=str) if document else None, job.id))
        return True

    def retry(self, job: Job, reason: str) -> str | None:
        """A claimed job whose judging failed on the machine's side (its judge process
        died, its worker could not start): queued again, this claim counted, or, past
        `max_attempts` claims, failed with the reason, never a verdict on the submission.
        The new state (`queued` or `failed`); None, and nothing written, when the claim was
        lost."""
        with self.store.transaction():
            if not self._held(job):
                return None
            if job.attempts < self.max_attempts:
                self.store.execute("UPDATE jobs SET status = ?, worker = NULL, lease_until = NULL "
                                   "WHERE id = ?", (QUEUED, job.id))
                return QUEUED
            self.store.execute(
                "UPDATE jobs SET status = ?, ended_ts = ?, lease_until = NULL, error = ? "
                "WHERE id = ?", (FAILED, self.clock(), f"not judged after {job.attempts} "
                                 f"attempts, each failing on the machine's side; the last: "
                                 f"{reason}", job.id))
            return FAILED

    def release(self, job: Job) -> bool:
        """Give a claimed job back unjudged (its worker is stopping): queued again, this
        claim not counted."""
        with self.store.transaction():
            if not self._held(job):
                return False
            self.store.execute("UPDATE jobs SET status = ?, worker = NULL, lease_until = NULL, "
                               "attempts = attempts - 1 WHERE id = ?", (QUEUED, job.id))
        return True

    def rejudging_jobs(self, rejudging_id: int) -> dict[str, int]:
        """How many of a rejudging's jobs are in each state."""
        rows = self.store.query("SELECT status, COUNT(*) AS n FROM jobs WHERE rejudging_id = ? "
                                "GROUP BY status", (rejudging_id,))
        return {r["status"]: int(r["n"]) for r in rows}

    def drop_rejudging_jobs(self, rejudging_id: int) -> int:
        """Delete a rejudging's jobs still queued (it was cancelled); how many."""
        with self.store.transaction():
            cur = self.store.execute("DELETE FROM jobs WHERE rejudging_id = ? AND status = ?",
                                     (rejudging_id, QUEUED))
        return cur.rowcount

    def register_worker(self, name: str, gpu: str) -> None:
        """Say that a slot named `name` judges on `gpu` (for GET /gpus and the queue page)."""
        with self.store.transaction():
            self.store.execute(
                "INSERT INTO workers (name, gpu, seen_ts) VALUES (?, ?, ?) ON CONFLICT (name) "
                "DO UPDATE SET gpu = excluded.gpu, seen_ts = excluded.seen_ts",
                (name, gpu, self.clock()))

    def stats(self, since: float | None = None) -> dict[str, Any]:
        """The contest in numbers (popcorn-cli's `admin stats`): jobs by state, uploads and
        the users who made them since `since` (epoch seconds; None: ever), users with a live
        token, and each worker slot with when it was last seen."""
        t0 = since if since is not None else -1e18  # ever
        jobs = self.store.query("SELECT status, COUNT(*) AS n FROM jobs WHERE created_ts > ? "
                                "GROUP BY status", (t0,))
        uploads = self.store.query("SELECT COUNT(*) AS n, COUNT(DISTINCT user_name) AS users "
                                   "FROM uploads WHERE created_ts > ?", (t0,))[0]
        tokens = self.store.query("SELECT COUNT(*) AS n FROM users WHERE revoked_at IS NULL")
        workers = self.store.query("SELECT name, gpu, seen_ts FROM workers ORDER BY name")
        now = self.clock()
        return {"since": since, "jobs": {r["status"]: int(r["n"]) for r in jobs},
                "uploads": int(uploads["n"]), "uploading_users": int(uploads["users"]),
                "users": int(tokens[0]["n"]), "queued_now": self.queued_count(),
                "workers": [{"name": w["name"], "gpu": w["gpu"],
                             "seen_seconds_ago": round(now - float(w["seen_ts"]), 1)}
                            for w in workers]}

    def gpu_kinds(self) -> list[str]:
        """Every GPU kind a worker slot of this database has judged on."""
        return sorted({r["gpu"] for r in self.store.query("SELECT gpu FROM workers")})
