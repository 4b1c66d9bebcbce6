"""The results database, on SQLite and (when $HARNESS_TEST_POSTGRES is set) PostgreSQL."""

import itertools
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run_cli

from harness.results.ranking import find, program_key, rank
from harness.storage.store import SCHEMA_VERSION, NewSubmission, Store, StoreError


def run_row(seeds, passed, score, kind="H200"):
    return {"mode": "leaderboard", "seeds": seeds, "device_kind": kind, "device_name": "NVIDIA " + kind,
            "started_at": "t0", "ended_at": "t1", "passed": passed, "score_ns": score, "cases": [],
            "messages": {}, "harness_version": "test", "system": {}}


_files = itertools.count()


def submit(store, board, user, score, passed=True, secret_passed=True, kind="H200", status="ok",
           refused=None, sha=None, program=None):
    """Record one evaluation; a different file for every call unless `sha` says otherwise."""
    sha = sha or f"{user}-{score}-{next(_files)}"
    return store.record(board, NewSubmission(user, f"{user}.py", "code", sha, status, [],
                                             refused, program),
                        [run_row("public", passed, score, kind),
                         run_row("secret", secret_passed, score, kind)])


def test_schema_is_migrated_and_versioned(db_url):
    store = Store(db_url)
    assert store.version() == SCHEMA_VERSION
    Store(db_url)  # opening again migrates nothing and fails nothing
    assert store.version() == SCHEMA_VERSION


def test_newer_schema_is_refused_and_left_as_it_is(tmp_path):
    """A database a newer harness wrote: every command refuses it with the versions, and
    its file is the same byte for byte afterwards (nothing migrated, nothing written)."""
    import hashlib

    path = tmp_path / "r.db"
    store = Store(str(path))
    store.execute("INSERT INTO schema_version (version) VALUES (999)")
    store.close()  # its WAL checkpointed into the file
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreError, match="upgrade the harness"):
        Store(str(path))
    r = run_cli("leaderboard", "vectoradd", "--db", str(path))
    assert r.rc == 2 and f"has schema 999; this harness knows up to {SCHEMA_VERSION}" in r.out
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.db"
    bad.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError):
        Store(str(bad))


def test_leaderboard_secret_made_once_per_task_version(db_url):
    store = Store(db_url)
    a = store.leaderboard("t", "h1")
    assert a.secret == store.leaderboard("t", "h1").secret and len(a.secret) == 32
    assert store.leaderboard("t", "h2").secret != a.secret


def test_ranking_rules(db_url):
    store = Store(db_url)
    board = store.leaderboard("t", "h")
    submit(store, board, "ann", 300.0)
    best_ann = submit(store, board, "ann", 100.0)
    submit(store, board, "ann", 200.0)  # slower resubmission keeps the best
    submit(store, board, "bob", 150.0)
    submit(store, board, "cid", 50.0, secret_passed=False)  # secret run failed: not ranked
    submit(store, board, "dee", 10.0, status="hacked")
    submit(store, board, "eve", 20.0, refused="static screen: patches-timing")
    submit(store, board, "fay", 120.0, kind="B200")  # another device kind
    early = submit(store, board, "gus", 150.0)  # ties bob: bob was earlier
    table = rank(store.entries("t", "h"), "H200")
    assert [(r.user, r.score_ns) for r in table] == [("ann", 100.0), ("bob", 150.0), ("gus", 150.0)]
    assert table[0].submission_id == best_ann and table[2].submission_id == early
    assert [r.user for r in rank(store.entries("t", "h"), "B200")] == ["fay"]


def test_a_file_evaluated_again_counts_with_its_median(db_url):
    """Resubmitting the same file buys no lucky draw: its runs count with their median."""
    store = Store(db_url)
    board = store.leaderboard("t", "h")
    first = submit(store, board, "ann", 100.0, sha="same")
    submit(store, board, "bob", 150.0)
    table = rank(store.entries("t", "h"), "H200")
    assert [(r.user, r.score_ns, r.evaluations) for r in table] == [("ann", 100.0, 1), ("bob", 150.0, 1)]
    submit(store, board, "ann", 300.0, sha="same")
    again = submit(store, board, "ann", 200.0, sha="same")
    table = rank(store.entries("t", "h"), "H200")
    assert [(r.user, r.score_ns) for r in table] == [("bob", 150.0), ("ann", 200.0)]
    assert table[1].submission_id == first and table[1].submission_ids[-1] == again
    assert find(table, again) is table[1]
    # a lucky rerun of the same file moves the median, never to the lucky score alone
    submit(store, board, "ann", 10.0, sha="same")
    assert rank(store.entries("t", "h"), "H200")[1].score_ns == 150.0  # median of 10-300
    # a different file of hers ranks on its own; her best file counts
    submit(store, board, "ann", 120.0)
    assert [(r.user, r.score_ns) for r in rank(store.entries("t", "h"), "H200")] == [
        ("ann", 120.0), ("bob", 150.0)]


def test_the_same_program_is_known_through_comments_and_layout(db_url):
    code = 'def custom_kernel(data):\n    """Add."""\n    a, b = data\n    return a + b\n'
    edited = ('# v2: faster? no, a comment\ndef custom_kernel( data ):\n    """Adds the two."""\n'
              '    a, b = data   # unpack\n\n    return a + b\n')
    changed = 'def custom_kernel(data):\n    a, b = data\n    return b + a\n'
    assert program_key(code) == program_key(edited) != program_key(changed)
    assert program_key("def f(:\n").startswith("bytes:")
    store = Store(db_url)
    board = store.leaderboard("t", "h")
    submit(store, board, "ann", 100.0, program=program_key(code))
    submit(store, board, "ann", 300.0, program=program_key(edited))  # same program
    submit(store, board, "bob", 150.0)
    assert [(r.user, r.score_ns, r.evaluations) for r in rank(store.entries("t", "h"), "H200")] \
        == [("bob", 150.0, 1), ("ann", 200.0, 2)]


