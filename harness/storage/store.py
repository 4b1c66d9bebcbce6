"""The results database: leaderboards, submissions and runs, in SQLite or PostgreSQL.

One schema, versioned, built by the modules of storage/migrations (storage/migrate.py
applies them). Every evaluation is recorded in one transaction: a reader (or a crash)
never sees a submission without its runs. SQLite runs in WAL mode with a busy timeout, so
several runner processes can write to one file; PostgreSQL (`postgresql://...`) lets
runners on many hosts share one leaderboard.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.storage.migrate import LATEST, dialect, refuse_newer, upgrade

ENV_DB = "HARNESS_DB"

SCHEMA_VERSION = LATEST  # the newest migration this harness has (storage/migrations)


class StoreError(RuntimeError):
    """The database cannot be opened or is of a newer schema than this harness."""


class PerThread:
    """A connection to the database at `url` for each thread that asks, opened at its
    first use: a server's threads answer at once, none waiting on another's connection
    (their number bounds the connections)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.local = threading.local()

    def store(self) -> Store:
        """This thread's connection."""
        store = getattr(self.local, "store", None)
        if store is None:
            store = self.local.store = Store(self.url)
        return store

    @contextmanager
    def __call__(self) -> Iterator[Store]:
        """`with stores() as store:` this thread's connection."""
        yield self.store()


def database_errors() -> tuple[type[BaseException], ...]:
    """The errors of a database that failed under a live store (a dropped connection, a
    restarted server, a locked or broken file), on SQLite and, where installed, on
    PostgreSQL: what a long-running caller answers by connecting again."""
    errors: tuple[type[BaseException], ...] = (StoreError, sqlite3.OperationalError,
                                               sqlite3.InterfaceError)
    try:
        import psycopg
    except ImportError:
        return errors
    return (*errors, psycopg.OperationalError, psycopg.InterfaceError)


def resolve_db(flag: str | None, configured: str) -> str:
    """The database: --db, else $HARNESS_DB, else the configured path."""
    return flag or os.environ.get(ENV_DB) or configured


def is_server(url: str) -> bool:
    """Whether `url` names a database server (PostgreSQL), not a SQLite file."""
    return url.startswith(("postgresql://", "postgres://"))


def require_existing(url: str) -> str:
    """`url` where it names a database that exists (a server's always counts); else a
    StoreError: commands that only read must not leave an empty file behind a typo."""
    if not is_server(url) and not Path(url.removeprefix("sqlite:///")).is_file():
        raise StoreError(f"no results database at {url} (give --db or $HARNESS_DB; "
                         "submit makes one)")
    return url


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class Leaderboard:
    id: int
    task: str
    content_hash: str
    secret: bytes


@dataclass
class NewSubmission:
    """A submission as it is recorded: who sent which file, its code and its hash, its
    status, its static screen's findings, why it is refused a rank (None: it is not), and
    its program key (results/recording.py)."""

    user: str
    file_name: str
    code: str
    sha256: str
    status: str
    screen: list[dict]
    refused: str | None = None
    program: str | None = None


# The lock of each SQLite file's writers in this process, by path (`Store._writer`).
_WRITERS: dict[str, threading.RLock] = {}


