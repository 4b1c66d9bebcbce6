"""The schema's migrations (harness/storage/migrate.py), on SQLite and PostgreSQL: a
database that the harness at 668f69d made, with its data (tests/data/db-668f69d: real
evaluations, users, rules, a mark, jobs in every state; make.sh made it), upgrades keeping
every row, and the contest goes on over it; many processes opening it at once upgrade it
once; a migration that fails midway leaves nothing of itself."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli

from harness.server.rules import get_rules
from harness.storage.migrate import LATEST, dialect, known, statements
from harness.storage.queue import JobQueue
from harness.storage.store import Store
from harness.storage.users import user_for_token

OLD = json.loads((ROOT / "tests" / "data" / "db-668f69d" / "contest.json").read_text())
ORDER = ["schema_version", "leaderboards", "submissions", "runs", "users", "jobs", "workers",
         "contest_rules"]  # each table after those it refers to


def raw(url: str):
    """A plain connection, in autocommit, outside the harness."""
    if url.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(url, autocommit=True)
    return sqlite3.connect(url, isolation_level=None)


def rows(conn, sql: str) -> list[list]:
    return [list(r) for r in conn.execute(sql).fetchall()]


def build_668f69d(url: str) -> None:
    """The database as the harness at 668f69d left it: its schema's statements run as it
    ran them, then every row it wrote."""
    postgres = url.startswith("postgresql://")
    conn = raw(url)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for _version, old in OLD["migrations"]:
        for statement in old:
            conn.execute(dialect(statement, postgres))
    for name in ORDER:
        table = OLD["tables"][name]
        marks = ", ".join("?" for _ in table["columns"])
        for row in table["rows"]:
            conn.execute(dialect(f"INSERT INTO {name} ({', '.join(table['columns'])}) "
                                 f"VALUES ({marks})", postgres), row)
        if postgres and "id" in table["columns"]:  # as its inserts left the sequences
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                         f"(SELECT MAX(id) FROM {name}))")
    conn.close()


@pytest.fixture
def old_db(db_url):
    build_668f69d(db_url)
    return db_url


def test_the_fixture_is_668f69d_schema_4_with_data():
    assert sorted(ORDER) == sorted(OLD["tables"])
    assert [v for v, _ in OLD["migrations"]] == [1, 2, 3, 4]
    assert len(OLD["tables"]["runs"]["rows"]) == 8
    assert {r[1] for r in OLD["tables"]["jobs"]["rows"]} == {"alice", "org"}
    assert sorted({r[7] for r in OLD["tables"]["jobs"]["rows"]}) == [
        "done", "failed", "queued", "running"]


def test_the_first_migrations_are_668f69d_statements_unchanged():
    """A database made fresh and one that 668f69d made and this harness upgraded have the
    same schema: the migrations it had are kept word for word."""
    def words(sql: str) -> list[str]:
        return " ".join(sql.split()).split(" ")

    for number, old in OLD["migrations"]:
        assert [words(s) for s in statements(number)] == [words(s) for s in old], number


def test_a_668f69d_database_upgrades_keeping_every_row(old_db):
    Store(old_db).close()
    conn = raw(old_db)
    for name, table in OLD["tables"].items():
        if name == "schema_version":
            continue
        assert rows(conn, f"SELECT {', '.join(table['columns'])} FROM {name} ORDER BY 1") \
            == table["rows"], name
    assert rows(conn, "SELECT version FROM schema_version ORDER BY version") == [
        [v] for v in range(1, LATEST + 1)]
    jobs = OLD["tables"]["jobs"]
    at = [jobs["columns"].index(c) for c in ("user_name", "created_ts", "id")]
    assert rows(conn, "SELECT user_name, created_ts, job_id FROM uploads ORDER BY job_id") == [
        [r[i] for i in at] for r in jobs["rows"]]  # migration 5 counts the jobs there
    conn.close()


def test_after_the_upgrade_the_contest_goes_on(old_db):
    r = run_cli("leaderboard", "vectoradd", "--db", old_db, "--json")
    board = json.loads(r.out) if r.rc == 0 else pytest.fail(r.out)

    def ranked(b):
        return {kind: [(e["rank"], e["user"], e["submission_id"], e["score_ns"]) for e in es]
                for kind, es in b["devices"].items()}

    assert ranked(board) == ranked(OLD["leaderboard"])  # dan's hacked one still out
    store = Store(old_db)
    tokens = OLD["tokens"]
    assert user_for_token(store, tokens["alice"]).name == "alice"
    assert user_for_token(store, tokens["org"]).admin
    assert user_for_token(store, tokens["carol"]) is None  # revoked at 668f69d
    assert get_rules(store, "vectoradd").modes == ["test", "leaderboard"]
    assert get_rules(store, "mxfp4_mm").closed
    queue = JobQueue(store)
    assert [(j.id, j.status) for j in queue.active()] == [(3, "running"), (4, "queued")]
    assert queue.position(queue.get(4)) == 1
    assert len(queue.recent_uploads("alice", 0)) == 3  # its uploads before the upgrade count
    board_row = store.current_board("vectoradd")
    assert store.board_of(4) == board_row["id"] and store.submission_status(4) == "hacked"
    store.close()


def test_many_processes_opening_it_at_once_upgrade_it_once(old_db):
    code = "import sys; from harness.storage.store import Store; Store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, old_db], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    conn = raw(old_db)
    assert rows(conn, "SELECT version, COUNT(*) FROM schema_version GROUP BY version "
                      "ORDER BY version") == [[v, 1] for v in range(1, LATEST + 1)]
    assert rows(conn, "SELECT COUNT(*) FROM uploads") == [[len(OLD["tables"]["jobs"]["rows"])]]
    conn.close()


def test_a_migration_that_fails_midway_leaves_nothing_of_itself(old_db, monkeypatch):
    """Its statements and its version row are one transaction: the first statement's table
    is gone with the failure, and the next open applies the migration whole."""
    from harness.storage import migrate

    real, uploads = migrate.statements, 5  # the first migration after 668f69d's
    monkeypatch.setattr(migrate, "statements", lambda n: real(n)[:1] + ["NOT SQL AT ALL"]
                        if n == uploads else real(n))
    with pytest.raises(Exception, match="(?i)syntax"):
        Store(old_db)
    conn = raw(old_db)
    assert rows(conn, "SELECT MAX(version) FROM schema_version") == [[uploads - 1]]
    with pytest.raises(Exception, match="uploads"):
        conn.execute("SELECT COUNT(*) FROM uploads")
    conn.close()
    monkeypatch.setattr(migrate, "statements", real)
    assert Store(old_db).version() == LATEST
    conn = raw(old_db)
    assert rows(conn, "SELECT COUNT(*) FROM uploads") == [[len(OLD["tables"]["jobs"]["rows"])]]
    conn.close()


def test_a_fresh_database_is_made_by_the_same_migrations(db_url):
    store = Store(db_url)
    assert store.version() == LATEST == max(known())
    assert known()[1] == "v0001_results" and sorted(known()) == list(range(1, LATEST + 1))
    store.close()
