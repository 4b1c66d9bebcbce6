"""`runner.py rejudge` as an organiser runs it: a task whose reference is fixed (a new
version) has its ranked submissions judged again; one that passed now fails and one that
failed now passes, the table shows both, nothing ranks until `--apply`, which moves the
ranking (the originals superseded, kept in the history); `--cancel` leaves it as it was;
a screen rule the originals were never read by marks one in the rejudging."""

from __future__ import annotations

import json

import pytest
from conftest import public_format_folder, run_cli

from harness.storage import rejudgings
from harness.storage.store import Store, StoreError

REFERENCE = """\
import torch

def generate_input(size, seed):
    gen = torch.Generator()
    gen.manual_seed(seed)
    return torch.randn(size, generator=gen)

def ref_kernel(data):
    return data * 2{shift}

def check_implementation(data, output):
    ok = torch.allclose(output, ref_kernel(data), atol={atol}, rtol=0)
    return ok, "" if ok else "values differ"
"""
OLD = {"shift": " + 0.5", "atol": 0.6}  # the bug: a shifted reference, a loose tolerance
FIXED = {"shift": "", "atol": 0.25}
# sam: right (and counts its calls: a screen rule the originals were not read by);
# lee: off by one, passed under the bug; fay: off by -0.2, failed under it.
SUBMISSIONS = {
    "sam": "calls = 0\ndef custom_kernel(data):\n    global calls\n    calls += 1\n"
           "    if calls < 0:\n        return data\n    return data * 2\n",
    "lee": "def custom_kernel(data):\n    return data * 2 + 1\n",
    "fay": "def custom_kernel(data):\n    return data * 2 - 0.2\n",
}


def ranked(db: str, task: str, *extra: str) -> dict[str, list[str]]:
    """Who ranks, per device kind, by name (their order is the CPU's timing's)."""
    r = run_cli("leaderboard", task, "--db", db, "--json", *extra)
    assert r.rc == 0, r.out
    return {kind: sorted(e["user"] for e in rows)
            for kind, rows in json.loads(r.out)["devices"].items()}


def test_apply_and_cancel_settle_a_rejudging_once(db_url):
    """The storage's side, on SQLite and PostgreSQL: applying gives each new result its
    mark and supersedes its original (a hacked one stays hacked); cancelling deletes the
    new results; neither twice."""
    from test_store import submit

    from harness.results.ranking import rank

    store = Store(db_url)
    old, new = store.leaderboard("t", "v1"), store.leaderboard("t", "v2")
    originals = [submit(store, old, u, 100.0 + i) for i, u in enumerate(("ann", "bob"))]
    store.set_status(originals[1], "hacked")
    rid = rejudgings.open_rejudging(store, "t", "v2", "org", originals)
    fresh = [submit(store, new, u, 90.0, status="rejudging") for u in ("ann", "bob")]
    for original, sid, mark in zip(originals, fresh, ("ok", "suspicious")):
        rejudgings.set_outcome(store, rid, original, sid, mark)
    assert rank(store.entries("t", "v2"), "H200") == []  # kept, ranked nowhere yet
    rejudgings.apply(store, rid)
    status = {i: store.submission_status(i) for i in originals + fresh}
    assert status == {originals[0]: "superseded", originals[1]: "hacked", fresh[0]: "ok",
                      fresh[1]: "suspicious"}
    with pytest.raises(StoreError, match="applied already"):
        rejudgings.cancel(store, rid)
    other = rejudgings.open_rejudging(store, "t", "v2", "org", [fresh[0]])
    dropped = submit(store, new, "ann", 80.0, status="rejudging")
    rejudgings.set_outcome(store, other, fresh[0], dropped, "ok")
    rejudgings.cancel(store, other)
    assert store.submission(dropped) is None and store.submission_status(fresh[0]) == "ok"
    assert [r["state"] for r in rejudgings.rejudgings_of(store, "t")] == ["cancelled",
                                                                          "applied"]
    store.close()