def test_older_rows_without_a_program_key_rank_by_their_bytes(tmp_path):
    """Schema 2 had no program column: the migration adds it, old rows fall back to sha256."""
    path = tmp_path / "old.db"
    store = Store(str(path))
    board = store.leaderboard("t", "h")
    submit(store, board, "ann", 100.0, sha="one")
    submit(store, board, "ann", 300.0, sha="one")
    store.close()
    raw = sqlite3.connect(path)  # make it a schema 2 database, as an older harness left it
    raw.execute("ALTER TABLE submissions DROP COLUMN program")
    raw.execute("DELETE FROM schema_version WHERE version >= 3")
    for table in ("users", "jobs", "workers", "contest_rules", "uploads", "rejudged",
                  "rejudgings"):  # migrations 4 to 7
        raw.execute(f"DROP TABLE {table}")
    raw.commit()
    raw.close()
    store = Store(str(path))
    assert store.version() == SCHEMA_VERSION
    entries = store.entries("t", "h")
    assert [e["program"] for e in entries] == [None, None]
    assert [(r.score_ns, r.evaluations) for r in rank(entries, "H200")] == [(200.0, 2)]


def test_changed_task_starts_a_fresh_ranking(db_url):
    store = Store(db_url)
    submit(store, store.leaderboard("t", "old"), "ann", 10.0)
    submit(store, store.leaderboard("t", "new"), "bob", 20.0)
    assert [r.user for r in rank(store.entries("t", "new"), "H200")] == ["bob"]
    assert {r.user for r in rank(store.entries("t"), "H200")} == {"ann", "bob"}


def test_marking_hacked_removes_from_ranking(db_url):
    store = Store(db_url)
    board = store.leaderboard("t", "h")
    sid = submit(store, board, "ann", 10.0)
    assert store.set_status(sid, "hacked")
    assert rank(store.entries("t", "h"), "H200") == []
    assert store.submission(sid)["status"] == "hacked"


@pytest.fixture(scope="module")
def leaderboard_doc(tmp_path_factory):
    """A real result document of a leaderboard run (two runs: public and secret)."""
    tmp = tmp_path_factory.mktemp("doc")
    run = run_cli("submit", "submissions/vectoradd/add_torch.py", "--device", "cpu",
                  "--case", "size: 64; seed: 1", "--db", str(tmp / "src.db"),
                  json_path=tmp / "doc.json")
    assert run.rc == 0, run.out
    return tmp / "doc.json"


def count(db_url, sql):
    store = Store(db_url)
    return store.query(sql)[0]["n"]


@pytest.mark.slow
def test_two_processes_write_at_once(db_url, leaderboard_doc):
    """Two runner processes record 12 results each into one database: none is lost."""
    env = dict(os.environ, HARNESS_DB=db_url)
    procs = [subprocess.Popen([sys.executable, str(ROOT / "runner.py"), "record",
                               str(leaderboard_doc), "--repeat", "12", "--user", f"u{i}"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(2)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out.decode()
    assert count(db_url, "SELECT COUNT(*) AS n FROM submissions") == 24
    assert count(db_url, "SELECT COUNT(*) AS n FROM runs") == 48


@pytest.mark.slow
def test_sigkill_while_recording_leaves_no_half_run(tmp_path, leaderboard_doc):
    """SIGKILL at random points of recording, 25 times: the file stays sound and every
    submission has both of its runs."""
    db = tmp_path / "r.db"
    Store(str(db))
    rng = random.Random(1234)
    env = dict(os.environ, HARNESS_DB=str(db))
    for _ in range(25):
        p = subprocess.Popen([sys.executable, str(ROOT / "runner.py"), "record",
                              str(leaderboard_doc), "--repeat", "200"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.4, 1.6))
        p.send_signal(signal.SIGKILL)
        p.wait()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    subs = conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
    assert subs > 0, "no kill landed after recording began"
    per_sub = conn.execute("SELECT s.id, COUNT(r.id) FROM submissions s LEFT JOIN runs r "
                           "ON r.submission_id = s.id GROUP BY s.id").fetchall()
    assert all(n == 2 for _, n in per_sub), "a submission is visible without both runs"


def test_two_runners_making_one_board_at_once_share_it(db_url):
    """A runner whose board insert races another's waits for it and uses the winner's row."""
    import threading

    first, second = Store(db_url), Store(db_url)
    got = {}
    with first.transaction():
        first.execute("INSERT INTO leaderboards (task, content_hash, secret, created_at) "
                      "VALUES (?, ?, ?, ?)", ("vectoradd", "h1", "ab" * 32, "t0"))
        racer = threading.Thread(target=lambda: got.update(board=second.leaderboard("vectoradd", "h1")))
        racer.start()
        time.sleep(0.5)  # the racer is now waiting for this uncommitted insert
    racer.join(30)
    assert got["board"].secret == bytes.fromhex("ab" * 32)
    assert first.leaderboard("vectoradd", "h1").id == got["board"].id
