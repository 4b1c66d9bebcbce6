"""Leaderboard mode end to end on the CPU: three users, a failing and a secret-failing
submission, and a slower re-submission."""

import json

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

SUBS = ROOT / "tests" / "submissions" / "leaderboard"
CASE = ["--case", "size: 64; seed: 1"]


def test_ranked_table_and_json(cli):
    def submit(name, user):
        r = cli("submit", str(SUBS / f"{name}.py"), "--task", "vectoradd", "--device", "cpu",
                "--user", user, *CASE)
        return r

    alice = submit("fast", "alice")
    assert alice.rc == 0, alice.out
    assert "rank 1 of 1" in alice.out
    bob = submit("sleep_1ms", "bob")
    carol = submit("sleep_3ms", "carol")
    assert carol.rc == 0 and "rank 3 of 3" in carol.out and "behind #2 (bob)" in carol.out
    assert bob.doc["record"]["rank"] == 2

    dave = submit("wrong", "dave")  # fails: recorded, not ranked
    assert dave.rc == 1 and "not ranked" in dave.out
    erin = submit("public_only", "erin")  # passes public seeds, fails the secret ones
    assert erin.rc == 1
    phases = {(p["name"], p["seeds"]): p for p in erin.doc["phases"]}
    assert phases[("benchmark", "public")]["cases"][0]["status"] == "passed"
    assert phases[("benchmark", "secret")]["cases"][0]["status"] == "failed"
    assert "not ranked" in erin.out

    again = submit("sleep_6ms", "alice")  # slower: alice keeps her best
    assert again.rc == 0 and "this user has a better earlier result" in again.out
    repeat = submit("fast", "alice")  # the same file again: its runs count by their median
    assert repeat.rc == 0 and "median of its 2 evaluations" in repeat.out, repeat.out
    assert repeat.doc["record"]["rank"] == 1 and repeat.doc["record"]["evaluations_of_file"] == 2

    board = run_cli("leaderboard", "vectoradd", "--json", env={"HARNESS_DB": str(cli.db)})
    assert board.rc == 0
    table = json.loads(board.out)["devices"]["CPU"]
    assert [r["user"] for r in table] == ["alice", "bob", "carol"]
    assert table[0]["submission_id"] == alice.doc["record"]["submission_id"]
    assert table[0]["submission_ids"] == [alice.doc["record"]["submission_id"],
                                          repeat.doc["record"]["submission_id"]]

    text = run_cli("leaderboard", "vectoradd", env={"HARNESS_DB": str(cli.db), "COLUMNS": "200"})
    assert text.out.index("alice") < text.out.index("bob") < text.out.index("carol")

    history = run_cli("history", "--user", "alice", env={"HARNESS_DB": str(cli.db), "COLUMNS": "200"})
    assert history.out.count("fast.py") == 2 and history.out.count("sleep_6ms.py") == 1
    shown = run_cli("show", str(erin.doc["record"]["submission_id"]), "--code",
                    env={"HARNESS_DB": str(cli.db), "COLUMNS": "200"})
    assert "secret seeds" in shown.out and "FAILED" in shown.out and "KNOWN" in shown.out
    exported = run_cli("export", "--format", "json", env={"HARNESS_DB": str(cli.db)})
    rows = json.loads(exported.out)
    assert len(rows) == 14 and {r["user_name"] for r in rows} == {"alice", "bob", "carol", "dave", "erin"}
    csv = run_cli("export", env={"HARNESS_DB": str(cli.db)})
    assert csv.out.splitlines()[0].startswith("run_id,submission_id,task")


def test_marking_hacked(cli):
    r = cli("submit", str(SUBS / "fast.py"), "--task", "vectoradd", "--device", "cpu",
            "--user", "mallory", *CASE)
    sid = r.doc["record"]["submission_id"]
    env = {"HARNESS_DB": str(cli.db)}
    assert run_cli("mark", str(sid), "--status", "hacked", env=env).rc == 0
    table = json.loads(run_cli("leaderboard", "vectoradd", "--json", env=env).out)
    assert table["devices"]["CPU"] == []


def test_show_prints_a_cases_note_and_the_runs_warnings(cli, tmp_path):
    """`show` prints under a case what the report printed under the table when the run was
    made: here a long-sample note and a warning (written into a result document, then
    recorded as CI artifacts are)."""
    r = cli("submit", str(SUBS / "fast.py"), "--task", "vectoradd", "--device", "cpu",
            "--mode", "benchmark", "--no-record", *CASE)
    assert r.rc == 0, r.out
    doc = r.doc
    doc["warnings"] = ["the SM clock read 900 MHz of 1980 as case 0 ended"]
    doc["phases"][0]["cases"][0]["integrity"]["long_samples"] = {
        "count": 1, "longest_ns": 1e6, "limit_ns": 1e5, "adds_ns": 1e5,
        "note": "1 of 10 samples took over 4x the median"}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    env = {"HARNESS_DB": str(cli.db), "COLUMNS": "300"}
    recorded = run_cli("record", str(path), "--user", "frank", env=env)
    assert recorded.rc == 0, recorded.out
    sid = int(recorded.out.split("as submission")[1].split()[0])
    shown = run_cli("show", str(sid), env=env)
    assert "note: 1 of 10 samples took over 4x the median" in shown.out, shown.out
    assert "warning: the SM clock read 900 MHz" in shown.out


def test_reading_commands_refuse_a_missing_database(tmp_path):
    """leaderboard, history, show, export and mark on a database that does not exist: a
    message and exit 2, and no empty file left behind (a typo in --db made one before);
    record makes the database it records into."""
    missing = tmp_path / "typo.db"
    for args in (["leaderboard", "vectoradd"], ["history"], ["show", "1"],
                 ["export", "--format", "json"], ["mark", "1", "--status", "hacked"]):
        r = run_cli(*args, "--db", str(missing))
        assert r.rc == 2 and "no results database at" in r.out, (args, r.out)
        assert not missing.exists(), args