@pytest.fixture
def contest(tmp_path):
    """The task as first published, with the three submissions ranked or failed on it,
    then its reference fixed."""
    task = public_format_folder(tmp_path / "fixme", REFERENCE.format(**OLD),
                                ['{"size": 64, "seed": 1}'], ['{"size": 64, "seed": 2}'])
    db = str(tmp_path / "contest.db")
    ids = {}
    for user, code in SUBMISSIONS.items():
        path = tmp_path / f"{user}.py"
        path.write_text(code)
        r = run_cli("submit", str(path), "--task", str(task), "--mode", "leaderboard",
                    "--device", "cpu", "--db", db, "--user", user, json_path=tmp_path / "r.json")
        ids[user] = r.doc["record"]["submission_id"]
    store = Store(db)  # recorded before the screen knew counts-calls
    store.execute("UPDATE submissions SET screen = '[]', status = 'ok' WHERE id = ?",
                  (ids["sam"],))
    store.close()
    assert ranked(db, "fixme") == {"CPU": ["lee", "sam"]}
    (task / "reference.py").write_text(REFERENCE.format(**FIXED))
    return task, db, ids


@pytest.mark.slow  # each step runs runner.py end to end
def test_a_fixed_reference_rejudged_applied_and_cancelled(contest):
    task, db, ids = contest
    r = run_cli("rejudge", str(task), "--all", "--db", db, "--device", "cpu", "--jobs", "2")
    assert r.rc == 0, r.out
    rows = {line.split("│")[2].strip(): line for line in r.out.splitlines()
            if line.count("│") > 9 and line.split("│")[2].strip() in SUBMISSIONS}
    assert "passed" in rows["lee"] and "failed" in rows["lee"].split("passed", 1)[1]
    assert "test case 0: failed" in rows["lee"] and "wrong output" in rows["lee"]  # why
    assert "failed" in rows["fay"] and "passed" in rows["fay"].split("failed", 1)[1]
    assert "counts-calls" in rows["sam"]
    assert "Ranking on CPU: before | after" in r.out
    # nothing ranks on the fixed version until applied; the old ranking stands
    assert not any(ranked(db, "fixme").values())
    assert ranked(db, "fixme", "--all-versions") == {"CPU": ["lee", "sam"]}

    again = run_cli("rejudge", str(task), "--id", str(ids["fay"]), "--db", db, "--device", "cpu")
    assert again.rc == 0, again.out
    assert run_cli("rejudge", "fixme", "--cancel", "2", "--db", db).rc == 0
    store = Store(db)
    assert store.query("SELECT COUNT(*) AS n FROM submissions")[0]["n"] == 6  # 3 + 3 of #1
    store.close()

    applied = run_cli("rejudge", "fixme", "--apply", "1", "--db", db)
    assert applied.rc == 0 and "3 new results count now" in applied.out, applied.out
    assert ranked(db, "fixme") == {"CPU": ["fay", "sam"]}
    assert ranked(db, "fixme", "--all-versions") == {"CPU": ["fay", "sam"]}  # originals out
    store = Store(db)
    statuses = {r["user_name"]: r["status"] for r in store.query(
        "SELECT user_name, status FROM submissions WHERE id IN (?, ?, ?)", tuple(ids.values()))}
    assert statuses == {"sam": "superseded", "lee": "superseded", "fay": "superseded"}
    news = store.query("SELECT user_name, status FROM submissions WHERE id > ? ORDER BY id",
                       (max(ids.values()),))
    assert {r["user_name"]: r["status"] for r in news} == {
        "sam": "suspicious", "lee": "ok", "fay": "ok"}
    store.close()
    twice = run_cli("rejudge", "fixme", "--apply", "1", "--db", db)
    assert twice.rc == 2 and "rejudging 1 is applied already" in twice.out
    listing = run_cli("rejudge", "fixme", "--list", "--db", db)
    assert "applied" in listing.out and "cancelled" in listing.out


def test_a_missing_database_is_named_and_not_made(tmp_path):
    typo = tmp_path / "typo.db"
    for args in (["vectoradd", "--all"], ["vectoradd", "--list"], ["vectoradd", "--apply", "1"]):
        r = run_cli("rejudge", *args, "--db", str(typo))
        assert r.rc == 2 and f"no results database at {typo}" in r.out, r.out
    assert not typo.exists()