class Store:
    """A connection to the results database, SQLite or PostgreSQL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = is_server(url)
        self._depth = 0  # transactions open (nested ones join the outermost)
        # SQLite: this process's writers to one file take turns on a lock of its own, not
        # in SQLite's busy handler, whose sleeps grow while many threads of a server wait
        self._writer = (nullcontext() if self.postgres else
                        _WRITERS.setdefault(os.path.abspath(url.removeprefix("sqlite:///")),
                                             threading.RLock()))
        if self.postgres:
            try:
                import psycopg
            except ImportError as exc:
                raise StoreError("PostgreSQL needs the 'psycopg' package: "
                                 "pip install -e '.[postgres]'") from exc
            try:
                self.conn = psycopg.connect(url, autocommit=True)
            except psycopg.Error as exc:
                raise StoreError(f"cannot connect to {url}: {exc}") from exc
        else:
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.conn = sqlite3.connect(path, timeout=60, isolation_level=None,
                                            check_same_thread=False)
                self._enter_wal()
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute("PRAGMA foreign_keys=ON")
                self.conn.execute("PRAGMA busy_timeout=60000")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{path} is not a usable SQLite database: {exc}") from exc
        self.migrate()

    def _enter_wal(self) -> None:
        """Switch a SQLite file to WAL mode. Two runners opening a new file at once can
        meet here, and SQLite answers "locked" at once (no busy wait): try again."""
        for attempt in range(100):
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 99:
                    raise
                time.sleep(0.05)

    # -- plumbing ---------------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return dialect(sql, self.postgres)

    def execute(self, sql: str, params: tuple = ()) -> Any:
        return self.conn.execute(self._sql(sql), params)

    def query(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit of work; SQLite takes the write lock up front. A transaction
        opened inside another joins it (the queue records a result and closes its job in one)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        with self._writer:
            for attempt in range(50):
                try:
                    self.conn.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:  # locked beyond the busy timeout
                    if attempt == 49:
                        raise StoreError(f"the database stayed locked: {exc}") from exc
                    time.sleep(0.1)
            self._depth = 1
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.conn.execute("COMMIT")

    def version(self) -> int:
        """The newest migration applied (0: none), read without writing anything."""
        if self.postgres:
            found = self.query("SELECT to_regclass('schema_version') IS NOT NULL AS found")
        else:
            found = self.query("SELECT COUNT(*) AS found FROM sqlite_master "
                               "WHERE type = 'table' AND name = 'schema_version'")
        if not found[0]["found"]:
            return 0
        rows = self.query("SELECT MAX(version) AS v FROM schema_version")
        return int(rows[0]["v"] or 0)

    def migrate(self) -> None:
        """Bring the schema up to SCHEMA_VERSION (storage/migrate.py); one query when it is
        there. A newer database is refused untouched."""
        current = self.version()
        refuse_newer(current, self.url)
        if current < SCHEMA_VERSION:
            upgrade(self)

    def close(self) -> None:
        self.conn.close()

    # -- leaderboards -----------------------------------------------------------------
    def leaderboard(self, task: str, content_hash: str) -> Leaderboard:
        """The leaderboard of a task version, made (with a fresh secret) on first use."""
        with self.transaction():
            # Two runners may make the same board at once: the first insert wins, the other
            # waits for it and then reads the winner's row (and secret).
            self.execute(
                "INSERT INTO leaderboards (task, content_hash, secret, created_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (task, content_hash) DO NOTHING",
                (task, content_hash, secrets.token_hex(32), now()))
            rows = self.query("SELECT * FROM leaderboards WHERE task = ? AND content_hash = ?",
                              (task, content_hash))
        row = rows[0]
        return Leaderboard(row["id"], row["task"], row["content_hash"], bytes.fromhex(row["secret"]))

    def current_board(self, task: str) -> dict[str, Any] | None:
        """The newest leaderboard of a task (its latest content hash), if any."""
        rows = self.query("SELECT * FROM leaderboards WHERE task = ? ORDER BY id DESC LIMIT 1",
                          (task,))
        return rows[0] if rows else None

    def tasks(self) -> list[str]:
        """Every task with a leaderboard in the database."""
        return [r["task"] for r in self.query("SELECT DISTINCT task FROM leaderboards ORDER BY task")]

    # -- recording --------------------------------------------------------------------
    def record(self, board: Leaderboard, sub: NewSubmission, runs: list[dict]) -> int:
        """Insert a submission and its runs in one transaction; return the submission id."""
        with self.transaction():
            cur = self.execute(
                "INSERT INTO submissions (leaderboard_id, user_name, file_name, code, sha256, "
                "created_at, status, screen, refused, program) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (board.id, sub.user, sub.file_name, sub.code, sub.sha256, now(), sub.status,
                 json.dumps(sub.screen), sub.refused, sub.program))
            sub_id = int(cur.fetchone()[0])
            for run in runs:
                self.execute(
                    "INSERT INTO runs (submission_id, mode, seeds, device_kind, device_name, "
                    "started_at, ended_at, passed, score_ns, cases, messages, harness_version, "
                    "system) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sub_id, run["mode"], run["seeds"], run["device_kind"], run["device_name"],
                     run["started_at"], run["ended_at"], int(run["passed"]), run["score_ns"],
                     json.dumps(run["cases"]), json.dumps(run["messages"]),
                     run["harness_version"], json.dumps(run["system"])))
        return sub_id

    def set_status(self, submission_id: int, status: str) -> bool:
        with self.transaction():
            cur = self.execute("UPDATE submissions SET status = ? WHERE id = ?",
                               (status, submission_id))
        return cur.rowcount > 0

    # -- reading ----------------------------------------------------------------------
    def entries(self, task: str, content_hash: str | None = None) -> list[dict[str, Any]]:
        """One row per submission of a task with its public and secret leaderboard runs."""
        sql = (
            "SELECT s.id, s.user_name, s.file_name, s.sha256, s.program, s.created_at, s.status, "
            "s.refused, "
            "l.content_hash, r.seeds, r.passed, r.score_ns, r.device_kind, r.device_name, r.mode "
            "FROM submissions s JOIN leaderboards l ON l.id = s.leaderboard_id "
            "JOIN runs r ON r.submission_id = s.id WHERE l.task = ?"
        )
        params: tuple = (task,)
        if content_hash:
            sql += " AND l.content_hash = ?"
            params += (content_hash,)
        by_id: dict[int, dict[str, Any]] = {}
        for row in self.query(sql + " ORDER BY s.id", params):
            entry = by_id.setdefault(row["id"], {
                k: row[k] for k in ("id", "user_name", "file_name", "sha256", "program",
                                    "created_at", "status", "refused", "content_hash",
                                    "device_kind", "device_name", "mode")
            } | {"public": None, "secret": None})
            entry[row["seeds"]] = {"passed": bool(row["passed"]), "score_ns": row["score_ns"]}
        return list(by_id.values())

    def submission(self, submission_id: int) -> dict[str, Any] | None:
        rows = self.query(
            "SELECT s.*, l.task, l.content_hash FROM submissions s "
            "JOIN leaderboards l ON l.id = s.leaderboard_id WHERE s.id = ?", (submission_id,))
        if not rows:
            return None
        sub = rows[0]
        sub["screen"] = json.loads(sub["screen"] or "[]")
        sub["runs"] = self.query("SELECT * FROM runs WHERE submission_id = ? ORDER BY id",
                                 (submission_id,))
        for run in sub["runs"]:
            for key in ("cases", "messages", "system"):
                run[key] = json.loads(run[key])
        return sub

    def submission_status(self, submission_id: int) -> str | None:
        """A submission's status (`ok`, `hacked`, ...); None where there is none."""
        rows = self.query("SELECT status FROM submissions WHERE id = ?", (submission_id,))
        return rows[0]["status"] if rows else None

    def board_of(self, submission_id: int) -> int | None:
        """The id of the leaderboard a submission was recorded on."""
        rows = self.query("SELECT leaderboard_id FROM submissions WHERE id = ?",
                          (submission_id,))
        return int(rows[0]["leaderboard_id"]) if rows else None

    def history(self, task: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT s.id, l.task, s.user_name, s.file_name, s.created_at, s.status, "
               "l.content_hash FROM submissions s JOIN leaderboards l ON l.id = s.leaderboard_id "
               "WHERE 1 = 1")
        params: tuple = ()
        if task:
            sql += " AND l.task = ?"
            params += (task,)
        if user:
            sql += " AND s.user_name = ?"
            params += (user,)
        rows = self.query(sql + " ORDER BY s.id", params)
        for row in rows:
            runs = self.query("SELECT seeds, passed, score_ns, device_kind, mode FROM runs "
                              "WHERE submission_id = ? ORDER BY id", (row["id"],))
            row["runs"] = runs
        return rows

    def export_rows(self) -> list[dict[str, Any]]:
        """Every run with its submission and task, flat, for CSV or JSON export."""
        return self.query(
            "SELECT r.id AS run_id, s.id AS submission_id, l.task, l.content_hash, s.user_name, "
            "s.file_name, s.sha256, s.status, s.created_at, r.mode, r.seeds, r.device_kind, "
            "r.device_name, r.passed, r.score_ns, r.started_at, r.ended_at, r.harness_version "
            "FROM runs r JOIN submissions s ON s.id = r.submission_id "
            "JOIN leaderboards l ON l.id = s.leaderboard_id ORDER BY r.id")
